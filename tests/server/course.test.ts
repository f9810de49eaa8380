/* A graded course on the class server (web/server/course/), on SQLite and PostgreSQL: a
 * roster loaded from Canvas's own export, students joining by ID or by picking their name,
 * one student on two browsers (a one-time device code), two rows merged, closing times
 * that refuse records (409 naming the time) or take them marked late, scores worked out by
 * hand for first/best/last with hint and shown-answer costs, and the three gradebook files
 * parsed against each format's documented columns (docs: lessons/en/teacher-guide.md). */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { LESSONS } from '../../web/src/lessons/content';
import { generate, type ExerciseSpec } from '../../web/src/lessons/exercises';
import { seedFor } from '../../web/src/progress/seed';
import { testEngine } from '../../web/src/test/engine';
import type { Vmsim } from '../../wasm-core/js/vmsim';
import { startPostgres, type Pg } from './helpers';

let pg: Pg | null = null;
const dirs: string[] = [];
let engine: Vmsim;
const SPECS: Record<string, ExerciseSpec[]> = Object.fromEntries(Object.values(LESSONS.en)
  .map((l) => [l.meta.id, l.parts.flatMap((p) => (p.type === 'exercise' ? [p.spec] : []))]));
const TITLE = Object.fromEntries(Object.values(LESSONS.en).map((l) => [l.meta.id, l.meta.title]));
const canvasRoster = readFileSync(join(__dirname, 'fixtures', 'roster-canvas.csv'), 'utf8');

let n = 0;
const rid = () => `crs${String(++n).padStart(6, '0')}${Math.random().toString(36).slice(2, 12)}`.padEnd(22, 'x').slice(0, 22);
let clock = Date.parse('2026-11-20T09:00:00.000Z');
const tick = () => new Date(clock += 1000).toISOString();
const attempt = (lesson: string, exercise: number, seed: number, answer: string, extra: Record<string, unknown> = {}) =>
  ({ id: rid(), type: 'attempt', lesson, exercise, kind: SPECS[lesson][exercise].kind, seed, answer, tries: 1, hint: false, shown: false, at: tick(), ...extra });
function answers(lesson: string, exercise: number, seed: number) {
  const ex = generate(SPECS[lesson][exercise], seed);
  const expected = ex.expected(ex.scenarios.map((s) => engine.run(s)));
  const right = expected.split(' or ')[0];
  if (ex.input.type === 'choice') return { right, wrong: ex.input.choices.find((c) => !expected.split(' or ').includes(c))! };
  // a grid with its first reference's table wrong (the other cells right)
  if (ex.input.type === 'grid') return { right, wrong: right.replace(/^\S+/, (t) => (t === 'g1' ? 'n1' : 'g1')) };
  if (ex.input.type === 'hex') return { right, wrong: '0x' + (BigInt(right) ^ 0x1000n).toString(16) };
  return { right, wrong: String(Number(right) + 1) };
}
const csv = (text: string) => {
  expect(text.charCodeAt(0)).toBe(0xfeff); // a spreadsheet opened by a double-click reads UTF-8
  expect(text).toContain('\r\n');
  return parse(text, { bom: true, relax_column_count: false }) as string[][];
};

