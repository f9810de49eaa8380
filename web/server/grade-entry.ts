/* What the class server grades exercise attempts with, bundled for Node into
 * web/server/gen/grade.mjs (`make web/server/gen/grade.mjs`: vite's SSR build with
 * grade.vite.config.mjs; grade.mjs runs it in a worker thread). It is the page's own code:
 * the exercise generator and check (web/src/lessons/exercises.ts), the exercises the
 * lessons declare (lessons/en/*.md, read by content.ts; the Japanese and Chinese lessons
 * declare the same ones, tests/lessons checks) and the engine's JS wrapper over the same
 * vmsim.wasm the page loads. So a verdict the server stores is the one the page shows for
 * the same lesson, exercise, seed and answer, whatever the page claimed. */
import { loadVmsim, type Counts, type Result, type Scenario } from '../../wasm-core/js/vmsim';
import { LESSONS } from '../src/lessons/content';
import { EXERCISE_KINDS, answered, generate, gridScore, judge, type Exercise, type ExerciseSpec } from '../src/lessons/exercises';
import { countsAsResult, whichWinsAnswer, whichWinsInput, whichWinsKey, whichWinsScenarios, whichWinsVariantOf, whichWinsVariants } from '../src/lessons/kinds/which-wins';

export { seedFor } from '../src/progress/seed';
export { EXERCISE_KINDS, whichWinsKey, whichWinsVariantOf, whichWinsVariants };

/** Each lesson's exercises in the order the page numbers them (0, 1, ...), by lesson id. */
export const SPECS: Record<string, ExerciseSpec[]> = Object.fromEntries(
  Object.values(LESSONS.en).map((l) => [l.meta.id, l.parts.flatMap((p) => (p.type === 'exercise' ? [p.spec] : []))]),
);

/**
 * Kinds whose answer weighs only each access's memory references and exits (which-wins:
 * three streams of about 2,000 accesses scored 40 a reference, 1,700 an exit). The server
 * works them out from the engine's counts (vmsim_counts: the same walks without their
 * steps, a few KB instead of some MB of results), 40-160 ms a variant instead of up to a
 * second: at build time into the table of answers (whichWinsAnswers), and while grading
 * only when that table is missing or stale. tests/server/grade-counts.test.ts checks,
 * variant by variant, that the counts give the answer the whole results give.
 */
export const COUNTS_ONLY: ReadonlySet<string> = new Set(['which-wins']);

export { countsAsResult };

/** The engine's results for an exercise's scenarios as the grader takes them. */
export function resultsFor(engine: { run(s: Scenario): Result; runCounts(s: Scenario): Counts }, kind: string, scenarios: Scenario[]): Result[] {
  return COUNTS_ONLY.has(kind) ? scenarios.map((s) => countsAsResult(engine.runCounts(s))) : scenarios.map((s) => engine.run(s));
}

/** Every which-wins exercise the lessons declare (a lesson's spec: its own programs). */
export const whichWinsSpecs = (): ExerciseSpec[] => Object.values(SPECS).flat().filter((s) => s.kind === 'which-wins');

/**
 * The table of which-wins answers: for every variant of every which-wins exercise the
 * lessons declare, the mode the engine finds cheapest (by whichWinsKey; a variant is a fixed
 * stream whichever lesson opens it, so the 162 positions are 72 variants). Made at build
 * time (web/server/which-wins-table.mjs writes it to web/server/gen/which-wins.json): the
 * server then grades which-wins by looking its answer up, without the engine.
 */
export async function whichWinsAnswers(wasmBinary: Uint8Array): Promise<Record<string, string>> {
  const engine = await loadVmsim({ wasmBinary });
  const answers: Record<string, string> = {};
  for (const spec of whichWinsSpecs()) {
    for (const v of whichWinsVariants(spec)) {
      const key = whichWinsKey(v);
      if (key in answers) continue;
      const { scenarios, warm } = whichWinsScenarios(v);
      answers[key] = whichWinsAnswer(resultsFor(engine, 'which-wins', scenarios), warm);
    }
  }
  return answers;
}

