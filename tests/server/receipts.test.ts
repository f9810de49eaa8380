/* A progress request's student kept in memory (web/server/receipts.mjs): the cache's own
 * bounds, and on PostgreSQL two server instances on one database, where a student removed
 * through one instance is refused (403, nothing stored) by the other that has the receipt
 * in memory, and a student who joins again goes on. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { ReceiptCache } from '../../web/server/receipts.mjs';
import { startPostgres, type Pg } from './helpers';

it('keeps a receipt\'s student for its time, at most `max` receipts (the oldest goes), and forgets a student\'s receipts', () => {
  let t = 0;
  const c = new ReceiptCache({ ttlMs: 1000, max: 3, now: () => t });
  c.set('A', 'h1', { id: 's1' }); c.set('A', 'h2', { id: 's2' }); c.set('B', 'h1', { id: 's3' });
  expect(c.get('A', 'h1')).toEqual({ id: 's1' });
  expect(c.get('B', 'h1')).toEqual({ id: 's3' }); // per class
  c.set('A', 'h4', { id: 's1' }); // a second device of s1; the oldest (A/h1) goes
  expect(c.get('A', 'h1')).toBeNull();
  expect(c.rows.size).toBe(3);
  c.forgetStudent('s1');
  expect(c.get('A', 'h4')).toBeNull();
  expect(c.get('A', 'h2')).toEqual({ id: 's2' });
  t = 1000;
  expect(c.get('A', 'h2')).toBeNull(); // its minute is over
  c.set('A', 'h2', { id: 's2' }); c.forget('A', 'h2');
  expect(c.get('A', 'h2')).toBeNull();
});

let pg: Pg | null = null;
const dirs: string[] = [];
beforeAll(async () => { pg = await startPostgres(); pg.createDb('receipts'); }, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe('two instances on one PostgreSQL database', () => {
  type App = Awaited<ReturnType<typeof buildServer>>;
  let a: App; let b: App;
  const start = () => { const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-rc-')); dirs.push(dataDir); return buildServer({ databaseUrl: pg!.url('receipts'), dataDir, rateLimit: false, serveApp: false }); };
  beforeAll(async () => { a = await start(); b = await start(); }, 60_000);
  afterAll(async () => { await a?.close(); await b?.close(); });
  let n = 0;
  const send = (app: App, code: string, receipt: string) => app.inject({
    method: 'POST', url: `/api/classes/${code}/progress`, headers: { authorization: `Bearer ${receipt}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ records: [{ id: `rc${String(++n).padStart(20, '0')}`, type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs', seed: n, answer: '24', tries: 1, hint: false, shown: false, at: new Date().toISOString() }] }),
  });

  it('a student removed through the other instance: 403 and nothing stored, though this one had the receipt in memory; joined again, they go on', async () => {
    const { code, teacher_token: teacher } = (await a.inject({ method: 'POST', url: '/api/classes', payload: { name: 'two instances' } })).json();
    const me = (await a.inject({ method: 'POST', url: `/api/classes/${code}/students`, payload: { name: 'Ann' } })).json();
    expect((await send(a, code, me.receipt)).statusCode).toBe(200); // a has Ann's receipt in memory now
    const removed = await b.inject({ method: 'DELETE', url: `/api/classes/${code}/students/${me.student_id}`, headers: { authorization: `Bearer ${teacher}` } });
    expect(removed.statusCode, removed.body).toBe(200);
    const refused = await send(a, code, me.receipt);
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().message).toMatch(/not a student's of class|no longer a student/);
    const rows = await a.store.db.selectFrom('progress').select('id').where('class_code', '=', code).execute();
    expect(rows).toHaveLength(0);
    expect((await send(a, code, me.receipt)).statusCode).toBe(403); // looked up afresh: still gone
    const again = (await a.inject({ method: 'POST', url: `/api/classes/${code}/students`, payload: { name: 'Ann' } })).json();
    expect(again.student_id).not.toBe(me.student_id);
    expect((await send(a, code, again.receipt)).statusCode).toBe(200);
    expect((await send(b, code, again.receipt)).statusCode).toBe(200);
  }, 60_000);
});
