// A lecture hall, measured: 300 simulated students (HTTP clients over loopback, each from an
// address of its own in 127.0.0.0/8) join one class within 30 s and each answers 10
// exercises over 2 minutes on their own seeds (seedFor, as the page does; every kind across
// the class, which-wins included), one record a request as the page sends a check, with the
// teacher's event stream open throughout, while 4 clients attack: 8 streams without a
// cursor reopened every 2 s on a class of 25,000 records; one student sending 8 requests a
// second of 50 records; one sending 50 never-graded which-wins variants, 4 requests at once,
// each abandoned after 1 s; one joining the class under new names as fast as it may. A
// fifth client asks /api/health and the class every 250 ms.
//
// Against SQLite (one instance) and PostgreSQL with two instances behind nginx over TLS
// (deploy/'s files, as tests/server/proxy.test.ts runs them). Prints records sent,
// acknowledged and stored; p50/p99/max from a record sent to acknowledged (retries after
// 429/503 included, as the page retries) and from acknowledged to seen on the teacher's
// stream; the other client's latency; server CPU seconds and peak RSS per instance; and
// whether the targets held: every record stored, acknowledged p99 < 1 s, seen p99 < 2 s,
// the other client's max < 1 s.
// Usage: npm run bench:class  [BENCH_STUDENTS=300 BENCH_EXERCISES=10 BENCH_SECONDS=120 BENCH_ONLY=sqlite|postgres]
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { createServer } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const STUDENTS = Number(process.env.BENCH_STUDENTS ?? 300);
const EXERCISES = Number(process.env.BENCH_EXERCISES ?? 10);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 120);
const JOIN_S = 30;
/** Which attackers run (1 streams, 2 flood, 3 which-wins, 4 joins): all unless BENCH_ATTACKS lists some ('none': none). */
const ATTACKS = new Set((process.env.BENCH_ATTACKS ?? '1,2,3,4').split(',').map(Number));
const { SPECS, seedFor } = await import(new URL('../server/gen/grade.mjs', import.meta.url).href);
const { sql } = await import('kysely');
const { openStore } = await import(new URL('../server/db.mjs', import.meta.url).href);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const freePort = () => new Promise((res, rej) => { const s = createServer(); s.once('error', rej); s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => res(p)); }); });
const newId = () => randomBytes(16).toString('base64url').slice(0, 22);
const pct = (xs, p) => { if (!xs.length) return NaN; const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const ms = (x) => (Number.isNaN(x) ? '-' : `${Math.round(x)}`);

function bin(name) {
  const w = spawnSync('sh', ['-c', `PATH="$PATH:/usr/sbin:/sbin" command -v ${name}`], { encoding: 'utf8' });
  return w.status === 0 ? w.stdout.trim() : null;
}
function pgBin(name) {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) { const v = readdirSync(base).sort((a, b) => Number(b) - Number(a))[0]; if (v && existsSync(join(base, v, 'bin', name))) return join(base, v, 'bin', name); }
  return bin(name);
}

