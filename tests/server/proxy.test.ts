/* The university recipe of deploy/README.md, run for real: a throwaway PostgreSQL, two class
 * servers (web/server/main.mjs) on it with the settings of deploy/vmemlab.env, and in front
 * of them the real reverse proxies with deploy/'s own files, nginx (deploy/nginx-vmemlab.conf)
 * and Caddy (deploy/Caddyfile), each with TLS from a certificate deploy/local-cert.sh made
 * and round-robin over the two servers. Only the ports, the certificate's paths and what
 * keeps the proxies out of root-owned places differ from the files as a course copies them.
 * Through each proxy, over https (the client trusts the made certificate): GET /api/server
 * says proxied and gives the https address; a result uploaded through one instance is
 * listed by both; a retry with the same Idempotency-Key that reaches the other instance is
 * stored once (200, Idempotent-Replayed), and so are two sent at once; rate limits count
 * each client's address (the proxy's X-Forwarded-For), not the proxy's, and an address a
 * client writes into X-Forwarded-For itself does not move them. Clients speak from
 * addresses of their own in 127.0.0.0/8. A missing nginx, caddy or openssl fails the test. */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readConfig } from '../../web/server/config.mjs';
import { freePort, resultWith, root, startPostgres, type Pg } from './helpers';

const deploy = join(root, 'deploy');
const UPLOAD_RATE = 6; // uploads a minute per client address, on each instance
const CLASS_KEY = 'proxy-test-class-key';

/** A program from PATH or sbin; a missing one fails the whole file (never a skip). */
function bin(name: string, pkg: string): string {
  const w = spawnSync('sh', ['-c', `PATH="$PATH:/usr/sbin:/sbin" command -v ${name}`], { encoding: 'utf8' });
  if (w.status !== 0 || !w.stdout.trim()) throw new Error(`${name} is not installed: apt-get install -y ${pkg} (make test installs it with hw-lab's setup, SETUP_PKGS)`);
  return w.stdout.trim();
}

/** Replaces each `from` in text exactly `times` times, failing when deploy/'s file no longer
 * holds it: the test must run the file as a course copies it. */
function edit(text: string, file: string, changes: [string | RegExp, string, number][]): string {
  for (const [from, to, times] of changes) {
    const n = typeof from === 'string' ? text.split(from).length - 1 : (text.match(new RegExp(from, 'g')) ?? []).length;
    if (n !== times) throw new Error(`${file}: expected ${JSON.stringify(String(from))} ${times} times, found ${n}`);
    text = typeof from === 'string' ? text.split(from).join(to) : text.replace(new RegExp(from, 'g'), to);
  }
  return text;
}

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: Record<string, unknown> & { message?: string } }
let cert = '';
/** One https request to 127.0.0.1:port from the local address `from`, trusting only the
 * made certificate. */
function https(port: number, method: string, path: string, opts: { from?: string; body?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({
      host: '127.0.0.1', port, method, path, ca: cert, agent: false, localAddress: opts.from,
      headers: { ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
      timeout: 15_000,
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { text += c; });
      res.on('end', () => {
        let body = {};
        try { body = JSON.parse(text); } catch { body = { text }; }
        resolve({ status: res.statusCode!, headers: res.headers, body });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`no answer in 15 s: ${method} ${path}`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}
const plain = async (port: number, path: string, headers: Record<string, string> = {}) => (await fetch(`http://127.0.0.1:${port}${path}`, { headers })).json();

function waitForPort(port: number, what: () => string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(); });
      s.once('error', () => { s.destroy(); if (Date.now() > end) reject(new Error(`nothing listens on ${port} after ${ms} ms:\n${what()}`)); else setTimeout(attempt, 50); });
    };
    attempt();
  });
}

interface Instance { port: number; child: ChildProcess; log: () => string }
const children: ChildProcess[] = [];
let dir = ''; let pg: Pg | null = null;
const instances: Instance[] = [];
const proxies: Record<'nginx' | 'caddy', { port: number; child: ChildProcess; out: () => string }> = {} as never;

