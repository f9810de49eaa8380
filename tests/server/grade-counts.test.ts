/* The grader's cheap path (web/server/grade-entry.ts, COUNTS_ONLY): which-wins is graded from
 * the engine's counts (vmsim_counts: each access's memory references and exits, no walks)
 * instead of its whole results. Checked here against the whole results, variant by variant:
 * for every lesson's which-wins exercise (its own workloads) and every workload alone, seeds
 * spread over what a class hands out (seedFor: 1 to 1,000,000) and the small ones, the
 * answer from the counts is the answer from run(); and the counts are run()'s, access by
 * access. Also prints how long a variant takes each way. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { generate, type ExerciseSpec } from '../../web/src/lessons/exercises';
import { COUNTS_ONLY, SPECS, countsAsResult } from '../../web/server/grade-entry';
import { root } from './helpers';

let engine: Vmsim;
beforeAll(async () => { engine = await loadVmsim({ wasmBinary: readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) }); });

/** Specs of the kinds graded from counts: each lesson's, and each workload alone. */
function specs(): { what: string; spec: ExerciseSpec }[] {
  const out: { what: string; spec: ExerciseSpec }[] = [];
  for (const [lesson, list] of Object.entries(SPECS)) list.forEach((spec, i) => { if (COUNTS_ONLY.has(spec.kind)) out.push({ what: `${lesson} #${i}`, spec }); });
  for (const w of ['mcf', 'gcc', 'memcached']) out.push({ what: `which-wins ${w}`, spec: { kind: 'which-wins', workloads: [w] } });
  return out;
}
// seeds: small ones (in a row: every parameter combination) and ones spread over seedFor's range
const SEEDS = [1, 2, 3, ...Array.from({ length: 2 }, (_, i) => 1 + Math.floor(((i + 0.5) / 2) * 1_000_000) + i * 7919)];

describe('which-wins graded from the engine\'s counts', () => {
  it('gives the answer the whole results give, for every lesson\'s which-wins and every workload', () => {
    expect(specs().length).toBeGreaterThan(3);
    let full = 0; let cheap = 0; let n = 0;
    for (const { what, spec } of specs()) {
      for (const seed of SEEDS) {
        const ex = generate(spec, seed);
        let t0 = performance.now();
        const results = ex.scenarios.map((s) => engine.run(s));
        const want = ex.expected(results);
        full += performance.now() - t0;
        t0 = performance.now();
        const counts = ex.scenarios.map((s) => engine.runCounts(s));
        const got = ex.expected(counts.map(countsAsResult));
        cheap += performance.now() - t0;
        n++;
        expect(got, `${what}, seed ${seed}`).toBe(want);
        // access by access, the counts are run()'s
        counts.forEach((c, k) => {
          expect(c.memory_refs).toEqual(results[k].accesses.map((a) => a.memory_refs));
          expect(c.exits).toEqual(results[k].accesses.map((a) => a.exits));
          expect(c.totals.memory_refs).toBe(results[k].totals.memory_refs);
        });
      }
    }
    console.log(`which-wins: ${n} variants, ${(full / n).toFixed(1)} ms a variant from whole results, ${(cheap / n).toFixed(1)} ms from counts (this machine, shared)`);
  }, 600_000);
});