export interface GradeInput { type: 'attempt' | 'done'; lesson: string; exercise?: number; kind?: string; seed?: number; answer?: string; done?: boolean }
/** score: a grid's cells right of all (walk-grid, the partial credit). */
export type Graded = { verdict: 'correct' | 'wrong' | 'empty'; expected: string; score?: { right: number; of: number } } | { verdict: 'done' | 'undone' } | { problem: string; field: string };

/**
 * The grader: grade(record) says what the page's check() says for the record's lesson,
 * exercise, seed and answer, or what is wrong with the record (field: the record's field
 * that is wrong). which-wins is looked up in `whichWins` (whichWinsAnswers' table, when
 * given); other kinds, and a which-wins variant the table lacks, run the engine, and its
 * answer for a variant is kept (the last `cacheMax` variants), so a class retrying one
 * variant runs the engine once for it. `engineRuns` counts the variants the engine worked out.
 */
export async function createGrader(wasmBinary: Uint8Array, { cacheMax = 4096, whichWins = null }: { cacheMax?: number; whichWins?: Readonly<Record<string, string>> | null } = {}) {
  const engine = await loadVmsim({ wasmBinary });
  let engineRuns = 0;
  // Only what answered() and judge() read is kept (the input's type and choices): a
  // which-wins variant's scenarios hold some 6,000 accesses.
  const cache = new Map<string, { ex: Pick<Exercise, 'input'>; expected: string }>();
  const variant = (lesson: string, exercise: number, spec: ExerciseSpec, seed: number) => {
    if (spec.kind === 'which-wins' && whichWins) {
      // the variant the seed opens, named without making its streams: a lookup
      const expected = whichWins[whichWinsKey(whichWinsVariantOf(spec, seed))];
      if (expected !== undefined) return { ex: { input: whichWinsInput() }, expected };
    }
    // which-wins has a few dozen variants that many seeds share (each a fixed stream, named
    // by its prompt): kept by variant, a class runs the engine once for each
    const ww = spec.kind === 'which-wins' ? generate(spec, seed) : null;
    const key = ww ? `${JSON.stringify(spec)}\n${JSON.stringify(ww.prompt)}` : `${lesson}\n${exercise}\n${seed}`;
    let hit = cache.get(key);
    if (hit) { cache.delete(key); cache.set(key, hit); return hit; }
    const ex = ww ?? generate(spec, seed);
    engineRuns++;
    hit = { ex: { input: ex.input }, expected: ex.expected(resultsFor(engine, spec.kind, ex.scenarios)) };
    if (cache.size >= cacheMax) cache.delete(cache.keys().next().value!);
    cache.set(key, hit);
    return hit;
  };
  return {
    version: engine.version,
    get engineRuns() { return engineRuns; },
    grade(r: GradeInput): Graded {
      const specs = SPECS[r.lesson];
      if (!specs) return { field: 'lesson', problem: `there is no lesson "${r.lesson}"; lessons are ${Object.keys(SPECS).join(', ')}` };
      if (r.type === 'done') return { verdict: r.done ? 'done' : 'undone' };
      const spec = specs[r.exercise!];
      if (!spec) return { field: 'exercise', problem: `lesson "${r.lesson}" has exercises 0 to ${specs.length - 1}; there is no exercise ${r.exercise}` };
      if (spec.kind !== r.kind) return { field: 'kind', problem: `exercise ${r.exercise} of lesson "${r.lesson}" is a ${spec.kind} exercise, not ${r.kind}` };
      const { ex, expected } = variant(r.lesson, r.exercise!, spec, r.seed!);
      if (!answered(ex, r.answer ?? '')) return { verdict: 'empty', expected };
      const verdict = judge(ex, expected, r.answer!) ? 'correct' : 'wrong';
      if (ex.input.type !== 'grid') return { verdict, expected };
      const { right, of } = gridScore(ex.input, expected, r.answer!);
      return { verdict, expected, score: { right, of } };
    },
  };
}
