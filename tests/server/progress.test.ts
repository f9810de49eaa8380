/* Students and their progress (web/server/progress.mjs), on SQLite and PostgreSQL: joining a
 * class with a name, joining again with the receipt, a name taken (409); progress records
 * stored once however often a batch is sent; each attempt's verdict worked out by the
 * server (the grading bundle web/server/gen/grade.mjs, in a worker thread) and equal to
 * what the page's own check() says for the same lesson, exercise, seed and answer, whatever
 * the page claims; bad records refused with 400 or 422 naming the field; a student who
 * leaves takes their records along. Prints the grading time per record. */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { BATCH_MAX } from '../../web/server/progress.mjs';
import { LESSONS } from '../../web/src/lessons/content';
import { answered, check, generate, type ExerciseSpec } from '../../web/src/lessons/exercises';
import { seedFor } from '../../web/src/progress/seed';
import { testEngine } from '../../web/src/test/engine';
import type { Vmsim } from '../../wasm-core/js/vmsim';
import { root, startPostgres, type Pg } from './helpers';

const bundle = join(root, 'web', 'server', 'gen', 'grade.mjs');
let pg: Pg | null = null;
const dirs: string[] = [];
let engine: Vmsim;

/** Each lesson's exercises as the page numbers them (the English lesson files). */
const SPECS: Record<string, ExerciseSpec[]> = Object.fromEntries(Object.values(LESSONS.en)
  .map((l) => [l.meta.id, l.parts.flatMap((p) => (p.type === 'exercise' ? [p.spec] : []))]));
const ALL = Object.entries(SPECS).flatMap(([lesson, specs]) => specs.map((spec, exercise) => ({ lesson, exercise, spec })));

let n = 0;
const rid = () => `rec${String(++n).padStart(6, '0')}${Math.random().toString(36).slice(2, 12)}`.padEnd(22, 'x').slice(0, 22);
const now = () => new Date().toISOString();
const attempt = (lesson: string, exercise: number, seed: number, answer: string, extra: Record<string, unknown> = {}) =>
  ({ id: rid(), type: 'attempt', lesson, exercise, kind: SPECS[lesson][exercise].kind, seed, answer, tries: 1, hint: false, shown: false, at: now(), ...extra });

/** The page's own verdict: what ExerciseCard says for this answer (nothing to check: "empty"). */
function pageVerdict(lesson: string, exercise: number, seed: number, answer: string) {
  const ex = generate(SPECS[lesson][exercise], seed);
  const v = check(engine, ex, answer);
  const graded = answered(ex, answer);
  return { verdict: !graded ? 'empty' : v.correct ? 'correct' : 'wrong', expected: v.expected,
    ...(graded && v.score ? { score: { right: v.score.right, of: v.score.of } } : {}) };
}
/** A right answer and a wrong one for a variant, as a learner would type them. */
function answers(lesson: string, exercise: number, seed: number): { right: string; wrong: string } {
  const ex = generate(SPECS[lesson][exercise], seed);
  const expected = ex.expected(ex.scenarios.map((s) => engine.run(s)));
  const right = expected.split(' or ')[0];
  if (ex.input.type === 'choice') return { right, wrong: ex.input.choices.find((c) => !expected.split(' or ').includes(c))! };
  // a grid with its first reference's table wrong (the other cells right)
  if (ex.input.type === 'grid') return { right, wrong: right.replace(/^\S+/, (t) => (t === 'g1' ? 'n1' : 'g1')) };
  if (ex.input.type === 'hex') return { right: right.toUpperCase().replace(/^0X/, ''), wrong: '0x' + (BigInt(right) ^ 0x1000n).toString(16) };
  return { right, wrong: String(Number(right) + 1) };
}