// ---- the servers ----
async function startPostgres(dir) {
  const initdb = pgBin('initdb'); const pgctl = pgBin('pg_ctl');
  if (!initdb || !pgctl) return null;
  chmodSync(dir, 0o777);
  const asRoot = process.getuid?.() === 0;
  const run = (cmd, args) => execFileSync(asRoot ? 'runuser' : cmd, asRoot ? ['-u', 'postgres', '--', cmd, ...args] : args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  const data = join(dir, 'pgdata');
  run(initdb, ['-D', data, '-A', 'trust', '-U', 'vmemlab', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  // the database's own durability as a course runs it (fsync on, synchronous_commit on)
  // BENCH_PG_STATS=1: pg_stat_statements counts each statement's time (printed at the end)
  const stats = process.env.BENCH_PG_STATS === '1' ? ' -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all' : '';
  run(pgctl, ['-D', data, '-l', join(dir, 'pg.log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100${stats}`, 'start']);
  const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return { url: `postgres://vmemlab@127.0.0.1:${port}/postgres`, cpu: () => treeCpuSeconds(pid), stop: () => { try { run(pgctl, ['-D', data, '-m', 'fast', '-w', 'stop']); } catch { /* gone */ } } };
}

async function startInstance(env) {
  const port = await freePort();
  const prof = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`] : [];
  // VMEMLAB_SERVER_TIMING: each progress answer says where its time went (timing.mjs)
  const proc = spawn(process.execPath, [...prof, join(root, 'web', 'server', 'main.mjs')], { env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), VMEMLAB_SERVER_TIMING: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stderr.on('data', (d) => { out += d; });
  await new Promise((res, rej) => { proc.stdout.on('data', (d) => { out += d; if (out.includes('class server at')) res(); }); proc.once('exit', (c) => rej(new Error(`server exited ${c}: ${out}`))); });
  proc.removeAllListeners('exit');
  const cpu0 = cpuSeconds(proc.pid);
  let stopped = null;
  return {
    port, pid: proc.pid, log: () => out,
    usage: () => ({ cpu: cpuSeconds(proc.pid) - cpu0, rss: Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))[1]) / 1024 }),
    stop: () => { stopped ??= new Promise((r) => { proc.once('exit', r); proc.kill('SIGTERM'); }); return stopped; },
    /** What the process printed at its close (VMEMLAB_SERVER_TIMING): its loop delay, its pool waits. */
    timing: () => { const line = /vmemlab timing (\{.*\})/.exec(out); return line ? JSON.parse(line[1]) : null; },
  };
}
/** user + system CPU seconds of a process (its threads included) so far. */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}
/** CPU seconds of a process and all its children, live (utime, stime) and reaped (cutime,
 * cstime): PostgreSQL's backends, nginx's worker. */
function treeCpuSeconds(pid) {
  const stats = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try { const st = readFileSync(`/proc/${d}/stat`, 'utf8'); stats.set(Number(d), st.slice(st.lastIndexOf(')') + 2).split(' ')); } catch { /* gone */ }
  }
  const total = (p, withReaped) => {
    const f = stats.get(p); if (!f) return 0;
    let t = Number(f[11]) + Number(f[12]) + (withReaped ? Number(f[13]) + Number(f[14]) : 0);
    for (const [c, g] of stats) if (Number(g[1]) === p) t += total(c, true);
    return t;
  };
  return total(pid, true) / 100;
}

/** nginx with deploy/'s site (TLS from deploy/local-cert.sh) in front of two instances. */
async function startNginx(dir, ports) {
  const nginx = bin('nginx'); if (!nginx || !bin('openssl')) return null;
  execFileSync(join(root, 'deploy', 'local-cert.sh'), ['127.0.0.1', join(dir, 'cert')], { stdio: 'pipe' });
  const ng = join(dir, 'nginx'); mkdirSync(ng); chmodSync(dir, 0o755); chmodSync(ng, 0o777);
  const [port, plain] = [await freePort(), await freePort()];
  let site = readFileSync(join(root, 'deploy', 'nginx-vmemlab.conf'), 'utf8');
  for (const [from, to] of [['    listen [::]:80;\n', ''], ['    listen [::]:443 ssl http2;\n', ''], ['listen 80;', `listen 127.0.0.1:${plain};`],
    ['listen 443 ssl http2;', `listen 127.0.0.1:${port} ssl http2;`], ['/etc/ssl/vmemlab/fullchain.pem', join(dir, 'cert', 'fullchain.pem')],
    ['/etc/ssl/vmemlab/privkey.pem', join(dir, 'cert', 'privkey.pem')], ['127.0.0.1:8081', `127.0.0.1:${ports[0]}`], ['127.0.0.1:8082', `127.0.0.1:${ports[1]}`]]) {
    if (!site.includes(from)) throw new Error(`deploy/nginx-vmemlab.conf no longer holds ${JSON.stringify(from)}`);
    site = site.split(from).join(to);
  }
  writeFileSync(join(ng, 'site.conf'), site);
  writeFileSync(join(ng, 'nginx.conf'), ['daemon off;', 'worker_processes 1;', 'worker_rlimit_nofile 8192;', `pid ${ng}/nginx.pid;`, `error_log ${ng}/error.log warn;`,
    'events { worker_connections 4096; }',
    // each request's time in nginx and its upstream's (where the proxy's share goes)
    `http { log_format timing '$remote_addr $request_method $uri $status $request_time $upstream_connect_time $upstream_header_time $upstream_response_time'; access_log ${ng}/access.log timing; client_body_temp_path ${ng}/body; proxy_temp_path ${ng}/proxy; fastcgi_temp_path ${ng}/fastcgi; uwsgi_temp_path ${ng}/uwsgi; scgi_temp_path ${ng}/scgi; include ${ng}/site.conf; }`, ''].join('\n'));
  const proc = spawn(nginx, ['-e', join(ng, 'error.log'), '-p', ng, '-c', join(ng, 'nginx.conf')], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((r) => { const s = createServer(); s.once('error', () => r(true)); s.listen(port, '127.0.0.1', () => s.close(() => r(false))); });
    if (up) break;
    await sleep(50);
  }
  return { port, ca: readFileSync(join(dir, 'cert', 'fullchain.pem'), 'utf8'), accessLog: join(ng, 'access.log'), cpu: () => treeCpuSeconds(proc.pid), stop: () => new Promise((r) => { proc.once('exit', r); proc.kill('SIGTERM'); }) };
}

// ---- the clients ----
/** A client from its own loopback address, keeping its connections alive. */
function client(target, from) {
  const mod = target.tls ? https : http;
  const agent = new mod.Agent({ keepAlive: true, maxSockets: 4, localAddress: from, ...(target.tls ? { ca: target.ca } : {}) });
  const request = (method, path, { body, headers = {}, timeoutMs = 30_000, signal } = {}) => new Promise((resolve) => {
    const t0 = performance.now();
    const req = mod.request({ host: '127.0.0.1', port: target.port, method, path, agent, signal, headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...headers }, timeout: timeoutMs }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => { let json = null; try { json = JSON.parse(text); } catch { /* not JSON */ } resolve({ status: res.statusCode, body: json, headers: res.headers, ms: performance.now() - t0 }); });
      res.on('error', () => resolve({ status: 0, body: null, headers: {}, ms: performance.now() - t0 }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: null, headers: {}, ms: performance.now() - t0 }));
    req.end(body ? JSON.stringify(body) : undefined);
  });
  /** An event stream: onEvent(event, data, id) for each; returns close(). */
  const stream = (path, token, onEvent) => {
    const ac = new AbortController();
    const req = mod.request({ host: '127.0.0.1', port: target.port, path, localAddress: from, signal: ac.signal, ...(target.tls ? { ca: target.ca } : {}),
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (c) => {
        buf += c;
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
          let event = 'message'; let data = ''; let id;
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7); else if (line.startsWith('data: ')) data = line.slice(6); else if (line.startsWith('id: ')) id = line.slice(4);
          }
          if (data && onEvent) onEvent(event, data, id);
        }
      });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.end();
    return () => ac.abort();
  };
  return { request, stream, close: () => agent.destroy() };
}
/** The other client (a thread's code): GETs each path in turn every 250 ms until told to
 * stop, then posts back each request's milliseconds. */
const WATCHER = `
const { parentPort, workerData: { port, tls, ca, from, paths } } = require('node:worker_threads');
const mod = require(tls ? 'node:https' : 'node:http');
const agent = new mod.Agent({ keepAlive: true, maxSockets: 1, localAddress: from, ...(tls ? { ca } : {}) });
let running = true;
parentPort.once('message', () => { running = false; });
const get = (path) => new Promise((resolve) => {
  const t0 = performance.now(); const done = () => resolve(performance.now() - t0);
  const req = mod.request({ host: '127.0.0.1', port, path, agent, timeout: 10000 }, (res) => { res.resume(); res.on('end', done); res.on('error', done); });
  req.on('timeout', () => req.destroy(new Error('timeout'))); req.on('error', done); req.end();
});
(async () => {
  const times = [];
  while (running) { for (const p of paths) times.push(await get(p)); await new Promise((r) => setTimeout(r, 250)); }
  agent.destroy(); parentPort.postMessage(times);
})();
`;
const addr = (group, i) => `127.${group}.${Math.floor(i / 250)}.${(i % 250) + 1}`;

/** The exercises every student may get, kinds in turn, so that 10 a student cover every kind
 * across the class (which-wins included). */
function exercisePositions() {
  const byKind = new Map();
  for (const [lesson, specs] of Object.entries(SPECS)) specs.forEach((s, exercise) => { if (!byKind.has(s.kind)) byKind.set(s.kind, []); byKind.get(s.kind).push({ lesson, exercise, kind: s.kind }); });
  const out = [];
  for (let round = 0; out.length < 200; round++) for (const list of byKind.values()) out.push(list[round % list.length]);
  return out;
}
const ANSWERS = { 'which-wins': 'ept', 'compute-hpa': '0x1000', 'predict-bits': '0x0', 'predict-exit': 'exit', 'agile-walk': '12', 'vmfunc-switch': 'noExit' };

/** others: [{ name, cpu() }], the processes beside the instances (the database, the proxy) whose CPU is counted too. */
async function run(name, target, instances, dbOpts, others = []) {
  const admin = client(target, '127.0.0.1');
  const cls = (await admin.request('POST', '/api/classes', { body: { name: 'lecture hall' } })).body;
  const big = (await admin.request('POST', '/api/classes', { body: { name: 'a term' } })).body;
  // A class of a term: 25,000 records, written into the tables directly.
  const store = await openStore(dbOpts);
  if (process.env.BENCH_PG_STATS === '1' && store.kind === 'postgres') { await sql`create extension if not exists pg_stat_statements`.execute(store.db); await sql`select pg_stat_statements_reset()`.execute(store.db); }
  const ids = Array.from({ length: 200 }, newId); const t0 = Date.now() - 86_400_000;
  await store.db.insertInto('students').values(ids.map((id, i) => ({ id, class_code: big.code, name: `s${i}`, receipt_hash: 'x'.repeat(64), joined_at: new Date(t0 + i).toISOString() }))).execute();
  for (let i = 0; i < 25_000; i += 500) {
    await store.db.insertInto('progress').values(Array.from({ length: 500 }, (_, k) => ({ id: newId(), class_code: big.code, student_id: ids[(i + k) % 200], type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs', seed: i + k, answer: '24', verdict: 'wrong', tries: 1, hint: 0, shown: 0, at: '2026-04-01T09:00:00.000Z', received_at: new Date(t0 + 1000 + i + k).toISOString() }))).execute();
  }
  // Filled through the API (25,000 records take an address some 21 minutes within the write
  // budget) the tables would have been analyzed meanwhile (autovacuum); written in a second
  // they are not, and PostgreSQL would plan the class's pages for the 20 rows it believes
  // it has (a bitmap scan and a sort of all 25,000, 20-50 ms each, instead of 0.1 ms).
  if (store.kind === 'postgres' && process.env.BENCH_NO_ANALYZE !== '1') await sql`analyze`.execute(store.db);

  const positions = exercisePositions();
  const acked = new Map(); // record id -> when acknowledged
  const seen = new Map(); // record id -> when seen on the teacher's stream
  const m = { sent: 0, acked: 0, stored: 0, retries: 0, refusedForGood: 0, ackMs: [], seenMs: [], otherMs: [], joinFailed: 0, statuses: {}, phases: {} };
  // this process's own event loop: a client late to read its answers adds to every figure
  const clientLoop = monitorEventLoopDelay({ resolution: 10 }); clientLoop.enable();
  // the teacher's stream, open throughout
  const teacher = client(target, addr(3, 1));
  const closeTeacher = teacher.stream(`/api/classes/${cls.code}/progress/events`, cls.teacher_token, (event, data) => {
    if (event !== 'progress') return;
    const id = JSON.parse(data).id; const t = performance.now();
    if (!seen.has(id)) seen.set(id, t);
  });
  let running = true;
  // the other client, on a thread of its own: its figures are the servers', not this
  // process's event loop's (busy with 300 students' TLS, it answered up to 1.2 s late)
  const watcher = new Worker(WATCHER, { eval: true, workerData: { port: target.port, tls: target.tls, ca: target.ca, from: addr(3, 2), paths: ['/api/health', `/api/classes/${cls.code}`] } });
  const watching = new Promise((resolve) => { watcher.once('message', (t) => { m.otherMs.push(...t); resolve(); }); watcher.once('error', (e) => { console.error(`the other client failed: ${e.message}`); resolve(); }); });

  // the attackers
  const attacks = [];
  const a1 = client(target, addr(4, 1));
  if (ATTACKS.has(1)) attacks.push((async () => {
    while (running) {
      const closes = Array.from({ length: 8 }, () => a1.stream(`/api/classes/${big.code}/progress/events`, big.teacher_token, null));
      await sleep(2000);
      for (const c of closes) c();
    }
  })());
  const a2 = client(target, addr(4, 2));
  if (ATTACKS.has(2)) attacks.push((async () => {
    const me = (await a2.request('POST', `/api/classes/${cls.code}/students`, { body: { name: 'flood' } })).body;
    for (let i = 0; running; i++) {
      void a2.request('POST', `/api/classes/${cls.code}/progress`, { body: { records: Array.from({ length: 50 }, () => ({ id: newId(), type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs', seed: i, answer: '1', tries: 1, hint: false, shown: false, at: new Date().toISOString() })) }, headers: { authorization: `Bearer ${me?.receipt}` } });
      await sleep(125);
    }
  })());
  const a3 = client(target, addr(4, 3));
  const ww = positions.find((p) => p.kind === 'which-wins');
  if (ATTACKS.has(3)) attacks.push((async () => {
    const me = (await a3.request('POST', `/api/classes/${cls.code}/students`, { body: { name: 'heavy' } })).body;
    let seed = 900_000;
    while (running) {
      await Promise.all(Array.from({ length: 4 }, () => {
        const ac = new AbortController(); setTimeout(() => ac.abort(), 1000);
        return a3.request('POST', `/api/classes/${cls.code}/progress`, { signal: ac.signal, body: { records: Array.from({ length: 50 }, () => ({ id: newId(), type: 'attempt', lesson: ww.lesson, exercise: ww.exercise, kind: 'which-wins', seed: seed++, answer: 'ept', tries: 1, hint: false, shown: false, at: new Date().toISOString() })) }, headers: { authorization: `Bearer ${me?.receipt}` } });
      }));
    }
  })());
  const a4 = client(target, addr(4, 4));
  if (ATTACKS.has(4)) attacks.push((async () => { for (let i = 0; running; i++) { const r = await a4.request('POST', `/api/classes/${cls.code}/students`, { body: { name: `intruder ${i}` } }); if (r.status === 429) await sleep(1000); } })());

  // the students
  const started = performance.now();
  const cpu0 = { others: others.map((o) => o.cpu()), client: process.cpuUsage(), load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') };
  const students = Array.from({ length: STUDENTS }, (_, i) => (async () => {
    const c = client(target, addr(1, i));
    const name = `student ${i + 1}`;
    await sleep(Math.random() * JOIN_S * 1000);
    let me = null;
    for (let tries = 0; !me && tries < 20; tries++) {
      const r = await c.request('POST', `/api/classes/${cls.code}/students`, { body: { name } });
      if (r.status === 201) me = r.body; else await sleep(1000 * Number(r.headers['retry-after'] ?? 1));
    }
    if (!me) { m.joinFailed++; c.close(); return; }
    const mine = Array.from({ length: EXERCISES }, (_, k) => positions[(i + k * 7) % positions.length]);
    const joinedAt = performance.now();
    const end = started + (JOIN_S + SECONDS) * 1000;
    for (let k = 0; k < mine.length; k++) {
      const due = joinedAt + ((end - joinedAt) * (k + Math.random() * 0.8)) / mine.length;
      await sleep(Math.max(0, due - performance.now()));
      const p = mine[k];
      const rec = { id: newId(), type: 'attempt', lesson: p.lesson, exercise: p.exercise, kind: p.kind, seed: seedFor(cls.code, name, p.lesson, p.exercise), answer: ANSWERS[p.kind] ?? '24', tries: 1, hint: false, shown: false, at: new Date().toISOString() };
      const t = performance.now();
      m.sent++;
      for (let attempt = 0; ; attempt++) {
        const r = await c.request('POST', `/api/classes/${cls.code}/progress`, { body: { records: [rec] }, headers: { authorization: `Bearer ${me.receipt}` } });
        m.statuses[r.status] = (m.statuses[r.status] ?? 0) + 1;
        if (r.status === 200) {
          // Server-Timing: the server's phases of this request; net: the rest (proxy, TLS, both event loops)
          const phases = Object.fromEntries(String(r.headers['server-timing'] ?? '').split(',').map((x) => /^\s*(\w+);dur=([\d.]+)/.exec(x)).filter(Boolean).map((x) => [x[1], Number(x[2])]));
          if ('app' in phases) phases.net = r.ms - phases.app;
          for (const [k, v] of Object.entries(phases)) (m.phases[k] ??= []).push(v);
          m.acked++; m.stored += r.body.stored; m.ackMs.push(performance.now() - t); acked.set(rec.id, performance.now()); break; }
        if (attempt >= 10 || (r.status >= 400 && r.status < 500 && r.status !== 429 && r.status !== 408)) { m.refusedForGood++; break; }
        m.retries++;
        await sleep(1000 * Number(r.headers['retry-after'] ?? 1) * (0.5 + Math.random() / 2));
      }
    }
    c.close();
  })());
  await Promise.all(students);
  await sleep(3000); // the stream's last records
  running = false;
  watcher.postMessage('stop');
  const clientCpu = process.cpuUsage(cpu0.client);
  const cpu = { ...Object.fromEntries(others.map((o, i) => [o.name, o.cpu() - cpu0.others[i]])), 'the clients': (clientCpu.user + clientCpu.system) / 1e6 };
  const load = { before: cpu0.load, after: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '), seconds: (performance.now() - started) / 1000 };
  await Promise.all([watching, ...attacks]);
  closeTeacher();
  clientLoop.disable();
  m.clientLoop = { p50: clientLoop.percentile(50) / 1e6, p99: clientLoop.percentile(99) / 1e6, max: clientLoop.max / 1e6 };
  for (const [id, t] of acked) if (seen.has(id)) m.seenMs.push(Math.max(0, seen.get(id) - t));
  const missing = [...acked.keys()].filter((id) => !seen.has(id)).length;
  if (process.env.BENCH_PG_STATS === '1' && store.kind === 'postgres') {
    const { rows } = await sql`select calls, round(total_exec_time) as ms, round(mean_exec_time::numeric, 2) as mean, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) as q
      from pg_stat_statements order by total_exec_time desc limit 15`.execute(store.db);
    console.log('PostgreSQL statements by total time (calls, ms, mean ms, rows, statement):');
    for (const x of rows) console.log(`  ${x.calls}\t${x.ms}\t${x.mean}\t${x.rows}\t${x.q}`);
  }
  const inDb = Number((await store.db.selectFrom('progress').select((eb) => eb.fn.countAll().as('n')).where('class_code', '=', cls.code)
    .where('student_id', 'in', store.db.selectFrom('students').select('id').where('class_code', '=', cls.code).where('name', 'like', 'student %')).executeTakeFirst()).n);
  await store.close();
  for (const c of [admin, teacher, a1, a2, a3, a4]) c.close();
  const usage = instances.map((x) => x.usage());
  return { name, m, missing, inDb, usage, cpu, load };
}

/** nginx's access log (the bench's format): the students' progress requests answered 200, in
 * nginx from first byte to last, their upstream's answer, and nginx's own share. */
function nginxTimes(file) {
  if (!existsSync(file)) return null;
  const total = []; const upstream = []; const own = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f.length < 8 || !f[0].startsWith('127.1.') || f[1] !== 'POST' || !f[2].endsWith('/progress') || f[3] !== '200') continue;
    const t = 1000 * Number(f[4]); const u = 1000 * Number(f[7]);
    if (!Number.isFinite(t) || !Number.isFinite(u)) continue;
    total.push(t); upstream.push(u); own.push(t - u);
  }
  const fmt = (xs) => `${ms(pct(xs, 0.5))}/${ms(pct(xs, 0.99))}/${ms(Math.max(...xs))}`;
  return total.length ? { n: total.length, total: fmt(total), upstream: fmt(upstream), own: fmt(own) } : null;
}

function report(r) {
  const { m } = r;
  const ok = {
    stored: r.inDb === m.sent && m.refusedForGood === 0 && m.joinFailed === 0,
    ack: pct(m.ackMs, 0.99) < 1000, seen: pct(m.seenMs, 0.99) < 2000 && r.missing === 0, other: Math.max(...m.otherMs) < 1000,
  };
  console.log(`\n${r.name}: ${STUDENTS} students, ${EXERCISES} exercises each over ${SECONDS} s, attackers ${[...ATTACKS].join(', ') || 'none'}`);
  console.log(`  records sent ${m.sent}, acknowledged ${m.acked} (retries after 429/503: ${m.retries}; refused for good: ${m.refusedForGood}; joins failed: ${m.joinFailed}), stored ${r.inDb}; answers ${JSON.stringify(m.statuses)}`);
  console.log(`  sent -> acknowledged: p50 ${ms(pct(m.ackMs, 0.5))} ms, p99 ${ms(pct(m.ackMs, 0.99))} ms, max ${ms(Math.max(...m.ackMs))} ms`);
  console.log(`  acknowledged -> seen on the teacher's stream: p50 ${ms(pct(m.seenMs, 0.5))} ms, p99 ${ms(pct(m.seenMs, 0.99))} ms, max ${ms(Math.max(...m.seenMs))} ms; never seen: ${r.missing}`);
  console.log(`  the other client's requests (${m.otherMs.length}): p50 ${ms(pct(m.otherMs, 0.5))} ms, p99 ${ms(pct(m.otherMs, 0.99))} ms, max ${ms(Math.max(...m.otherMs))} ms`);
  r.usage.forEach((u, i) => console.log(`  instance ${i + 1}: CPU ${u.cpu.toFixed(1)} s, peak RSS ${u.rss.toFixed(0)} MiB`));
  console.log(`  CPU beside the instances over the ${r.load.seconds.toFixed(0)} s of students: ${Object.entries(r.cpu).map(([k, v]) => `${k} ${v.toFixed(1)} s`).join(', ')}; load average ${r.load.before} before, ${r.load.after} after`);
  // Where an acknowledged student's request spent its time (the server's Server-Timing; net:
  // what the client saw less the server's handler: proxy, TLS, both event loops)
  const phase = (k) => (m.phases[k]?.length ? `${k} ${ms(pct(m.phases[k], 0.5))}/${ms(pct(m.phases[k], 0.99))}/${ms(Math.max(...m.phases[k]))}` : null);
  console.log(`  where a student's request went, p50/p99/max ms: ${['pre', 'grader', 'queue', 'grade', 'db', 'app', 'net'].map(phase).filter(Boolean).join('; ')}`);
  console.log(`  event loop delay p50/p99/max ms: clients ${[m.clientLoop.p50, m.clientLoop.p99, m.clientLoop.max].map(ms).join('/')}${r.timing.map((t, i) => (t ? `; instance ${i + 1} ${[t.loop.p50, t.loop.p99, t.loop.max].map(ms).join('/')}` : '')).join('')}`);
  r.timing.forEach((t, i) => { if (t?.pool) console.log(`  instance ${i + 1} pool (${t.pool.max} connections): ${t.pool.n} checkouts, waited ${t.pool.ms} ms in all, ${t.pool.over100} over 100 ms, longest ${t.pool.longest} ms`); });
  if (r.proxy) console.log(`  nginx, students' progress requests (${r.proxy.n}), p50/p99/max ms: in nginx ${r.proxy.total}; upstream answer ${r.proxy.upstream}; nginx's own ${r.proxy.own}`);
  console.log(`  targets: every record stored ${ok.stored ? 'met' : 'NOT met'}; acknowledged p99 < 1 s ${ok.ack ? 'met' : 'NOT met'}; seen p99 < 2 s ${ok.seen ? 'met' : 'NOT met'}; other client's max < 1 s ${ok.other ? 'met' : 'NOT met'}`);
}

const only = process.env.BENCH_ONLY;
// The write budget as shipped; the other per-address limits as shipped too.
if (!only || only === 'sqlite') {
  const dir = mkdtempSync(join(tmpdir(), 'vmemlab-bench-class-'));
  const inst = await startInstance({ VMEMLAB_DATA_DIR: dir, DATABASE_URL: '' });
  try {
    const r = await run('SQLite, one instance', { port: inst.port, tls: false }, [inst], { dataDir: dir });
    await inst.stop();
    report({ ...r, timing: [inst.timing()] });
  } finally { await inst.stop(); rmSync(dir, { recursive: true, force: true }); }
}
if (!only || only === 'postgres') {
  const dir = mkdtempSync(join(tmpdir(), 'vmemlab-bench-class-pg-'));
  const pg = await startPostgres(dir);
  if (!pg) console.log('PostgreSQL: skipped (initdb/pg_ctl not installed: apt-get install postgresql)');
  else {
    const insts = [];
    let ng = null;
    try {
      const env = { DATABASE_URL: pg.url, TRUST_PROXY: '127.0.0.1' };
      insts.push(await startInstance(env));
      insts.push(await startInstance(env));
      ng = await startNginx(dir, insts.map((x) => x.port));
      if (!ng) console.log('PostgreSQL: skipped (nginx or openssl not installed)');
      else {
        const r = await run('PostgreSQL, two instances behind nginx (TLS)', { port: ng.port, tls: true, ca: ng.ca }, insts, { databaseUrl: pg.url }, [{ name: 'PostgreSQL', cpu: pg.cpu }, { name: 'nginx', cpu: ng.cpu }]);
        for (const x of insts) await x.stop();
        report({ ...r, timing: insts.map((x) => x.timing()), proxy: nginxTimes(ng.accessLog) });
      }
    } finally {
      if (ng) await ng.stop();
      for (const x of insts) await x.stop();
      pg.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
