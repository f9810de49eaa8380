// Upload throughput and latency of the class server: 200 concurrent clients (autocannon),
// all connecting at once, POST a real hw-lab result on loopback, each with its own
// Idempotency-Key as the page and hw-lab/run send, against SQLite (WAL, synchronous=FULL)
// and PostgreSQL (a throwaway cluster with default durability: fsync on, synchronous_commit
// on). A fixed number of uploads is sent and every one is waited for, so the uploads
// acknowledged (2xx) must equal the rows stored; the last line says whether p99 < 500 ms
// with no errors held.
// Usage: npm run bench:server  [BENCH_REQUESTS=20000 BENCH_CONNECTIONS=200 BENCH_ONLY=sqlite|postgres]
import { randomBytes } from 'node:crypto';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = fileURLToPath(new URL('../..', import.meta.url));
const amount = Number(process.env.BENCH_REQUESTS ?? 20000);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 200);
const body = readFileSync(join(root, 'tests', 'server', 'fixtures', 'result-quick.json'), 'utf8');

const freePort = () => new Promise((res, rej) => { const s = createServer(); s.once('error', rej); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });

function pgBin(name) {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) { const v = readdirSync(base).sort((a, b) => Number(b) - Number(a))[0]; if (v && existsSync(join(base, v, 'bin', name))) return join(base, v, 'bin', name); }
  const w = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (w.status === 0) return w.stdout.trim();
  return null;
}

async function startPostgres() {
  const initdb = pgBin('initdb'); const pgctl = pgBin('pg_ctl');
  if (!initdb || !pgctl) return null;
  const dir = mkdtempSync(join(tmpdir(), 'vmemlab-bench-pg-')); chmodSync(dir, 0o777);
  const asRoot = process.getuid?.() === 0;
  const run = (cmd, args) => execFileSync(asRoot ? 'runuser' : cmd, asRoot ? ['-u', 'postgres', '--', cmd, ...args] : args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  const data = join(dir, 'data');
  run(initdb, ['-D', data, '-A', 'trust', '-U', 'vmemlab', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  run(pgctl, ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100`, 'start']);
  return { url: `postgres://vmemlab@127.0.0.1:${port}/postgres`, stop: () => { try { run(pgctl, ['-D', data, '-m', 'fast', '-w', 'stop']); } finally { rmSync(dir, { recursive: true, force: true }); } } };
}

async function startServer(env) {
  const port = await freePort();
  const proc = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], { env: { ...process.env, PORT: String(port), VMEMLAB_RATE_MAX: '0', VMEMLAB_UPLOAD_RATE: '0', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((res, rej) => { let out = ''; proc.stdout.on('data', (d) => { out += d; if (out.includes('class server at')) res(); }); proc.once('exit', (c) => rej(new Error(`server exited ${c}`))); });
  return { url: `http://127.0.0.1:${port}`, stop: () => new Promise((r) => { proc.once('exit', r); proc.kill('SIGTERM'); }) };
}

async function bench(name, env) {
  const srv = await startServer(env);
  try {
    const c = await (await fetch(`${srv.url}/api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"bench"}' })).json();
    const t0 = performance.now();
    const r = await autocannon({
      url: `${srv.url}/api/results`, method: 'POST', connections, amount, body,
      headers: { 'content-type': 'application/json', 'x-vmemlab-class': c.code },
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': randomBytes(12).toString('base64url') } }) }],
    });
    const s = (performance.now() - t0) / 1000;
    const stored = (await (await fetch(`${srv.url}/api/classes/${c.code}`)).json()).uploads;
    return { storage: name, 'uploads/s': Math.round(r['2xx'] / s), 'p50 ms': r.latency.p50, 'p99 ms': r.latency.p99, 'max ms': r.latency.max, '2xx': r['2xx'], 'non-2xx': r.non2xx, errors: r.errors + r.timeouts, stored };
  } finally { await srv.stop(); }
}

const rows = [];
const only = process.env.BENCH_ONLY;
console.log(`class server upload benchmark: ${connections} concurrent clients, ${amount} uploads each, ${body.length}-byte result, loopback`);
if (!only || only === 'sqlite') {
  const dir = mkdtempSync(join(tmpdir(), 'vmemlab-bench-'));
  try { rows.push(await bench('SQLite (WAL, synchronous=FULL)', { VMEMLAB_DATA_DIR: dir, DATABASE_URL: '' })); } finally { rmSync(dir, { recursive: true, force: true }); }
}
if (!only || only === 'postgres') {
  const pg = await startPostgres();
  if (!pg) console.log('PostgreSQL: skipped (initdb/pg_ctl not installed: apt-get install postgresql)');
  else { try { rows.push(await bench('PostgreSQL 15 (fsync on)', { DATABASE_URL: pg.url })); } finally { pg.stop(); } }
}
console.table(rows);
for (const r of rows) {
  const ok = r['p99 ms'] < 500 && r.errors === 0 && r['non-2xx'] === 0 && r.stored === r['2xx'];
  console.log(`${r.storage}: p99 ${r['p99 ms']} ms ${r['p99 ms'] < 500 ? '<' : '>='} 500 ms; ${r.errors} errors, ${r['non-2xx']} refused; ${r.stored} stored of ${r['2xx']} acknowledged: ${ok ? 'met' : 'NOT met'}`);
}