/** A class server as deploy/vmemlab@.service runs it: HOST=127.0.0.1, its PORT, the shared
 * settings of deploy/vmemlab.env (their values this test's), every request logged. */
function startInstance(port: number, env: Record<string, string>): Promise<Instance> {
  const child = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port), VMEMLAB_DATA_DIR: join(dir, `data-${port}`), VMEMLAB_LOG: '1', VMEMLAB_UPLOAD_RATE: String(UPLOAD_RATE), VMEMLAB_RATE_MAX: '600', VMEMLAB_CREATE_RATE: '20' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (b) => { out += b; });
  child.stderr!.on('data', (b) => { out += b; });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 30 s:\n${out}`)), 30_000);
    const poll = setInterval(() => { if (out.includes('class server at')) { clearInterval(poll); clearTimeout(timer); child.removeAllListeners('exit'); resolve({ port, child, log: () => out }); } }, 20);
    child.once('exit', (c) => { clearInterval(poll); clearTimeout(timer); reject(new Error(`exited ${c}:\n${out}`)); });
  });
}

/** The requests an instance logged (Fastify's "incoming request" lines, VMEMLAB_LOG=1). */
const requests = (i: Instance) => i.log().split('\n').filter((l) => l.startsWith('{') && l.includes('"incoming request"'))
  .map((l) => JSON.parse(l).req as { method: string; url: string; remoteAddress: string });
/** Which instances (0 or 1) served the requests whose URL holds `mark`, once `count` of
 * them are in the logs: a log line may come through its pipe after the answer did. */
async function servedBy(mark: string, count = 1): Promise<number[]> {
  const find = () => instances.flatMap((inst, n) => requests(inst).filter((r) => r.url.includes(mark)).map(() => n));
  for (let i = 0; i < 100 && find().length < count; i++) await new Promise((r) => setTimeout(r, 20));
  return find();
}
/** The client addresses the instances logged for the requests whose URL holds `mark`. */
async function seenFrom(mark: string, count: number): Promise<Set<string>> {
  await servedBy(mark, count);
  return new Set(instances.flatMap((inst) => requests(inst).filter((r) => r.url.includes(mark)).map((r) => r.remoteAddress)));
}

// A setup that failed (a program missing, a proxy that would not start) fails every test
// with its reason, rather than leaving them skipped.
let setupError: unknown = null;
const ready = () => { if (setupError) throw setupError; };
beforeAll(async () => { try { await setup(); } catch (e) { setupError = e; } }, 120_000);

async function setup() {
  const nginx = bin('nginx', 'nginx'); const caddy = bin('caddy', 'caddy'); bin('openssl', 'openssl');
  dir = mkdtempSync(join(tmpdir(), 'vmemlab-proxy-'));
  execFileSync(join(deploy, 'local-cert.sh'), ['127.0.0.1', join(dir, 'cert')], { stdio: 'pipe' });
  cert = readFileSync(join(dir, 'cert', 'fullchain.pem'), 'utf8');

  pg = await startPostgres();
  pg.createDb('vmemlab');
  // deploy/vmemlab.env's settings, with this test's database and key
  const env: Record<string, string> = {};
  for (const line of readFileSync(join(deploy, 'vmemlab.env'), 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
  }
  expect(Object.keys(env).sort()).toEqual(['DATABASE_URL', 'TRUST_PROXY', 'VMEMLAB_CLASS_KEY']);
  expect(() => readConfig(env)).not.toThrow();
  Object.assign(env, { DATABASE_URL: pg.url('vmemlab'), VMEMLAB_CLASS_KEY: CLASS_KEY });
  expect(env.TRUST_PROXY).toBe('127.0.0.1');
  // Both at once on the empty database: each runs the migrations, one waits for the other.
  const [p1, p2] = [await freePort(), await freePort()];
  instances.push(...await Promise.all([startInstance(p1, env), startInstance(p2, env)]));

  // nginx, as root without root-owned paths: its pid, logs and temporary files in dir. Its
  // workers (nobody, when started as root) write large request bodies to files there.
  const ng = join(dir, 'nginx'); mkdirSync(ng);
  chmodSync(dir, 0o755); chmodSync(ng, 0o777);
  const [ngPort, ngHttp] = [await freePort(), await freePort()];
  const site = edit(readFileSync(join(deploy, 'nginx-vmemlab.conf'), 'utf8'), 'deploy/nginx-vmemlab.conf', [
    ['    listen [::]:80;\n', '', 1], ['    listen [::]:443 ssl http2;\n', '', 1],
    ['listen 80;', `listen 127.0.0.1:${ngHttp};`, 1], ['listen 443 ssl http2;', `listen 127.0.0.1:${ngPort} ssl http2;`, 1],
    ['/etc/ssl/vmemlab/fullchain.pem', join(dir, 'cert', 'fullchain.pem'), 1], ['/etc/ssl/vmemlab/privkey.pem', join(dir, 'cert', 'privkey.pem'), 1],
    ['127.0.0.1:8081', `127.0.0.1:${p1}`, 1], ['127.0.0.1:8082', `127.0.0.1:${p2}`, 1],
  ]);
  writeFileSync(join(ng, 'site.conf'), site);
  writeFileSync(join(ng, 'nginx.conf'), [
    'daemon off;', 'worker_processes 1;', `pid ${ng}/nginx.pid;`, `error_log ${ng}/error.log info;`,
    'events { worker_connections 256; }',
    `http { access_log ${ng}/access.log; client_body_temp_path ${ng}/body; proxy_temp_path ${ng}/proxy; fastcgi_temp_path ${ng}/fastcgi; uwsgi_temp_path ${ng}/uwsgi; scgi_temp_path ${ng}/scgi; include ${ng}/site.conf; }`, '',
  ].join('\n'));
  const t = spawnSync(nginx, ['-t', '-e', join(ng, 'error.log'), '-p', ng, '-c', join(ng, 'nginx.conf')], { encoding: 'utf8' });
  expect(t.status, t.stderr).toBe(0);
  const ngChild = spawn(nginx, ['-e', join(ng, 'error.log'), '-p', ng, '-c', join(ng, 'nginx.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(ngChild);
  let ngOut = ''; ngChild.stderr!.on('data', (b) => { ngOut += b; });
  proxies.nginx = { port: ngPort, child: ngChild, out: () => ngOut + readFileSync(join(ng, 'error.log'), 'utf8') };

  // Caddy: no admin endpoint, no port 80, its state in dir; bound to 127.0.0.1.
  const cd = join(dir, 'caddy'); mkdirSync(cd);
  const [cdPort, cdHttp] = [await freePort(), await freePort()];
  const caddyfile = edit(readFileSync(join(deploy, 'Caddyfile'), 'utf8'), 'deploy/Caddyfile', [
    ['lab.example.edu {', `https://127.0.0.1:${cdPort} {\n\tbind 127.0.0.1`, 1],
    ['/etc/ssl/vmemlab/fullchain.pem', join(dir, 'cert', 'fullchain.pem'), 1], ['/etc/ssl/vmemlab/privkey.pem', join(dir, 'cert', 'privkey.pem'), 1],
    ['127.0.0.1:8081', `127.0.0.1:${p1}`, 1], ['127.0.0.1:8082', `127.0.0.1:${p2}`, 1],
  ]);
  writeFileSync(join(cd, 'Caddyfile'), `{\n\tadmin off\n\tauto_https disable_redirects\n\thttp_port ${cdHttp}\n\tstorage file_system ${cd}/data\n}\n\n${caddyfile}`);
  const xdg = { HOME: cd, XDG_DATA_HOME: join(cd, 'data'), XDG_CONFIG_HOME: join(cd, 'config') };
  const v = spawnSync(caddy, ['validate', '--config', join(cd, 'Caddyfile'), '--adapter', 'caddyfile'], { encoding: 'utf8', env: { ...process.env, ...xdg } });
  expect(v.status, v.stderr).toBe(0);
  const cdChild = spawn(caddy, ['run', '--config', join(cd, 'Caddyfile'), '--adapter', 'caddyfile'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...xdg } });
  children.push(cdChild);
  let cdOut = ''; cdChild.stderr!.on('data', (b) => { cdOut += b; }); cdChild.stdout!.on('data', (b) => { cdOut += b; });
  proxies.caddy = { port: cdPort, child: cdChild, out: () => cdOut };

  await Promise.all([waitForPort(ngPort, proxies.nginx.out), waitForPort(cdPort, proxies.caddy.out)]);
}

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 300));
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  try { pg?.stop(); } finally { if (dir) rmSync(dir, { recursive: true, force: true }); }
});

