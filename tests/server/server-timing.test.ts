/* VMEMLAB_SERVER_TIMING (web/server/timing.mjs), on SQLite and PostgreSQL: off by default
 * (no Server-Timing header), on it gives each progress answer its phases (pre, grader with
 * queue and grade within it, db, app) whose sum fits in the whole, and the process prints
 * its event loop delay and, on PostgreSQL, the pool's waits when it closes. npm run
 * bench:class reads both to say where a lecture hall's time goes. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { ConfigError, readConfig } from '../../web/server/config.mjs';
import { startPostgres, type Pg } from './helpers';

let pg: Pg | null = null;
const dirs: string[] = [];
beforeAll(async () => { pg = await startPostgres(); pg.createDb('timing_on'); pg.createDb('timing_off'); }, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

it('VMEMLAB_SERVER_TIMING takes 1 or 0 (off when unset)', () => {
  expect(readConfig({}).serverTiming).toBe(false);
  expect(readConfig({ VMEMLAB_SERVER_TIMING: '1' }).serverTiming).toBe(true);
  expect(readConfig({ VMEMLAB_SERVER_TIMING: '0' }).serverTiming).toBe(false);
  expect(() => readConfig({ VMEMLAB_SERVER_TIMING: 'yes' })).toThrow(ConfigError);
  expect(() => readConfig({ VMEMLAB_SERVER_TIMING: 'yes' })).toThrow(/^VMEMLAB_SERVER_TIMING="yes": takes 1/);
});

/** One progress record sent by a new student of a new class: the answer's Server-Timing, as phase -> ms. */
async function phasesOf(app: Awaited<ReturnType<typeof buildServer>>) {
  const { code } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'timing' } })).json();
  const me = (await app.inject({ method: 'POST', url: `/api/classes/${code}/students`, payload: { name: 'Ann' } })).json();
  const r = await app.inject({
    method: 'POST', url: `/api/classes/${code}/progress`, headers: { authorization: `Bearer ${me.receipt}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ records: [{ id: 'timing0000000000000001', type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs', seed: 7, answer: '24', tries: 1, hint: false, shown: false, at: new Date().toISOString() }] }),
  });
  expect(r.statusCode, r.body).toBe(200);
  const header = r.headers['server-timing'];
  return header === undefined ? null : Object.fromEntries(String(header).split(', ').map((p) => {
    const m = /^(\w+);dur=(\d+(?:\.\d)?)$/.exec(p);
    expect(m, p).not.toBeNull();
    return [m![1], Number(m![2])];
  }));
}

describe.each(['sqlite', 'postgres'] as const)('on %s', (kind) => {
  const server = (db: string, serverTiming: boolean) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-timing-')); dirs.push(dataDir);
    return buildServer({ databaseUrl: kind === 'postgres' ? pg!.url(db) : '', dataDir, rateLimit: false, serveApp: false, serverTiming });
  };

  it('off: progress answers carry no Server-Timing', async () => {
    const app = await server('timing_off', false);
    try { expect(await phasesOf(app)).toBeNull(); } finally { await app.close(); }
  }, 60_000);

  it('on: each progress answer says where its time went, and the process its loop delay and pool waits at close', async () => {
    const app = await server('timing_on', true);
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    let closed = false;
    try {
      const p = (await phasesOf(app))!;
      expect(Object.keys(p)).toEqual(['pre', 'grader', 'queue', 'grade', 'db', 'app']);
      for (const v of Object.values(p)) expect(v).toBeGreaterThanOrEqual(0);
      // the grader's wait holds its queue and grade; the sequential phases fit in the whole
      // (each is rounded to 0.1 ms)
      expect(p.queue + p.grade).toBeLessThanOrEqual(p.grader + 0.2);
      expect(p.grade).toBeGreaterThan(0);
      expect(p.pre + p.grader + p.db).toBeLessThanOrEqual(p.app + 0.3);
      await app.close(); closed = true;
      const line = log.mock.calls.map((c) => String(c[0])).find((l) => l.startsWith('vmemlab timing '));
      expect(line).toBeDefined();
      const summary = JSON.parse(line!.slice('vmemlab timing '.length));
      expect(summary.loop.max).toBeGreaterThanOrEqual(summary.loop.p50);
      if (kind === 'postgres') {
        expect(summary.pool.max).toBe(10);
        expect(summary.pool.n).toBeGreaterThan(3); // the class, the student, the receipt, the insert at least
        expect(summary.pool.longest).toBeGreaterThanOrEqual(0);
      } else expect(summary.pool).toBeUndefined();
    } finally { log.mockRestore(); if (!closed) await app.close(); }
  }, 60_000);
});