beforeAll(async () => {
  if (!existsSync(bundle)) throw new Error('the grading bundle is not built: make web/server/gen/grade.mjs (make build does it)');
  engine = await testEngine();
  pg = await startPostgres(); pg.createDb('progress');
}, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe('the grader (web/server/gen/grade.mjs) against the page\'s check()', () => {
  it('gives the page\'s verdict for every exercise of every lesson, over many seeds and answers', async () => {
    const { createGrader } = await import(bundle);
    const grader = await createGrader(readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')));
    let compared = 0;
    for (const { lesson, exercise, spec } of ALL) {
      // which-wins runs three streams of about 2,000 accesses per check (0.2-0.5 s): one
      // seed and three answers; the other kinds 25 seeds and eight answers
      const ww = spec.kind === 'which-wins';
      const seeds = ww ? [3] : Array.from({ length: 25 }, (_, i) => i * 104_729 + 3);
      for (const seed of seeds) {
        const { right, wrong } = answers(lesson, exercise, seed);
        for (const a of ww ? [right, wrong, ''] : [right, wrong, ` ${right} `, right.toUpperCase(), 'nonsense', '12', '0x10', '']) {
          const got = grader.grade({ type: 'attempt', lesson, exercise, kind: spec.kind, seed, answer: a });
          const page = pageVerdict(lesson, exercise, seed, a);
          expect(got, `${lesson}#${exercise} seed ${seed} answer ${JSON.stringify(a)}`).toEqual(page);
          compared++;
        }
        expect(grader.grade({ type: 'attempt', lesson, exercise, kind: spec.kind, seed, answer: right }).verdict).toBe('correct');
        expect(grader.grade({ type: 'attempt', lesson, exercise, kind: spec.kind, seed, answer: wrong }).verdict).toBe('wrong');
      }
    }
    expect(compared).toBeGreaterThan(2000);
  }, 120_000);

  it('grades a walk grid cell by cell: one cell wrong is "wrong" with its share of the cells right', async () => {
    const { createGrader } = await import(bundle);
    const grader = await createGrader(readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')));
    const grids = ALL.filter((x) => x.spec.kind === 'walk-grid');
    expect(grids.map((x) => x.lesson).sort()).toEqual(['agile-paging', 'ept-and-npt']);
    for (const { lesson, exercise, spec } of grids) {
      for (const seed of [3, 44, 1_000_001]) {
        const { right, wrong } = answers(lesson, exercise, seed);
        const of = right.split(/\s+/).filter((c) => c !== '|').length;
        expect(grader.grade({ type: 'attempt', lesson, exercise, kind: spec.kind, seed, answer: right })).toMatchObject({ verdict: 'correct', score: { right: of, of } });
        expect(grader.grade({ type: 'attempt', lesson, exercise, kind: spec.kind, seed, answer: wrong })).toMatchObject({ verdict: 'wrong', score: { right: of - 1, of } });
        // the addresses left out: the tables alone still earn theirs
        const tablesOnly = right.split('|')[0];
        expect(grader.grade({ type: 'attempt', lesson, exercise, kind: spec.kind, seed, answer: tablesOnly })).toMatchObject({ verdict: 'wrong', score: { right: of - 2, of } });
      }
    }
  }, 120_000);
});

describe.each(['sqlite', 'postgres'] as const)('students and progress on %s', (kind) => {
  type App = Awaited<ReturnType<typeof buildServer>>;
  let app: App; let code: string; let teacher: string;
  const post = (path: string, payload: unknown, token?: string) => app.inject({
    method: 'POST', url: `/api/classes/${code}${path}`, payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const join_ = (name: unknown, token?: string) => post('/students', { name }, token);
  const send = (records: unknown[], token: string) => post('/progress', { records }, token);
  const rows = (studentId?: string) => {
    let q = app.store.db.selectFrom('progress').selectAll().where('class_code', '=', code);
    if (studentId) q = q.where('student_id', '=', studentId);
    return q.orderBy('received_at').orderBy('id').execute() as Promise<Record<string, unknown>[]>;
  };

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-pr-')); dirs.push(dataDir);
    app = await buildServer({ databaseUrl: kind === 'postgres' ? pg!.url('progress') : '', dataDir, rateLimit: false, serveApp: false });
    ({ code, teacher_token: teacher } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'progress' } })).json());
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  it('joins with a name, joins again with the receipt, refuses a name taken (409) and bad names (400)', async () => {
    const a = await join_('  Zoe\u0308 Martin ');
    expect(a.statusCode, a.body).toBe(201);
    const A = a.json();
    expect(A).toMatchObject({ name: 'Zoë Martin', class: code });
    expect(Buffer.from(A.receipt, 'base64url').length).toBe(16);
    // the same name again: taken, unless the request carries that student's receipt
    const again = await join_('Zoë Martin');
    expect(again.statusCode).toBe(409);
    expect(again.json().message).toContain('already taken');
    expect((await join_('Zoë Martin', A.receipt)).json()).toEqual(A);
    expect((await join_('Zoë Martin', A.receipt)).statusCode).toBe(200);
    const b = (await join_('Bo')).json();
    expect((await join_('Zoë Martin', b.receipt)).statusCode).toBe(409);
    expect((await join_('Zoë Martin', 'not a token')).statusCode).toBe(401);
    // a code typed in lower case is the class
    expect((await app.inject({ method: 'POST', url: `/api/classes/${code.toLowerCase()}/students`, payload: { name: 'Cy' } })).json().class).toBe(code);
    for (const [name, status, needle] of [['', 400, 'empty'], ['   ', 400, 'empty'], [42, 400, 'required'], ['x'.repeat(61), 400, 'at most 60'],
      ['a\u202eb', 400, 'control character'], ['a\nb', 400, 'control character']] as const) {
      const r = await join_(name);
      expect(r.statusCode, JSON.stringify(name)).toBe(status);
      expect(r.json().message).toContain(needle);
    }
    expect((await post('/students', { name: 'Dee', extra: 1 })).statusCode).toBe(400);
    expect((await app.inject({ method: 'POST', url: '/api/classes/NOPE-NOPE/students', payload: { name: 'x' } })).statusCode).toBe(404);
    const students = await app.store.db.selectFrom('students').select(['name', 'receipt_hash']).where('class_code', '=', code).orderBy('name').execute();
    expect(students.map((s) => s.name)).toEqual(['Bo', 'Cy', 'Zoë Martin']);
    expect(JSON.stringify(students)).not.toContain(A.receipt); // kept as a hash
  });

  it('stores each record once however often its batch is sent, and grades every attempt itself', async () => {
    const s = (await join_(`retry-${kind}`)).json();
    const lesson = 'ept-and-npt';
    const seed = seedFor(code, s.name, lesson, 0);
    const { right, wrong } = answers(lesson, 0, seed);
    const batch = [
      attempt(lesson, 0, seed, wrong),
      attempt(lesson, 0, seed, right, { tries: 2, hint: true }),
      attempt(lesson, 1, seedFor(code, s.name, lesson, 1), '', { tries: 0, shown: true }),
      { id: rid(), type: 'done', lesson, done: true, at: now() },
    ];
    const first = await send(batch, s.receipt);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().stored).toBe(4);
    expect(first.json().records.map((r: { verdict: string }) => r.verdict)).toEqual(['wrong', 'correct', 'empty', 'done']);
    expect(first.json().records[1].expected).toBe(pageVerdict(lesson, 0, seed, right).expected);
    // sent again (a lost answer, a reload, two tabs): nothing new
    for (let i = 0; i < 3; i++) {
      const r = await send(batch, s.receipt);
      expect(r.json().stored).toBe(0);
      expect(r.json().records.map((x: { verdict: string }) => x.verdict)).toEqual(['wrong', 'correct', 'empty', 'done']);
    }
    // a batch of old and new records stores the new ones
    // the hint the page opened itself after a wrong try, not pressed: its own field
    const more = [batch[0], attempt(lesson, 0, seed + 1, right, { tries: 2, hint_opened: true })];
    expect((await send(more, s.receipt)).json().stored).toBe(1);
    const stored = await rows(s.student_id);
    expect(stored).toHaveLength(5);
    expect(stored.filter((r) => r.id === batch[0].id)).toHaveLength(1);
    const byId = Object.fromEntries(stored.map((r) => [r.id, r]));
    expect(byId[batch[1].id as string]).toMatchObject({ type: 'attempt', lesson, exercise: 0, kind: 'count-refs', seed, answer: right, verdict: 'correct', tries: 2, hint: 1, shown: 0, student_id: s.student_id });
    expect(byId[batch[1].id as string].hint_opened).toBe(0); // left out: false
    expect(byId[more[1].id as string]).toMatchObject({ hint: 0, hint_opened: 1 });
    expect(byId[batch[2].id as string]).toMatchObject({ verdict: 'empty', shown: 1, answer: '' });
    // the teacher's list tells the two apart
    const listed = (await app.inject({ method: 'GET', url: `/api/classes/${code}/progress?limit=500`, headers: { authorization: `Bearer ${teacher}` } })).json().records;
    expect(listed.find((r: { id: string }) => r.id === more[1].id)).toMatchObject({ hint: false, hint_opened: true });
    expect(listed.find((r: { id: string }) => r.id === batch[1].id)).toMatchObject({ hint: true, hint_opened: false });
    expect(byId[batch[3].id as string]).toMatchObject({ type: 'done', verdict: 'done', exercise: null, kind: null, seed: null });
    expect(String(byId[batch[0].id as string].received_at)).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('stores a walk grid\'s partial credit (cells right of all) and gives it to the teacher; other kinds store none', async () => {
    const s = (await join_(`grid-${kind}`)).json();
    const { lesson, exercise } = ALL.find((x) => x.spec.kind === 'walk-grid')!;
    const seed = seedFor(code, s.name, lesson, exercise);
    const { right, wrong } = answers(lesson, exercise, seed);
    const of = right.split(/\s+/).filter((c) => c !== '|').length;
    const other = attempt('ept-and-npt', 0, 9, answers('ept-and-npt', 0, 9).wrong);
    const batch = [attempt(lesson, exercise, seed, wrong), attempt(lesson, exercise, seed, right), other];
    const r = await send(batch, s.receipt);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json().records[0]).toMatchObject({ verdict: 'wrong', score: { right: of - 1, of } });
    const byId = Object.fromEntries((await rows(s.student_id)).map((x) => [x.id, x]));
    expect(byId[batch[0].id]).toMatchObject({ verdict: 'wrong', score_right: of - 1, score_of: of });
    expect(byId[batch[1].id]).toMatchObject({ verdict: 'correct', score_right: of, score_of: of });
    expect(byId[other.id]).toMatchObject({ verdict: 'wrong', score_right: null, score_of: null });
    const list = await app.inject({ method: 'GET', url: `/api/classes/${code}/progress?limit=200`, headers: { authorization: `Bearer ${teacher}` } });
    expect(list.statusCode, list.body).toBe(200);
    const listed = Object.fromEntries(list.json().records.map((x: { id: string }) => [x.id, x]));
    expect(listed[batch[0].id].score).toEqual({ right: of - 1, of });
    expect(listed[other.id].score).toBeNull();
  });

  it('stores the engine\'s verdict, never the page\'s: for several kinds and seeds, the same as the page\'s check() on the same inputs', async () => {
    const s = (await join_(`grades-${kind}`)).json();
    const picks = ALL.filter((x) => x.spec.kind !== 'which-wins').concat(ALL.find((x) => x.spec.kind === 'which-wins')!);
    const records: ReturnType<typeof attempt>[] = [];
    const want: string[] = [];
    for (const { lesson, exercise, spec } of picks) {
      for (const seed of spec.kind === 'which-wins' ? [seedFor(code, s.name, lesson, exercise)] : [seedFor(code, s.name, lesson, exercise), 77, 123_456]) {
        const { right, wrong } = answers(lesson, exercise, seed);
        for (const a of [right, wrong]) {
          // what a page edited to claim "correct" would send: the claim has no field to go in
          records.push(attempt(lesson, exercise, seed, a));
          want.push(pageVerdict(lesson, exercise, seed, a).verdict);
        }
      }
    }
    expect(new Set(picks.map((p) => p.spec.kind)).size).toBeGreaterThanOrEqual(9);
    const got: string[] = [];
    for (let i = 0; i < records.length; i += BATCH_MAX) {
      const r = await send(records.slice(i, i + BATCH_MAX), s.receipt);
      expect(r.statusCode, r.body).toBe(200);
      got.push(...r.json().records.map((x: { verdict: string }) => x.verdict));
    }
    expect(got).toEqual(want);
    expect(want.filter((v) => v === 'correct').length).toBe(records.length / 2);
    const stored = Object.fromEntries((await rows(s.student_id)).map((r) => [r.id, r.verdict]));
    expect(records.map((r) => stored[r.id])).toEqual(want);
    // a claim of the verdict is refused, not stored
    const forged = await send([{ ...attempt('ept-and-npt', 0, 5, '1'), verdict: 'correct' }], s.receipt);
    expect(forged.statusCode).toBe(400);
    expect(forged.json().message).toContain('/records/0/verdict: is not a field');
  }, 60_000);

  it('refuses bad records with 400 or 422 naming the field, and requests without a student\'s receipt', async () => {
    const s = (await join_(`bad-${kind}`)).json();
    const ok = attempt('ept-and-npt', 0, 5, '24');
    const cases: [string, unknown, number, string][] = [
      ['not an object', [1], 400, '/records/0: must be an object'],
      ['no records', { records: [] }, 400, '/records: is empty'],
      ['records not a list', { records: 'x' }, 400, '/records: is required'],
      ['an unknown top field', { records: [ok], verdict: 'correct' }, 400, 'unknown field "verdict"'],
      ['too many', { records: Array.from({ length: BATCH_MAX + 1 }, () => attempt('ept-and-npt', 0, 5, '1')) }, 413, `at most ${BATCH_MAX}`],
      ['unknown type', [{ ...ok, type: 'score' }], 400, '/records/0/type'],
      ['a missing field', [{ ...ok, seed: undefined }], 400, '/records/0/seed: is required'],
      ['a bad id', [{ ...ok, id: 'short' }], 400, '/records/0/id'],
      ['an id twice', [ok, { ...ok }], 400, '/records/1/id: the same id as /records/0/id'],
      ['a bad seed', [{ ...ok, seed: -1 }], 400, '/records/0/seed'],
      ['a seed too large', [{ ...ok, seed: 2 ** 31 }], 400, '/records/0/seed'],
      ['a fractional exercise', [{ ...ok, exercise: 0.5 }], 400, '/records/0/exercise'],
      ['a long answer', [{ ...ok, answer: '1'.repeat(201) }], 400, '/records/0/answer'],
      ['a control character', [{ ...ok, answer: '2\u00004' }], 400, '/records/0/answer: contains the control character U+0000'],
      ['a bad time', [{ ...ok, at: 'yesterday' }], 400, '/records/0/at'],
      ['hint not a boolean', [{ ...ok, hint: 1 }], 400, '/records/0/hint'],
      ['hint_opened not a boolean', [{ ...ok, hint_opened: 'yes' }], 400, '/records/0/hint_opened'],
      ['done not a boolean', [{ id: rid(), type: 'done', lesson: 'ept-and-npt', done: 'yes', at: now() }], 400, '/records/0/done'],
      ['an unknown lesson', [{ ...ok, lesson: 'no-such-lesson' }], 422, '/records/0/lesson: there is no lesson "no-such-lesson"'],
      ['an unknown lesson (done)', [{ id: rid(), type: 'done', lesson: 'no-such-lesson', done: true, at: now() }], 422, '/records/0/lesson'],
      ['no such exercise', [attempt('ept-and-npt', 0, 5, '24'), { ...ok, id: rid(), exercise: 9 }], 422, '/records/1/exercise: lesson "ept-and-npt" has exercises 0 to 5'],
      ['another kind', [{ ...ok, kind: 'compute-hpa' }], 422, '/records/0/kind: exercise 0 of lesson "ept-and-npt" is a count-refs exercise, not compute-hpa'],
    ];
    for (const [what, body, status, needle] of cases) {
      const r = await post('/progress', Array.isArray(body) ? { records: body } : body, s.receipt);
      expect(r.statusCode, `${what}: ${r.body}`).toBe(status);
      expect(r.json().message, what).toContain(needle);
    }
    expect(await rows(s.student_id)).toEqual([]); // a refused batch stores nothing
    const noToken = await send([ok], '');
    expect(noToken.statusCode).toBe(401);
    expect((await send([ok], 'A'.repeat(22))).statusCode).toBe(403);
    expect((await send([ok], teacher)).statusCode).toBe(403); // the teacher is no student
    const other = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'other' } })).json().code;
    expect((await app.inject({ method: 'POST', url: `/api/classes/${other}/progress`, payload: { records: [ok] }, headers: { authorization: `Bearer ${s.receipt}` } })).statusCode).toBe(403);
    expect((await send([ok], s.receipt)).statusCode).toBe(200);
  });

  it('deletes a student with all their records (DELETE students/me), leaving the others\'; the name is free again', async () => {
    const a = (await join_(`leaver-${kind}`)).json();
    const b = (await join_(`stayer-${kind}`)).json();
    await send([attempt('vmfunc', 0, 9, '1'), attempt('vmfunc', 0, 10, '2'), { id: rid(), type: 'done', lesson: 'vmfunc', done: true, at: now() }], a.receipt);
    await send([attempt('vmfunc', 0, 9, '1')], b.receipt);
    const del = (token?: string) => app.inject({ method: 'DELETE', url: `/api/classes/${code}/students/me`, headers: token ? { authorization: `Bearer ${token}` } : {} });
    expect((await del()).statusCode).toBe(401);
    expect((await del(teacher)).statusCode).toBe(403);
    const r = await del(a.receipt);
    expect(r.statusCode, r.body).toBe(200);
    expect(r.json()).toEqual({ deleted: a.student_id, name: a.name, records: 3 });
    expect(await rows(a.student_id)).toEqual([]);
    expect(await rows(b.student_id)).toHaveLength(1);
    expect((await del(a.receipt)).statusCode).toBe(403);
    expect((await send([attempt('vmfunc', 0, 9, '1')], a.receipt)).statusCode).toBe(403);
    expect((await join_(a.name)).statusCode).toBe(201);
  });

  it('grades fast: records per second for cheap kinds, and which-wins per variant (printed)', async () => {
    const s = (await join_(`speed-${kind}`)).json();
    const cheap = ALL.filter((x) => x.spec.kind !== 'which-wins');
    const batch = (k: number) => Array.from({ length: BATCH_MAX }, (_, i) => { const x = cheap[i % cheap.length]; return attempt(x.lesson, x.exercise, 1_000_000 + k * 1000 + i, '1'); });
    await send(batch(0), s.receipt); // the worker has started and warmed up
    const t0 = performance.now();
    const rounds = 6;
    for (let k = 1; k <= rounds; k++) expect((await send(batch(k), s.receipt)).statusCode).toBe(200);
    const perRecord = (performance.now() - t0) / (rounds * BATCH_MAX);
    const ww = ALL.find((x) => x.spec.kind === 'which-wins')!;
    const t1 = performance.now();
    const wwBatch = Array.from({ length: 5 }, (_, i) => attempt(ww.lesson, ww.exercise, 2_000_000 + i, 'ept'));
    expect((await send(wwBatch, s.receipt)).statusCode).toBe(200);
    const perWhichWins = (performance.now() - t1) / wwBatch.length;
    // the same variants again: the engine's answers are kept, so they cost no engine run
    const t2 = performance.now();
    expect((await send(wwBatch.map((r) => ({ ...r, id: rid() })), s.receipt)).statusCode).toBe(200);
    const perKept = (performance.now() - t2) / wwBatch.length;
    console.log(`progress on ${kind}: ${perRecord.toFixed(2)} ms per record over batches of ${BATCH_MAX} new variants (grading and storing, ${Math.round(1000 / perRecord)} records/s); which-wins ${perWhichWins.toFixed(0)} ms per new variant, ${perKept.toFixed(1)} ms per variant graded before`);
    expect(perRecord).toBeLessThan(50);
  }, 60_000);
});