// Each proxy's clients speak from their own loopback addresses, so that the rate limits of
// one part do not reach into the other's.
const CLIENTS = { nginx: { main: '127.0.0.10', a: '127.0.0.11', b: '127.0.0.12' }, caddy: { main: '127.0.0.20', a: '127.0.0.21', b: '127.0.0.22' } };

for (const name of ['nginx', 'caddy'] as const) {
  describe(`behind ${name} over https, two class servers on one PostgreSQL`, () => {
    const from = CLIENTS[name];
    const port = () => proxies[name].port;
    const upload = (code: string, q: string, extra: { key?: string; body?: string; from?: string; headers?: Record<string, string> } = {}) =>
      https(port(), 'POST', `/api/results?${q}`, { from: extra.from ?? from.main, body: extra.body ?? resultWith(), headers: { 'x-vmemlab-class': code, ...(extra.key ? { 'idempotency-key': extra.key } : {}), ...extra.headers } });
    let code = ''; let token = '';

    it('says it is proxied, gives its https address and builds links for it', async () => {
      ready();
      const info = await https(port(), 'GET', '/api/server', { from: from.main });
      expect(info.status).toBe(200);
      expect(info.body).toEqual({ addresses: [`https://127.0.0.1:${port()}/`], loopback_only: false, class_key: true, proxied: true });
      expect((await https(port(), 'POST', '/api/classes', { from: from.main, body: '{"name":"no key"}' })).status).toBe(401);
      const made = await https(port(), 'POST', '/api/classes', { from: from.main, body: `{"name":"${name} course"}`, headers: { 'x-vmemlab-class-key': CLASS_KEY } });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      code = String(made.body.code); token = String(made.body.teacher_token);
      expect(made.body.join_url).toBe(`https://127.0.0.1:${port()}/?view=results&class=${code}`);
      expect(made.body.teacher_url).toBe(`https://127.0.0.1:${port()}/?view=results&class=${code}#teacher=${token}`);
      const health = await https(port(), 'GET', '/api/health', { from: from.main });
      expect(health.body).toMatchObject({ ok: true, storage: 'postgres', database: 'up' });
    });

    it('a result uploaded through one instance is listed by both', async () => {
      ready();
      const mark = `list-${randomBytes(6).toString('hex')}`;
      const up = await upload(code, mark);
      expect(up.status, JSON.stringify(up.body)).toBe(201);
      expect(await servedBy(mark)).toHaveLength(1);
      for (const inst of instances) {
        const list = await plain(inst.port, `/api/classes/${code}/results`, { authorization: `Bearer ${token}` });
        expect(list.results.map((r: { id: string }) => r.id), `instance on ${inst.port}`).toContain(up.body.id);
      }
      // and through the proxy, whichever instance answers
      for (let i = 0; i < 2; i++) expect((await https(port(), 'GET', `/api/classes/${code}`, { from: from.main })).body.uploads).toBe(1);
    });

    it('a retry with the same Idempotency-Key on the other instance is stored once; so are two at once', async () => {
      ready();
      const key = `retry-${randomBytes(8).toString('hex')}`;
      const body = resultWith((r) => { r.probe.cpu.model_name = `retry ${name}`; });
      const [m1, m2] = [`first-${key}`, `again-${key}`];
      const first = await upload(code, m1, { key, body });
      const again = await upload(code, m2, { key, body });
      expect(first.status).toBe(201);
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.id).toBe(first.body.id);
      expect(again.body.receipt).toBe(first.body.receipt);
      // round-robin: the retry reached the other instance
      const [a, b] = [await servedBy(m1), await servedBy(m2)];
      expect(a).toHaveLength(1); expect(b).toHaveLength(1);
      expect(a[0]).not.toBe(b[0]);
      // two with a new key sent at the same moment go to the two instances: one stores it
      const key2 = `race-${randomBytes(8).toString('hex')}`;
      const both = await Promise.all([upload(code, `race1-${key2}`, { key: key2, body }), upload(code, `race2-${key2}`, { key: key2, body })]);
      expect(both.map((r) => r.status).sort()).toEqual([200, 201]);
      expect(both[0].body.id).toBe(both[1].body.id);
      expect(new Set([...await servedBy(`race1-${key2}`), ...await servedBy(`race2-${key2}`)])).toEqual(new Set([0, 1]));
      expect((await plain(instances[0].port, `/api/classes/${code}`)).uploads).toBe(3); // the first test's, one keyed, one raced
      expect(pg!.psql('vmemlab', `SELECT count(*) FROM results WHERE class_code = '${code}'`).trim()).toBe('3');
    });

    it('rate limits count each client\'s address, not the proxy\'s; a written X-Forwarded-For does not move them', async () => {
      ready();
      const statuses: number[] = [];
      const t0 = performance.now();
      for (let i = 0; i < 2 * UPLOAD_RATE + 4; i++) statuses.push((await upload(code, `rate-a-${name}-${i}`, { from: from.a })).status);
      const ms = performance.now() - t0;
      // each instance lets UPLOAD_RATE through from this client, then answers 429
      expect(statuses.filter((s) => s === 201)).toHaveLength(2 * UPLOAD_RATE);
      expect(statuses.slice(-4)).toEqual([429, 429, 429, 429]);
      // both instances saw the client's own address
      expect(await seenFrom(`rate-a-${name}-`, statuses.length)).toEqual(new Set([from.a]));
      // the same client naming another address is still itself
      for (let i = 0; i < 2; i++) {
        const forged = await upload(code, `rate-forged-${name}-${i}`, { from: from.a, headers: { 'x-forwarded-for': '10.9.8.7' } });
        expect(forged.status).toBe(429);
        expect(forged.body.message).toMatch(/^rate limit: at most 6 requests per /);
      }
      expect(await seenFrom(`rate-forged-${name}-`, 2)).toEqual(new Set([from.a]));
      // another student behind the same proxy uploads as usual, on both instances
      for (let i = 0; i < 2; i++) expect((await upload(code, `rate-b-${name}-${i}`, { from: from.b })).status).toBe(201);
      console.log(`${name}: ${statuses.length} uploads from one client in ${Math.round(ms)} ms: ${statuses.filter((s) => s === 201).length} stored, then 429; another client's stored`);
    });

    it('the proxy is what it says: the server\'s own headers come through, TLS only', async () => {
      ready();
      const r = await https(port(), 'GET', '/api/openapi.json', { from: from.main });
      expect(r.status).toBe(200);
      expect(r.headers['content-security-policy']).toMatch(/default-src 'self'/);
      expect(r.headers['x-ratelimit-limit']).toBe('600');
      // cross-origin isolated through the proxy: the replay's workers share memory
      expect(r.headers['cross-origin-opener-policy']).toBe('same-origin');
      expect(r.headers['cross-origin-embedder-policy']).toBe('require-corp');
      // plain http on the TLS port is refused, not served
      const text = await new Promise<string>((resolve) => {
        const s = connect(port(), '127.0.0.1', () => s.end('GET /api/health HTTP/1.0\r\n\r\n'));
        let got = ''; s.on('data', (b) => { got += b; }); s.on('close', () => resolve(got)); s.on('error', () => resolve(got));
      });
      expect(text).not.toContain('"ok":true');
    });
  });
}
