/* Attacks that once broke the class server, each kept as a named regression test: a results
 * upload with tens of thousands of list items froze the whole server for up to 160 s
 * (the schema collected every error); /%61pi/results and other spellings of an API path
 * reached the routes while the rate limits only counted URLs starting with /api/ (80 of 80
 * uploads stored against a limit of 60, 20,000 teacher-token guesses at 3,815/s); anyone who
 * reached the server could create classes. The server runs as `make start` runs it
 * (web/server/main.mjs in a child process) where time and memory are measured. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiPathProblem, buildServer } from '../../web/server/app.mjs';
import { readConfig } from '../../web/server/config.mjs';
import { fixture, resultWith, root } from './helpers';

type App = Awaited<ReturnType<typeof buildServer>>;
const dirs: string[] = [];
const apps: App[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const a of apps) await a.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tmp = () => { const d = mkdtempSync(join(tmpdir(), 'vmemlab-hard-')); dirs.push(d); return d; };

/** web/server/main.mjs on a free loopback port, SQLite in a fresh folder. */
async function mainServer(env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; out: () => string }> {
  const child = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', VMEMLAB_DATA_DIR: tmp(), DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 20 s:\n${out}`)), 20_000);
    const on = (b: Buffer) => { out += b; const m = /class server at (http:\/\/[^\s/]+)\//.exec(out); if (m) { clearTimeout(timer); resolve(m[1]); } };
    child.stdout!.on('data', on); child.stderr!.on('data', on);
    child.once('exit', (c) => { clearTimeout(timer); reject(new Error(`exited ${c}:\n${out}`)); });
  });
  child.removeAllListeners('exit');
  return { url, child, out: () => out };
}
/** The peak resident memory of a process so far (Linux: VmHWM), in MiB. */
const peakRssMiB = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function timed(url: string, init?: RequestInit): Promise<{ status: number; body: { message?: string; need?: string }; ms: number }> {
  const t0 = performance.now();
  const r = await fetch(url, init);
  const text = await r.text();
  let body = {};
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  return { status: r.status, body, ms: performance.now() - t0 };
}

