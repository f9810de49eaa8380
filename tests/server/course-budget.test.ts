/* The course's write routes count in the server's one write budget (web/server/budget.mjs),
 * the same as the plain join and the progress records: joining by roster ID, by a picked
 * name or with a device code is a join (VMEMLAB_JOIN_MAX per class per address, refused
 * guesses included), and making a device code or loading a roster is a write
 * (VMEMLAB_WRITE_RATE per address). Past either: 429 with Retry-After, nothing stored, and
 * another address unaffected. The budget is in the server process, so SQLite alone. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';

const canvasRoster = readFileSync(join(__dirname, 'fixtures', 'roster-canvas.csv'), 'utf8');
const JOINS = 3;
const WRITES = 8;

describe('the course routes in the write budget', () => {
  type App = Awaited<ReturnType<typeof buildServer>>;
  let app: App; let dataDir: string; let code: string; let teacher: string;
  const req = (from: string, method: string, path: string, payload?: unknown, token?: string, type = 'application/json') => app.inject({
    method: method as 'GET', url: `/api/classes/${code}${path}`, remoteAddress: from,
    ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
    headers: { ...(payload === undefined ? {} : { 'content-type': type }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const refused = (r: Awaited<ReturnType<App['inject']>>, what: RegExp) => {
    expect(r.statusCode, r.body).toBe(429);
    expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    expect(r.json().message).toMatch(what);
    expect(r.json().message).toContain('nothing was stored');
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-course-budget-'));
    app = await buildServer({ databaseUrl: '', dataDir, serveApp: false,
      rateLimit: { max: 0, uploadMax: 0, createMax: 0, writeMax: WRITES, joinMax: JOINS, timeWindow: '1 minute' } });
    ({ code, teacher_token: teacher } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'budget' }, remoteAddress: '10.0.0.1' })).json());
    expect((await req('10.0.0.1', 'POST', '/roster', canvasRoster, teacher, 'text/csv')).statusCode).toBe(200);
  }, 60_000);
  afterAll(async () => { await app?.close(); rmSync(dataDir, { recursive: true, force: true }); });

  it('joins by name, by roster ID, by a picked name and by a device code share one bound per class and address', async () => {
    const a = '10.0.0.2';
    expect((await req(a, 'POST', '/students', { name: 'Someone' })).statusCode).toBe(201); // 1: the plain join
    expect((await req(a, 'POST', '/roster/join', { id: 'S999' })).statusCode).toBe(404); // 2: a wrong ID counts
    const aiko = await req(a, 'POST', '/roster/join', { id: 'S001' }); // 3
    expect(aiko.statusCode, aiko.body).toBe(201);
    const entries = (await req(a, 'GET', '/roster/names')).json().students as { entry: string; name: string; joined: boolean }[];
    const bea = entries.find((s) => s.name === 'Martin, Bea')!;
    refused(await req(a, 'POST', '/roster/join', { entry: bea.entry }), /joined class [A-Z0-9-]+ 3 times in the last hour/);
    refused(await req(a, 'POST', '/roster/join', { id: 'S002' }), /joined class/);
    const link = await req(a, 'POST', '/students/me/link', {}, aiko.json().receipt);
    expect(link.statusCode, link.body).toBe(200);
    refused(await req(a, 'POST', '/students/link', { code: link.json().code }), /joined class/);
    refused(await req(a, 'POST', '/students', { name: 'Another' }), /joined class/);
    // nothing stored by the refusals: Bea is still free, the code still works once, elsewhere
    expect((await req(a, 'GET', '/roster/names')).json().students.find((s: { name: string }) => s.name === 'Martin, Bea').joined).toBe(false);
    const b = '10.0.0.3';
    const phone = await req(b, 'POST', '/students/link', { code: link.json().code });
    expect(phone.statusCode, phone.body).toBe(200);
    expect(phone.json().student_id).toBe(aiko.json().student_id);
    expect((await req(b, 'POST', '/roster/join', { entry: bea.entry })).statusCode).toBe(201);
    // guessing device codes is bounded the same way
    expect((await req(b, 'POST', '/students/link', { code: 'ZZZZ-ZZZZ' })).statusCode).toBe(404);
    refused(await req(b, 'POST', '/students/link', { code: 'ZZZZ-ZZZY' }), /joined class/);
  });

  it('device codes made and rosters loaded count as writes per address, with the records and joins', async () => {
    const c = '10.0.0.4';
    const li = await req(c, 'POST', '/roster/join', { id: 'S003' });
    expect(li.statusCode, li.body).toBe(201); // 1 write (a join)
    const receipt = li.json().receipt;
    for (let i = 2; i <= WRITES - 1; i++) expect((await req(c, 'POST', '/students/me/link', {}, receipt)).statusCode).toBe(200);
    expect((await req(c, 'POST', '/roster', canvasRoster, teacher, 'text/csv')).statusCode).toBe(200); // the 8th
    refused(await req(c, 'POST', '/students/me/link', {}, receipt), /sent 8 records and joins in the last minute/);
    refused(await req(c, 'POST', '/roster', 'Name,Student ID\nNew Person,S777\n', teacher, 'text/csv'), /in the last minute/);
    // the progress route is the same budget
    refused(await req(c, 'POST', '/progress', { records: [{ id: 'budgetbudgetbudget0001', type: 'done', lesson: 'shadow-paging', done: true, at: '2026-11-20T09:00:00.000Z' }] }, receipt), /in the last minute/);
    // nothing stored: the roster has no New Person; another address is not refused
    const roster = (await req('10.0.0.1', 'GET', '/roster', undefined, teacher)).json().roster as { name: string }[];
    expect(roster.map((e) => e.name)).not.toContain('New Person');
    expect((await req('10.0.0.5', 'POST', '/students/me/link', {}, receipt)).statusCode).toBe(200);
  });
});
