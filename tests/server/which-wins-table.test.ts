/* The table of which-wins answers the grader ships (web/server/gen/which-wins.json, made by
 * `make` with web/server/which-wins-table.mjs): checked against the engine for every variant
 * of every which-wins exercise the lessons declare, the independent way: the page's own
 * generate() for a seed that opens the variant, the engine's whole results (run(), not the
 * counts the table was made from) and the page's expected(). Then the grader (the built
 * bundle in its worker, as the server runs it) grades a never-seen which-wins record without
 * running the engine, and without a table, or with a stale one, says so and falls back to
 * the engine. Prints the grading time per which-wins record with and without the table. */
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { generate, type ExerciseSpec } from '../../web/src/lessons/exercises';
import { whichWinsKey, whichWinsVariantOf, whichWinsVariants } from '../../web/src/lessons/kinds/which-wins';
import { SPECS } from '../../web/server/grade-entry';
import { GradePool } from '../../web/server/grade.mjs';
import { BUNDLE, TABLE, WASM, readWhichWinsTable, tableInputs } from '../../web/server/which-wins-table.mjs';

const dirs: string[] = [];
let engine: Vmsim;
let answers: Record<string, string>;
beforeAll(async () => {
  if (!existsSync(TABLE)) throw new Error('the which-wins table is not built: make web/server/gen/which-wins.json (make build does it)');
  engine = await loadVmsim({ wasmBinary: readFileSync(WASM) });
  const t = readWhichWinsTable(TABLE, tableInputs(readFileSync(BUNDLE), readFileSync(WASM)));
  if (!t.answers) throw new Error(`the which-wins table is ${t.why}: make web/server/gen/which-wins.json`);
  answers = t.answers;
}, 60_000);
afterAll(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** Every which-wins exercise the lessons declare: its lesson and position. */
const positions = () => Object.entries(SPECS).flatMap(([lesson, specs]) => specs.flatMap((spec, exercise) => (spec.kind === 'which-wins' ? [{ lesson, exercise, spec }] : [])));

/** For each variant of a spec, a seed that opens it (seeds 1..n step through all n). */
function seedsByVariant(spec: ExerciseSpec): Map<string, number> {
  const n = whichWinsVariants(spec).length;
  const out = new Map<string, number>();
  for (let seed = 1; seed <= n; seed++) out.set(whichWinsKey(whichWinsVariantOf(spec, seed)), seed);
  expect(out.size, 'seeds 1..n open every variant').toBe(n);
  return out;
}

const record = (lesson: string, exercise: number, seed: number, answer: string) => ({
  id: randomBytes(16).toString('base64url').slice(0, 22), type: 'attempt', lesson, exercise, kind: 'which-wins', seed, answer, tries: 1, hint: false, shown: false, at: new Date().toISOString(),
});

describe('the which-wins table', () => {
  it('holds the answer the engine\'s whole results give, for every variant of every which-wins exercise the lessons declare', () => {
    const list = positions();
    expect(list.length, 'lessons with which-wins').toBeGreaterThanOrEqual(3);
    // the same stream in two lessons is run once (by its scenarios' bytes, not by the table's key)
    const byStream = new Map<string, string>();
    const keys = new Set<string>();
    let checked = 0;
    for (const { lesson, exercise, spec } of list) {
      for (const [key, seed] of seedsByVariant(spec)) {
        const ex = generate(spec, seed); // the page's own exercise for that seed
        const stream = createHash('sha256').update(JSON.stringify(ex.scenarios)).digest('hex');
        let want = byStream.get(stream);
        if (want === undefined) { want = ex.expected(ex.scenarios.map((s) => engine.run(s))); byStream.set(stream, want); }
        expect(answers[key], `${lesson} #${exercise}, seed ${seed} (${key})`).toBe(want);
        keys.add(key);
        checked++;
      }
    }
    // nothing in the table that no lesson opens
    expect(Object.keys(answers).sort()).toEqual([...keys].sort());
    expect(byStream.size).toBe(keys.size);
    console.log(`which-wins table: ${checked} lesson variants (${keys.size} streams) agree with the engine's whole results`);
  }, 600_000);

  it('grades a never-seen which-wins record with no engine run, in the worker as the server does; the page\'s verdicts', async () => {
    const pool = new GradePool();
    try {
      const { lesson, exercise, spec } = positions()[0];
      const seed = 900_000 + Math.floor(Math.random() * 99_999); // a seed as seedFor hands out
      const want = answers[whichWinsKey(whichWinsVariantOf(spec, seed))];
      const wrong = ['shadow', 'ept', 'npt'].find((m) => !want.split(' or ').includes(m))!;
      const got = await pool.grade([record(lesson, exercise, seed, want), record(lesson, exercise, seed + 1, ''), record(lesson, exercise, seed, wrong)]);
      expect(pool.whichWinsTable).toBe('loaded');
      expect(got[0]).toEqual({ verdict: 'correct', expected: want });
      expect(got[1]).toMatchObject({ verdict: 'empty' });
      expect(got[2]).toEqual({ verdict: 'wrong', expected: want });
      // and the page's check for the same seed and answer agrees
      const ex = generate(spec, seed);
      expect(ex.expected(ex.scenarios.map((s) => engine.run(s)))).toBe(want);
      expect(pool.engineRuns, 'which-wins graded without the engine').toBe(0);
      // the other kinds still run the engine (the counter counts)
      const other = Object.entries(SPECS).flatMap(([l, specs]) => specs.flatMap((s, i) => (s.kind === 'count-refs' ? [{ l, i }] : [])))[0];
      await pool.grade([{ ...record(other.l, other.i, 5, '1'), kind: 'count-refs' }]);
      expect(pool.engineRuns).toBe(1);
    } finally { await pool.close(); }
  }, 120_000);

  it('missing or stale, is not used: the grader says so in one line and works which-wins out with the engine', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vmemlab-ww-')); dirs.push(dir);
    const stale = join(dir, 'stale.json');
    const t = JSON.parse(readFileSync(TABLE, 'utf8'));
    // a table made before the engine changed, whose answers were all "npt"
    writeFileSync(stale, JSON.stringify({ ...t, inputs: { ...t.inputs, engine: `sha256:${'0'.repeat(64)}` }, answers: Object.fromEntries(Object.keys(t.answers).map((k) => [k, 'npt'])) }));
    copyFileSync(TABLE, join(dir, 'copy.json'));
    const { lesson, exercise, spec } = positions()[0];
    const seed = 3;
    const want = answers[whichWinsKey(whichWinsVariantOf(spec, seed))];
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      for (const [file, state] of [[join(dir, 'none.json'), 'missing'], [stale, 'stale: made from another engine (vmsim.wasm was rebuilt since)']] as const) {
        const pool = new GradePool({ table: pathToFileURL(file) });
        try {
          const [r] = await pool.grade([record(lesson, exercise, seed, want)]);
          expect(r).toEqual({ verdict: 'correct', expected: want });
          expect(pool.whichWinsTable).toBe(state);
          expect(pool.engineRuns).toBe(1);
          expect(warn.mock.calls.map((c) => String(c[0])).filter((l) => l.includes(file) && l.includes(state) && l.includes('graded with the engine')), 'one line').toHaveLength(1);
        } finally { await pool.close(); }
      }
      // a copy of the real one is used
      const pool = new GradePool({ table: pathToFileURL(join(dir, 'copy.json')) });
      try {
        await pool.grade([record(lesson, exercise, seed, want)]);
        expect(pool.whichWinsTable).toBe('loaded');
        expect(pool.engineRuns).toBe(0);
      } finally { await pool.close(); }
    } finally { warn.mockRestore(); }
  }, 120_000);

  it('grading time per never-seen which-wins record, with and without the table (printed, not asserted)', async () => {
    // the lesson whose which-wins has all three programs: 72 variants, each graded once
    const { lesson, exercise, spec } = positions().reduce((a, b) => (whichWinsVariants(b.spec).length > whichWinsVariants(a.spec).length ? b : a));
    const first = 1_000_000;
    const seeds = [...seedsByVariant(spec)].filter(([key]) => key !== whichWinsKey(whichWinsVariantOf(spec, first))).map(([, seed]) => seed);
    const figures: string[] = [];
    for (const table of [TABLE, null]) {
      const pool = new GradePool({ table });
      try {
        await pool.grade([record(lesson, exercise, first, '')]); // the worker started; that variant is not among those timed
        const t0 = performance.now();
        const out = await pool.grade(seeds.map((s) => record(lesson, exercise, s, 'ept')));
        const ms = (performance.now() - t0) / out.length;
        expect(out.every((r) => 'verdict' in r)).toBe(true);
        figures.push(`${table ? 'with the table' : 'with the engine (no table)'}: ${ms.toFixed(2)} ms a record, ${pool.engineRuns} engine runs`);
      } finally { await pool.close(); }
    }
    console.log(`which-wins, ${seeds.length} never-seen variants through the grading worker: ${figures.join('; ')} (this machine, shared)`);
  }, 300_000);
});