describe('one request cannot freeze or crash the server', () => {
  let url: string; let child: ChildProcess; let code: string;
  beforeAll(async () => {
    ({ url, child } = await mainServer());
    code = (await (await fetch(`${url}/api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"lab"}' })).json()).code;
  });
  const send = (body: string) => timed(`${url}/api/results`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-vmemlab-class': code }, body });
  const withBenchmarks = (items: unknown[]) => { const r = structuredClone(fixture) as Record<string, unknown>; r.benchmarks = items; return JSON.stringify(r); };

  it.each([
    ['80,000 empty benchmarks (241 KB; froze the server for 160 s)', () => withBenchmarks(Array.from({ length: 80_000 }, () => ({})))],
    ['36,000 empty benchmarks (34 s)', () => withBenchmarks(Array.from({ length: 36_000 }, () => ({})))],
    ['12,000 benchmarks {x:1} (4.4 s)', () => withBenchmarks(Array.from({ length: 12_000 }, () => ({ x: 1 })))],
    ['one object with 15,000 fields', () => resultWith((r) => { r.benchmarks[0].cases[0].params = Object.fromEntries(Array.from({ length: 15_000 }, (_, i) => [`k${i}`, i])) as never; })],
    ['a text of 200,000 characters', () => resultWith((r) => { r.benchmarks[0].teaches = 'x'.repeat(200_000); })],
  ])('%s: refused within 1 s, and /api/health answers meanwhile', async (_name, make) => {
    const body = make();
    expect(body.length).toBeLessThanOrEqual(256 * 1024);
    const [up, health] = await Promise.all([send(body), (async () => { await new Promise((r) => setTimeout(r, 5)); return timed(`${url}/api/health`); })()]);
    expect(up.status).toBe(400);
    expect(up.body.message).toMatch(/^\/benchmarks(\/0\/cases\/0\/params|\/0\/teaches)?: is (a list of|an object of|a text of) \d+ (items|fields|characters); at most \d+ are taken here/);
    expect(up.ms).toBeLessThan(1000);
    expect(health.status).toBe(200);
    expect(health.ms).toBeLessThan(1000);
  });

  it('a list within the document limit but over the schema\'s bound is a 422 naming the bound, at once', async () => {
    const r = await send(withBenchmarks(Array.from({ length: 1000 }, () => structuredClone(fixture.benchmarks[0]))).slice(0, 256 * 1024));
    // cut at the body limit the JSON is malformed (400), else the schema's maxItems (422)
    expect([400, 413, 422]).toContain(r.status);
    const ok = await send(withBenchmarks(Array.from({ length: 40 }, () => structuredClone(fixture.benchmarks[0]))));
    expect(ok.status).toBe(422);
    expect(ok.body.message).toMatch(/\/benchmarks: must NOT have more than 32 items/);
    expect(ok.ms).toBeLessThan(1000);
  });

  it('the server is alive, still stores a real result, and its peak memory stayed under 300 MB', async () => {
    const r = await send(resultWith());
    expect(r.status).toBe(201);
    expect(peakRssMiB(child.pid!)).toBeLessThan(300);
  });
});

describe('every spelling of an API path is refused or counted against the same limit', () => {
  it.each([
    ['/%61pi/results', true], ['/api//results', true], ['/API/results', true], ['/Api/results', true], ['/api/./results', true],
    ['/x/../api/results', true], ['/api/results/.', true], ['/api%2Fresults', true], ['//api/results', true], ['/api\\results', true],
    ['http://127.0.0.1/api/results', true], ['/%61pi/classes/AB-CD/progress', true], ['/api/classes/AB-CD//students', true],
    ['/API/classes/AB-CD/progress.csv', true], ['/api/classes/AB-CD/%63lose', true], ['/api/classes/AB-CD/progress/../close', true],
    ['/api/classes/AB-CD/progress', false], ['/api/classes/AB-CD/students/me', false], ['/api/results', false], ['/api/results?x=%61', false], ['/assets/app.js', false], ['/%61ssets/x.js', false],
  ])('%s refused: %s', (target, refused) => {
    expect(apiPathProblem(target) !== null).toBe(refused);
  });

  async function limited(max: { max: number; uploadMax: number; createMax: number }) {
    const app = await buildServer({ dataDir: tmp(), serveApp: false, rateLimit: { ...max, timeWindow: '1 minute' } });
    apps.push(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    return { app, port };
  }
  /** Sends a request target exactly as written (fetch would normalise it). */
  function raw(port: number, method: string, target: string, headers: Record<string, string>, body = ''): Promise<number> {
    return new Promise((resolve, reject) => {
      const s = connect(port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => { got += d; });
      s.on('error', reject);
      s.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
      const h = Object.entries({ host: `127.0.0.1:${port}`, connection: 'close', 'content-length': String(Buffer.byteLength(body)), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      s.write(`${method} ${target} HTTP/1.1\r\n${h}\r\n${body}`);
    });
  }

  it('uploads: 80 sent through every spelling store no more than the limit of 5', async () => {
    const { app, port } = await limited({ max: 0, uploadMax: 5, createMax: 0 });
    const code = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'lab' } })).json().code;
    const spellings = ['/api/results', '/%61pi/results', '/api//results', '/API/results', '/api/./results', '/x/../api/results', '/api%2fresults', `http://127.0.0.1:${port}/api/results`];
    const statuses: number[] = [];
    for (let i = 0; i < 80; i++) statuses.push(await raw(port, 'POST', spellings[i % spellings.length], { 'content-type': 'application/json', 'x-vmemlab-class': code }, resultWith()));
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.every((s) => [201, 400, 404, 429].includes(s))).toBe(true);
    expect(await app.store.totalResults()).toBe(5);
  });

  it('class creation and teacher-token guesses through other spellings are refused; the canonical path is limited', async () => {
    const { app, port } = await limited({ max: 10, uploadMax: 0, createMax: 3 });
    const mk = (t: string) => raw(port, 'POST', t, { 'content-type': 'application/json' }, '{"name":"c"}');
    const made = [];
    for (const t of ['/%61pi/classes', '/api//classes', '/API/classes', '/api/classes', '/api/classes', '/api/classes', '/api/classes', '/%61pi/classes']) made.push(await mk(t));
    expect(made).toEqual([400, 400, 400, 201, 201, 201, 429, 400]);
    const code = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'x' }, remoteAddress: '127.0.0.9' })).json().code; // another client
    const guesses = [];
    for (let i = 0; i < 30; i++) guesses.push(await raw(port, 'GET', i % 2 ? `/%61pi/classes/${code}/export.csv` : `/api/classes/${code}/export.csv`, { authorization: `Bearer ${'A'.repeat(21)}${i % 10}` }));
    expect(guesses.filter((s) => s === 403).length).toBeLessThanOrEqual(10);
    expect(guesses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(guesses.every((s) => [400, 403, 429].includes(s))).toBe(true);
  });
});

