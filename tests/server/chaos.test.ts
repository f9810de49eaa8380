/* Chaos: the class server as a real process (web/server/main.mjs) under upload load while
 * things break underneath it:
 *   - the server killed with SIGKILL and started again (SQLite, PostgreSQL);
 *   - PostgreSQL terminating the server's connections (pg_terminate_backend);
 *   - PostgreSQL stopped hard (pg_ctl stop -m immediate) and started again;
 *   - the disk full: SQLite's own "database or disk is full" from a size cap
 *     (VMEMLAB_SQLITE_MAX_MB, always), and a real full file system (a small tmpfs, where
 *     this machine lets root mount one; skipped with the reason otherwise).
 * The load is what careful clients do: each upload has its own Idempotency-Key and a 503 is
 * sent again with the same key. Every scenario asserts that nothing acknowledged (2xx) is
 * lost, that every answer during the fault is a 2xx or a 503 with Retry-After (no 500, no
 * dropped connection), that the server process is still alive (unless it was the thing
 * killed), and that a new upload is stored within 10 s of the fault's end. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, resultWith, root, startPostgres, type Pg } from './helpers';

const dirs: string[] = [];
const procs: ChildProcess[] = [];
const mounts: string[] = [];
let pg: Pg | null = null;
beforeAll(async () => { pg = await startPostgres(); for (const db of ['killed', 'terminated', 'stopped']) pg.createDb(db); }, 60_000);
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const m of mounts) spawnSync('umount', ['-l', m]);
  pg?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Server { proc: ChildProcess; url: string; log: () => string }
async function startServer(env: Record<string, string>, port?: number): Promise<Server> {
  port ??= await freePort();
  const proc = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', VMEMLAB_RATE_MAX: '0', VMEMLAB_UPLOAD_RATE: '0', DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(proc);
  let out = '';
  proc.stdout!.on('data', (d) => { out += d; }); proc.stderr!.on('data', (d) => { out += d; });
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 20_000);
    const poll = setInterval(() => { if (out.includes('class server at')) { clearInterval(poll); clearTimeout(t); resolve(); } }, 20);
    proc.once('exit', (c) => { clearInterval(poll); clearTimeout(t); reject(new Error(`server exited ${c}: ${out}`)); });
  });
  return { proc, url: `http://127.0.0.1:${port}`, log: () => out };
}
const alive = (s: Server) => s.proc.exitCode === null && s.proc.signalCode === null;

async function createClass(url: string): Promise<{ code: string; teacher_token: string }> {
  const r = await fetch(`${url}/api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"chaos"}' });
  expect(r.status).toBe(201);
  return r.json();
}
const body = resultWith();
const post = (url: string, code: string, key: string) => fetch(`${url}/api/results`, {
  method: 'POST', body, signal: AbortSignal.timeout(15_000),
  headers: { 'content-type': 'application/json', 'x-vmemlab-class': code, 'idempotency-key': key },
});

/** Upload load: `workers` clients, each sending one upload after another; a 503 is sent
 * again with the same key (as hw-lab/run and the page do). Keeps every answer. */
function load(url: () => string, code: string, workers = 12) {
  const acked = new Map<string, string>(); // key → id
  const answers: { at: number; status: number; retryAfter: string | null; message?: string }[] = [];
  let dropped = 0; let stop = false;
  const one = async () => {
    let key = randomBytes(12).toString('base64url');
    while (!stop) {
      try {
        const r = await post(url(), code, key);
        const j = await r.json().catch(() => ({}));
        answers.push({ at: Date.now(), status: r.status, retryAfter: r.headers.get('retry-after'), message: j.message });
        if (r.status === 201 || r.status === 200) {
          const prior = acked.get(key);
          if (prior !== undefined) expect(j.id, 'one key, one upload').toBe(prior);
          acked.set(key, j.id);
          key = randomBytes(12).toString('base64url');
        } else await sleep(100); // the same key again
      } catch { dropped++; await sleep(100); }
    }
  };
  const running = Array.from({ length: workers }, one);
  return {
    acked, answers, dropped: () => dropped,
    async stop() { stop = true; await Promise.all(running); },
  };
}