beforeAll(async () => {
  engine = await testEngine();
  pg = await startPostgres(); pg.createDb('course');
}, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe.each(['sqlite', 'postgres'] as const)('a graded course on %s', (kind) => {
  type App = Awaited<ReturnType<typeof buildServer>>;
  let app: App; let code: string; let teacher: string;
  const req = (method: string, path: string, payload?: unknown, token?: string, type = 'application/json') => app.inject({
    method: method as 'GET', url: `/api/classes/${code}${path}`,
    ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
    headers: { ...(payload === undefined ? {} : { 'content-type': type }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const send = (records: unknown[], token: string) => req('POST', '/progress', { records }, token);
  const settings = (s: unknown) => req('PUT', '/course', s, teacher);

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-course-')); dirs.push(dataDir);
    app = await buildServer({ databaseUrl: kind === 'postgres' ? pg!.url('course') : '', dataDir, rateLimit: false, serveApp: false });
    ({ code, teacher_token: teacher } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'course' } })).json());
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  let aiko: { student_id: string; receipt: string; name: string };
  let aikoPhone: { student_id: string; receipt: string };
  let bea: { student_id: string; receipt: string };

  it('loads a roster from Canvas\'s export (its Points Possible row and Test Student left out), and again without losing who joined', async () => {
    expect((await req('POST', '/roster', canvasRoster, undefined, 'text/csv')).statusCode).toBe(401);
    const r = await req('POST', '/roster', canvasRoster, teacher, 'text/csv');
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toMatchObject({ added: 3, updated: 0, students: 3 });
    const roster = (await req('GET', '/roster', undefined, teacher)).json().roster;
    expect(roster.map((e: { name: string }) => e.name)).toEqual(['Li, Wei', 'Martin, Bea', 'Tanaka, Aiko']);
    expect(roster[2]).toMatchObject({ sis_id: 'S001', canvas_id: '101', login: 'aiko', section: 'Sec A', student_id: null });
    // names only for joining: no IDs
    const names = (await req('GET', '/roster/names')).json();
    expect(JSON.stringify(names)).not.toContain('S001');
    expect(names.students.map((s: { name: string }) => s.name)).toContain('Tanaka, Aiko');
    // hostile or broken rosters: a clear 400 naming the line, nothing stored
    for (const [body, needle] of [['', 'empty'], ['Name,Student ID\nA\u202eB,1\n', 'line 2'], ['x\n', 'line 1'],
      ['Name,Email\nAna,not-an-email\n', 'not an email'], ['Name,Student ID\nAna,1\nBo,1\n', 'same sis id']] as const) {
      const bad = await req('POST', '/roster', body, teacher, 'text/csv');
      expect(bad.statusCode, body).toBe(400);
      expect(bad.json().message).toContain(needle);
    }
    const many = `Name,Student ID\n${Array.from({ length: 2001 }, (_, i) => `S ${i},${i}`).join('\n')}\n`;
    expect((await req('POST', '/roster', many, teacher, 'text/csv')).statusCode).toBe(400);
    const huge = await req('POST', '/roster', 'Name,Student ID\n' + 'x'.repeat(600 * 1024), teacher, 'text/csv');
    expect(huge.statusCode).toBe(413);
    const latin1 = await app.inject({ method: 'POST', url: `/api/classes/${code}/roster`, payload: Buffer.from([0x4e, 0x61, 0x6d, 0x65, 0x2c, 0x49, 0x44, 0x0a, 0xe9, 0x2c, 0x31, 0x0a]), headers: { 'content-type': 'text/csv', authorization: `Bearer ${teacher}` } });
    expect(latin1.statusCode).toBe(400);
    expect(latin1.json().message).toContain('UTF-8');
    expect((await req('GET', '/roster', undefined, teacher)).json().roster).toHaveLength(3);
  });

  it('lets a student join by typing their ID or by picking their name, once; a second browser only through a device code', async () => {
    const a = await req('POST', '/roster/join', { id: ' s001 ' });
    expect(a.statusCode, a.body).toBe(201);
    aiko = a.json();
    expect(aiko.name).toBe('Tanaka, Aiko');
    // the same person again on a phone: not a second row
    const again = await req('POST', '/roster/join', { id: 'S001' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ need: 'device_link' });
    expect((await req('POST', '/roster/join', { id: 'S999' })).statusCode).toBe(404);
    expect((await req('POST', '/roster/join', { id: 'S001', entry: 'x' })).statusCode).toBe(400);
    const beaEntry = (await req('GET', '/roster/names')).json().students.find((s: { name: string }) => s.name === 'Martin, Bea');
    bea = (await req('POST', '/roster/join', { entry: beaEntry.entry })).json();
    expect(bea.student_id).toBeTruthy();
    // the device code: made by the first browser, used once by the second, within 15 minutes
    expect((await req('POST', '/students/me/link', {}, 'x'.repeat(22))).statusCode).toBe(403);
    const link = await req('POST', '/students/me/link', {}, aiko.receipt);
    expect(link.statusCode, link.body).toBe(200);
    expect(link.json().code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    expect(link.json().url).toContain(`#link=${link.json().code}`);
    expect(Date.parse(link.json().expires_at) - Date.now()).toBeGreaterThan(14 * 60_000);
    expect((await req('POST', '/students/link', { code: 'ZZZZ-ZZZZ' })).statusCode).toBe(404);
    const phone = await req('POST', '/students/link', { code: link.json().code.toLowerCase().replace('-', '') });
    expect(phone.statusCode, phone.body).toBe(200);
    aikoPhone = phone.json();
    expect(aikoPhone).toMatchObject({ student_id: aiko.student_id, name: 'Tanaka, Aiko' });
    expect(aikoPhone.receipt).not.toBe(aiko.receipt);
    expect((await req('POST', '/students/link', { code: link.json().code })).statusCode).toBe(404); // once
    // the roster loaded again (a name corrected): who joined as whom stays
    const fixed = canvasRoster.replace('"Tanaka, Aiko"', '"Tanaka, Aiko K."');
    expect((await req('POST', '/roster', fixed, teacher, 'text/csv')).json()).toMatchObject({ added: 0, updated: 3 });
    const roster = (await req('GET', '/roster', undefined, teacher)).json().roster;
    expect(roster.find((e: { sis_id: string }) => e.sis_id === 'S001')).toMatchObject({ name: 'Tanaka, Aiko K.', student_id: aiko.student_id });
  });

  it('scores each exercise by its points, first/best/last answer, hint and shown-answer costs; both browsers count for one student', async () => {
    const L = 'ept-and-npt';
    const put = await settings({ counts: 'best', hint_cost: 0.5, shown_cost: 0.75, points: { [L]: [2] }, lessons: ['four-address-spaces', L] });
    expect(put.statusCode, put.body).toBe(200);
    const N = SPECS[L].length; // exercise 0 worth 2, the others 1
    expect(put.json().lessons.map((l: { id: string; possible: number }) => [l.id, l.possible])).toEqual([['four-address-spaces', 2], [L, N + 1]]);
    const seed = (i: number) => seedFor(code, aiko.name, L, i);
    const ans = [0, 1, 2, 3, 4].map((i) => answers(L, i, seed(i)));
    const r = await send([
      // 0 then 2: the hint the page opened after the wrong try (not pressed) costs nothing
      attempt(L, 0, seed(0), ans[0].wrong), attempt(L, 0, seed(0), ans[0].right, { tries: 2, hint_opened: true }),
      attempt(L, 1, seed(1), ans[1].right, { hint: true }),                                           // 1 x 0.5
      attempt(L, 2, seed(2), '', { tries: 0, shown: true }), attempt(L, 2, seed(2), ans[2].right),    // 1 x 0.25, shown before
      attempt(L, 3, seed(3), ans[3].right), attempt(L, 3, seed(3), ans[3].wrong, { tries: 2 }),       // 1 then 0
    ], aiko.receipt);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().records.map((x: { verdict: string }) => x.verdict)).toEqual(['wrong', 'correct', 'correct', 'empty', 'correct', 'correct', 'wrong']);
    const mine = async (receipt: string) => (await req('GET', '/students/me/scores', undefined, receipt)).json().scores;
    // worked out by hand: best 2 + 0.5 + 0.25 + 1 + 0
    expect((await mine(aiko.receipt)).lessons[L]).toMatchObject({ score: 3.75, possible: N + 1, exercises: [2, 0.5, 0.25, 1, ...Array(N - 4).fill(null)] });
    // the phone's answer counts for the same student, seen from either browser
    expect((await send([attempt(L, 4, seed(4), ans[4].right)], aikoPhone.receipt)).statusCode).toBe(200);
    expect((await mine(aikoPhone.receipt)).lessons[L].score).toBe(4.75);
    for (const [counts, want] of [['first', 0 + 0.5 + 0.25 + 1 + 1], ['last', 2 + 0.5 + 0.25 + 0 + 1]] as const) {
      await settings({ counts, hint_cost: 0.5, shown_cost: 0.75, points: { [L]: [2] }, lessons: ['four-address-spaces', L] });
      expect((await mine(aiko.receipt)).total, counts).toBe(want);
    }
    await settings({ counts: 'best', hint_cost: 0.5, shown_cost: 0.75, points: { [L]: [2] }, lessons: ['four-address-spaces', L] });
    const all = await req('GET', '/scores', undefined, teacher);
    expect(all.statusCode).toBe(200);
    expect(all.json().students.find((s: { student_id: string }) => s.student_id === aiko.student_id).scores.total).toBe(4.75);
    expect((await req('GET', '/scores', undefined, aiko.receipt)).statusCode).toBe(403);
    // settings refused with the field named
    for (const [s, needle] of [[{ counts: 'mean' }, '/counts'], [{ nope: 1 }, '/nope'], [{ points: { [L]: Array(SPECS[L].length + 1).fill(1) } }, `${SPECS[L].length} exercises`],
      [{ lessons: ['no-such'] }, 'no lesson'], [{ hint_cost: 2 }, '/hint_cost'], [{ closes_at: 'tomorrow' }, '/closes_at']] as const) {
      const bad = await settings(s);
      expect(bad.statusCode, JSON.stringify(s)).toBe(400);
      expect(bad.json().message).toContain(needle);
    }
  });

  it('merges a row made by joining with a name into the roster student: records, and the browser goes on as that student', async () => {
    const ana = (await req('POST', '/students', { name: 'Bea on the lab PC' })).json();
    const L = 'four-address-spaces';
    const s0 = seedFor(code, ana.name, L, 0);
    expect((await send([attempt(L, 0, s0, answers(L, 0, s0).right)], ana.receipt)).statusCode).toBe(200);
    expect((await req('POST', '/students/merge', { into: bea.student_id, from: ana.student_id }, bea.receipt)).statusCode).toBe(403);
    expect((await req('POST', '/students/merge', { into: bea.student_id, from: aiko.student_id }, teacher)).statusCode).toBe(409); // both on the roster
    const m = await req('POST', '/students/merge', { into: bea.student_id, from: ana.student_id }, teacher);
    expect(m.statusCode, m.body).toBe(200);
    expect(m.json()).toMatchObject({ into: bea.student_id, records: 1 });
    const students = (await req('GET', '/scores', undefined, teacher)).json().students;
    expect(students.map((s: { name: string }) => s.name)).not.toContain('Bea on the lab PC');
    expect(students.find((s: { student_id: string }) => s.student_id === bea.student_id).scores.lessons[L].score).toBe(1);
    // the lab PC's receipt now sends as Bea
    const s1 = seedFor(code, ana.name, L, 1);
    expect((await send([attempt(L, 1, s1, answers(L, 1, s1).right)], ana.receipt)).statusCode).toBe(200);
    expect((await req('GET', '/students/me/scores', undefined, bea.receipt)).json().scores.lessons[L].score).toBe(2);
  });

  it('closes a lesson at its time: later records are refused (409 naming the time, nothing stored), or taken and marked late', async () => {
    const L = 'four-address-spaces';
    const base = { counts: 'best', hint_cost: 0.5, shown_cost: 0.75, points: { 'ept-and-npt': [2] }, lessons: [L, 'ept-and-npt'] };
    const past = '2026-01-01T00:00:00.000Z';
    expect((await settings({ ...base, lesson_closes: { [L]: past } })).statusCode).toBe(200);
    const course = (await req('GET', '/course')).json();
    expect(course.settings.lesson_closes[L]).toBe(past);
    const before = await app.store.db.selectFrom('progress').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
    const wei = (await req('POST', '/roster/join', { id: 'S003' })).json();
    const seed = seedFor(code, wei.name, L, 0);
    const refused = await send([attempt('ept-and-npt', 0, 1, '1'), attempt(L, 0, seed, answers(L, 0, seed).right)], wei.receipt);
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ need: 'open_class', closed_at: past, lesson: L });
    expect(refused.json().message).toContain('2026-01-01 00:00 UTC');
    const after = await app.store.db.selectFrom('progress').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
    expect(Number(after!.n)).toBe(Number(before!.n));
    // another lesson is still open
    expect((await send([attempt('ept-and-npt', 0, 1, '1')], wei.receipt)).statusCode).toBe(200);
    // the whole class closed
    await settings({ ...base, closes_at: past });
    const closed = await send([attempt('ept-and-npt', 0, 1, '2')], wei.receipt);
    expect(closed.statusCode).toBe(409);
    expect(closed.json()).toMatchObject({ closed_at: past, lesson: null });
    // late work accepted: stored, and the gradebook says late
    await settings({ ...base, lesson_closes: { [L]: past }, late: 'accept' });
    expect((await send([attempt(L, 0, seed, answers(L, 0, seed).right)], wei.receipt)).statusCode).toBe(200);
    const plain = csv((await req('GET', '/grades', undefined, teacher)).body);
    const row = plain.find((r) => r[0] === 'S003')!;
    expect(row[plain[0].indexOf('Late')]).toBe(L);
    expect(row[plain[0].indexOf(`${TITLE[L]} (${L})`)]).toBe('1');
    await settings(base);
  });

  it('writes the gradebook in its own, Canvas\'s and Moodle\'s layouts, each parsed against the documented columns', async () => {
    const g = (q: string, token = teacher) => req('GET', `/grades${q}`, undefined, token);
    expect((await g('')).statusCode).toBe(200);
    expect((await g('', aiko.receipt)).statusCode).toBe(403);
    expect((await g('?format=xlsx')).statusCode).toBe(400);
    expect((await g('?lang=fr')).statusCode).toBe(400);
    const lessons = ['four-address-spaces', 'ept-and-npt'];
    const titles = lessons.map((l) => `${TITLE[l]} (${l})`);
    const scores = (await req('GET', '/scores', undefined, teacher)).json().students;
    const total = (sis: string) => scores.find((s: { sis_id: string }) => s.sis_id === sis).scores;

    // plain: one row per student (roster ID, name, a column per lesson, total)
    const plainRes = await g('');
    expect(plainRes.headers['content-type']).toContain('text/csv');
    const plain = csv(plainRes.body);
    expect(plain[0]).toEqual(['ID', 'Email', 'Name', 'Section', ...titles, 'Total', 'Possible', 'Late']);
    const a = plain.find((r) => r[0] === 'S001')!;
    expect(a.slice(2, 7)).toEqual(['Tanaka, Aiko K.', 'Sec A', '0', '4.75', '4.75']);
    expect(a[7]).toBe(String(2 + SPECS['ept-and-npt'].length + 1));
    expect(Number(plain.find((r) => r[0] === 'S002')![plain[0].indexOf('Total')])).toBe(total('S002').total);

    // Canvas: Student, ID, SIS User ID, SIS Login ID, Section, then "Title (id)" per
    // lesson; the row after the header is Points Possible; rows matched by ID / SIS User ID
    const canvas = csv((await g('?format=canvas')).body);
    expect(canvas[0]).toEqual(['Student', 'ID', 'SIS User ID', 'SIS Login ID', 'Section', ...titles]);
    expect(canvas[1]).toEqual(['Points Possible', '', '', '', '', '2', String(SPECS['ept-and-npt'].length + 1)]);
    expect(canvas.slice(2).map((r) => r.slice(0, 5))).toEqual([
      ['Li, Wei', '103', 'S003', 'wei', 'Sec B'], ['Martin, Bea', '102', 'S002', 'bea', 'Sec A'], ['Tanaka, Aiko K.', '101', 'S001', 'aiko', 'Sec A']]);
    expect(canvas[4].slice(5)).toEqual(['0', '4.75']);
    for (const r of canvas.slice(2)) for (const c of r.slice(5)) expect(c === '' || Number.isFinite(Number(c))).toBe(true);
    expect(canvas.flat()).not.toContain('Bea on the lab PC'); // merged away

    // Moodle: an identifier column (ID number, Email address), then one column per grade item
    const moodle = csv((await g('?format=moodle&lang=ja')).body);
    const ja = Object.fromEntries(Object.values(LESSONS.ja).map((l) => [l.meta.id, l.meta.title]));
    expect(moodle[0]).toEqual(['ID number', 'Email address', 'Full name', ...lessons.map((l) => ja[l])]);
    expect(moodle.slice(1).map((r) => r[0]).sort()).toEqual(['S001', 'S002', 'S003']);
    expect(moodle.find((r) => r[0] === 'S001')!.slice(3)).toEqual(['0', '4.75']);
    expect((await g('?format=moodle&bom=0')).body.charCodeAt(0)).toBe('I'.charCodeAt(0));
  });

  it('scores a walk grid answered with a cell wrong by its share of the cells right, as stored by the server', async () => {
    const L = 'ept-and-npt';
    const g = SPECS[L].findIndex((sp) => sp.kind === 'walk-grid');
    expect(g).toBeGreaterThan(4); // not one of the exercises scored above
    const seed = seedFor(code, aiko.name, L, g);
    const { right, wrong } = answers(L, g, seed);
    const of = right.split(/\s+/).filter((c) => c !== '|').length;
    const r = await send([attempt(L, g, seed, wrong)], aiko.receipt);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().records[0]).toMatchObject({ verdict: 'wrong', score: { right: of - 1, of } });
    const mine = (await req('GET', '/students/me/scores', undefined, aiko.receipt)).json().scores;
    const share = Math.round(((of - 1) / of) * 100) / 100;
    expect(mine.lessons[L].exercises[g]).toBe(share);
    expect(mine.lessons[L].score).toBe(Math.round((4.75 + share) * 100) / 100);
    // the right answer afterwards earns the whole point (best answer counts)
    expect((await send([attempt(L, g, seed, right)], aiko.receipt)).statusCode).toBe(200);
    expect((await req('GET', '/students/me/scores', undefined, aiko.receipt)).json().scores.lessons[L].exercises[g]).toBe(1);
  });
});