describe('VMEMLAB_CLASS_KEY', () => {
  it('with a key, creating a class needs it: missing 401, wrong 403 (both say need: class_key), right 201', async () => {
    const app = await buildServer({ dataDir: tmp(), serveApp: false, rateLimit: false, classKey: 'correct-horse' });
    apps.push(app);
    const mk = (key?: string) => app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'lab' }, headers: key === undefined ? {} : { 'x-vmemlab-class-key': key } });
    const none = await mk();
    expect(none.statusCode).toBe(401);
    expect(none.json()).toMatchObject({ need: 'class_key' });
    expect(none.json().message).toMatch(/needs its class key/);
    const wrong = await mk('correct-horsE');
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().need).toBe('class_key');
    const right = await mk('correct-horse');
    expect(right.statusCode).toBe(201);
    // joining and uploading need no key
    const up = await app.inject({ method: 'POST', url: '/api/results', payload: resultWith(), headers: { 'content-type': 'application/json', 'x-vmemlab-class': right.json().code } });
    expect(up.statusCode).toBe(201);
  });

  it('a bad key setting stops the server with one line; unset means no key', () => {
    expect(() => readConfig({ VMEMLAB_CLASS_KEY: 'short' })).toThrow(/VMEMLAB_CLASS_KEY: takes 8 to 200 printable ASCII characters/);
    expect(() => readConfig({ VMEMLAB_CLASS_KEY: 'has a space in it' })).toThrow(/VMEMLAB_CLASS_KEY/);
    expect(readConfig({}).classKey).toBeNull();
    expect(readConfig({ VMEMLAB_CLASS_KEY: ' correct-horse ' }).classKey).toBe('correct-horse');
  });

  it('listening beyond loopback without a key prints a one-line warning; with a key, or on loopback, none', async () => {
    const open = await mainServer({ HOST: '0.0.0.0' });
    for (let i = 0; i < 40 && !open.out().includes('warning'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(open.out()).toMatch(/^warning: listening on 0\.0\.0\.0 without VMEMLAB_CLASS_KEY: anyone who reaches this server can create classes; set VMEMLAB_CLASS_KEY=/m);
    open.child.kill('SIGKILL');
    const keyed = await mainServer({ HOST: '0.0.0.0', VMEMLAB_CLASS_KEY: 'correct-horse' });
    await new Promise((r) => setTimeout(r, 200));
    expect(keyed.out()).not.toMatch(/warning/);
    keyed.child.kill('SIGKILL');
    const local = await mainServer();
    await new Promise((r) => setTimeout(r, 200));
    expect(local.out()).not.toMatch(/warning/);
    local.child.kill('SIGKILL');
  });
});