/** Every upload the class lists, following the pages (at most 500 each) to the last. */
async function storedIds(url: string, code: string): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | null = null;
  do {
    const r = await fetch(`${url}/api/classes/${code}/results?limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    expect(r.status).toBe(200);
    const page = await r.json();
    for (const x of page.results as { id: string }[]) ids.add(x.id);
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}
function expectNoneLost(acked: Map<string, string>, stored: Set<string>) {
  const lost = [...acked.values()].filter((id) => !stored.has(id));
  expect(lost, `${acked.size} acknowledged`).toEqual([]);
}
/** Every answer is a 2xx or a 503 that says when to come back. */
function expectOnly2xxOr503(answers: { status: number; retryAfter: string | null; message?: string }[]) {
  const other = answers.filter((a) => !(a.status === 200 || a.status === 201 || (a.status === 503 && a.retryAfter === '5')));
  expect(other.slice(0, 3), `${other.length} other answers`).toEqual([]);
}
/** Milliseconds until a new upload is stored (201), trying every 100 ms for at most 10 s. */
let lastRefusal = '';
async function untilStored(url: string, code: string): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < 10_000) {
    try {
      const r = await post(url, code, randomBytes(12).toString('base64url'));
      if (r.status === 201) return Date.now() - t0;
      lastRefusal = `${r.status} ${await r.text()}`;
    } catch (e) { lastRefusal = String(e); }
    await sleep(100);
  }
  console.log(`no upload stored within 10 s; the last answer: ${lastRefusal}`);
  return Infinity;
}

describe('chaos: the class server under upload load while things break', () => {
  it.each(['sqlite', 'postgres'] as const)('kill -9 of the server loses no acknowledged upload (%s)', async (kind) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-chaos-')); dirs.push(dataDir);
    const env = { VMEMLAB_DATA_DIR: dataDir, DATABASE_URL: kind === 'postgres' ? pg!.url('killed') : '' };
    const port = await freePort();
    let s = await startServer(env, port);
    const { code } = await createClass(s.url);
    const l = load(() => s.url, code, 16);
    await sleep(1500);
    s.proc.kill('SIGKILL');
    await new Promise((r) => s.proc.once('exit', r));
    s = await startServer(env, port);
    await sleep(500);
    await l.stop();
    expect(l.acked.size).toBeGreaterThan(20);
    expectNoneLost(l.acked, await storedIds(s.url, code));
  });

  it('PostgreSQL terminating the server\'s connections: 503 at worst, nothing lost, the process lives', async () => {
    const s = await startServer({ DATABASE_URL: pg!.url('terminated') });
    const { code } = await createClass(s.url);
    const l = load(() => s.url, code);
    await sleep(500);
    let terminated = 0;
    for (let i = 0; i < 5; i++) {
      terminated += Number(pg!.psql('postgres', "select count(pg_terminate_backend(pid)) from pg_stat_activity where datname = 'terminated' and pid <> pg_backend_pid()"));
      await sleep(200);
    }
    expect(terminated, 'connections terminated').toBeGreaterThan(0);
    expect(await untilStored(s.url, code)).toBeLessThan(10_000);
    await sleep(300);
    await l.stop();
    expect(alive(s), s.log()).toBe(true);
    expect(s.log()).not.toMatch(/Unhandled|uncaught/i);
    expect(l.dropped()).toBe(0);
    expectOnly2xxOr503(l.answers);
    expectNoneLost(l.acked, await storedIds(s.url, code));
  });

  it('PostgreSQL stopped hard and started again: 503 with Retry-After while away, 201 within 10 s of its return', async () => {
    const s = await startServer({ DATABASE_URL: pg!.url('stopped') });
    const { code } = await createClass(s.url);
    const l = load(() => s.url, code);
    await sleep(500);
    const down = Date.now();
    pg!.halt();
    await sleep(1500);
    const away = l.answers.filter((a) => a.at > down + 300);
    pg!.resume();
    const back = await untilStored(s.url, code);
    await sleep(300);
    await l.stop();
    expect(away.length).toBeGreaterThan(0);
    expect(away.filter((a) => a.status === 503).length, 'refusals while the database was away').toBeGreaterThan(0);
    expect(away.find((a) => a.status === 503)!.message).toMatch(/database is not reachable right now/);
    expect(back, 'ms from the restart to a stored upload').toBeLessThan(10_000);
    expect(alive(s), s.log()).toBe(true);
    expect(l.dropped()).toBe(0);
    expectOnly2xxOr503(l.answers);
    expectNoneLost(l.acked, await storedIds(s.url, code));
  });

  it('SQLite full (its size cap): 503 with Retry-After, reads go on, space freed by deleting uploads is used again', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-chaos-full-')); dirs.push(dataDir);
    const s = await startServer({ VMEMLAB_DATA_DIR: dataDir, VMEMLAB_SQLITE_MAX_MB: '1' });
    const { code, teacher_token: teacher } = await createClass(s.url);
    const l = load(() => s.url, code);
    const t0 = Date.now();
    while (!l.answers.some((a) => a.status === 503) && Date.now() - t0 < 20_000) await sleep(50);
    await sleep(300);
    await l.stop();
    const full = l.answers.filter((a) => a.status === 503);
    expect(full.length, 'refusals once full').toBeGreaterThan(0);
    expect(full[0].message).toMatch(/storage is full/);
    expect(alive(s), s.log()).toBe(true);
    expect(l.dropped()).toBe(0);
    expectOnly2xxOr503(l.answers);
    const stored = await storedIds(s.url, code);
    expectNoneLost(l.acked, stored);
    // the teacher removes some uploads; new ones fit again
    for (const id of [...stored].slice(0, 10)) {
      const d = await fetch(`${s.url}/api/classes/${code}/results/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${teacher}` } });
      expect(d.status).toBe(200);
    }
    expect(await untilStored(s.url, code)).toBeLessThan(10_000);
  });

  // A real full file system needs a mount (root with CAP_SYS_ADMIN); the cap above runs everywhere.
  const mnt = mkdtempSync(join(tmpdir(), 'vmemlab-chaos-tmpfs-')); dirs.push(mnt);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mnt], { encoding: 'utf8' });
  if (mounted.status === 0) mounts.push(mnt);
  it.skipIf(mounted.status !== 0)(`SQLite on a file system that fills up (16 MiB tmpfs${mounted.status !== 0 ? `; skipped: mount failed: ${(mounted.stderr || mounted.error?.message || '').trim()}` : ''}): 503, nothing lost across a kill -9, stores again once space is freed`, async () => {
    const dataDir = join(mnt, 'data'); mkdirSync(dataDir);
    const port = await freePort();
    let s = await startServer({ VMEMLAB_DATA_DIR: dataDir }, port);
    const { code } = await createClass(s.url);
    // something else on the disk takes all but 1 MiB of it; the uploads then fill the rest
    const ballast = join(mnt, 'ballast');
    const fd = openSync(ballast, 'w');
    const chunk = Buffer.alloc(64 * 1024, 1);
    const free = () => { const f = statfsSync(mnt); return f.bavail * f.bsize; };
    while (free() > 1024 * 1024 + chunk.length) writeSync(fd, chunk);
    closeSync(fd);
    const ballastBytes = statSync(ballast).size;
    expect(ballastBytes).toBeGreaterThan(8 * 1024 * 1024);
    const l = load(() => s.url, code);
    const t0 = Date.now();
    while (!l.answers.some((a) => a.status === 503) && Date.now() - t0 < 20_000) await sleep(50);
    await sleep(500);
    expect(l.answers.filter((a) => a.status === 503).length, 'refusals on a full disk').toBeGreaterThan(0);
    expect(l.answers.find((a) => a.status === 503)!.message).toMatch(/storage is full/);
    expect(free()).toBeLessThan(256 * 1024);
    expect(alive(s), s.log()).toBe(true);
    expect((await fetch(`${s.url}/api/classes/${code}`)).status).toBe(200);
    // (the load stops first: twelve clients retrying would fill the freed space again at once)
    await l.stop();
    expect(l.dropped()).toBe(0);
    expectOnly2xxOr503(l.answers);
    rmSync(ballast);
    expect(await untilStored(s.url, code)).toBeLessThan(10_000);
    s.proc.kill('SIGKILL');
    await new Promise((r) => s.proc.once('exit', r));
    s = await startServer({ VMEMLAB_DATA_DIR: dataDir }, port);
    expectNoneLost(l.acked, await storedIds(s.url, code));
  });
});
