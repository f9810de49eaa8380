import type { Counts, Result, Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, comboOf, type ExerciseSpec, type Exercise } from '../shape';

/** The engine's counts (runCounts: each access's memory references and exits, no walks)
 * in the shape expected() and whichWinsCosts() read: all that which-wins weighs. */
export const countsAsResult = (c: Counts) =>
  ({ accesses: c.memory_refs.map((memory_refs, i) => ({ memory_refs, exits: c.exits[i] })), totals: c.totals }) as unknown as Result;

/* Which mode pays least for a program: the same stream run by the engine under shadow
 * paging, EPT and NPT, scored with the cost model the prompt states (that of `vmsim
 * experiment`: 40 cycles a memory reference, 1,700 a VM exit). What decides it is a
 * balance the learner has to work out: a TLB miss costs shadow paging about one
 * reference and a 2-D walk two or three (the data lie in 256 scattered 2 MiB regions, more
 * than the nested TLB holds), while only shadow paging exits, for page-table writes and
 * for switches to address spaces outside its CR3-target values. So the TLB's size (how
 * many misses), the interval between updates or switches and the number of processes
 * (how many exits) each move the winner, and of the two nested hosts the one with 2 MiB
 * nested pages is the cheaper (the 4 KiB one never wins). The variants are a finite list
 * (whichWinsVariants), each a fixed stream: a variant's answer depends on nothing but the
 * list's entry, so a table of them is worked out ahead (72 for the three programs: the class
 * server grades from it, web/server/which-wins-table.mjs). */

export const WHICH_WINS = {
  pages: 256, accesses: 1000, cr3Targets: 2, refCycles: 40, exitCycles: 1700,
  tlb: [32, 128, 256],
  every: { mcf: [40, 150, 600], gcc: [20, 60, 150], memcached: [10, 25] } as Record<string, number[]>,
  processes: { memcached: [2, 6, 12] } as Record<string, number[]>,
};
const PROGRAMS = ['mcf', 'gcc', 'memcached'];

export interface WhichWinsVariant { workload: string; big: 'ept' | 'npt'; tlb: number; every: number; processes: number }

/** Every variant of a which-wins spec, in the order seeds step through them. */
export function whichWinsVariants(spec: ExerciseSpec): WhichWinsVariant[] {
  const out: WhichWinsVariant[] = [];
  for (const workload of spec.workloads ?? PROGRAMS) {
    const every = WHICH_WINS.every[workload];
    if (!every) throw new Error(`which-wins: unknown program "${workload}"; programs are ${PROGRAMS.join(', ')}`);
    for (const big of ['ept', 'npt'] as const)
      for (const tlb of WHICH_WINS.tlb)
        for (const e of every)
          for (const processes of WHICH_WINS.processes[workload] ?? [1]) out.push({ workload, big, tlb, every: e, processes });
  }
  return out;
}

/** The variant a seed opens: generate() and the server's table of answers both ask this, so
 * they never disagree. */
export function whichWinsVariantOf(spec: ExerciseSpec, seed: number): WhichWinsVariant {
  const variants = whichWinsVariants(spec);
  return variants[comboOf(seed, variants.length)];
}

/** A variant's name in the table of answers: what its stream depends on, and nothing else. */
export const whichWinsKey = (v: WhichWinsVariant) => `${v.workload} ${v.big} tlb=${v.tlb} every=${v.every} processes=${v.processes}`;

/** What the learner answers with: one of the three modes, for every variant. */
export const WHICH_WINS_MODES = ['shadow', 'ept', 'npt'] as const;
export const whichWinsInput = (): Exercise['input'] => ({ type: 'choice', choices: [...WHICH_WINS_MODES] });

const gvaOf = (p: number) => 0x40000000n + BigInt(p) * 4096n;
// Each page in a 2 MiB region of its own (and at its own offset in it): the nested TLB's
// 64 entries cannot hold the 256 regions, so a 2-D walk pays a nested walk for the data.
const gpaOf = (p: number) => 0x400000n + BigInt(p) * 0x200000n + BigInt(p % 512) * 4096n;

/** The scenarios of one variant: one stream, under shadow paging, EPT and NPT. */
export function whichWinsScenarios(v: WhichWinsVariant): { scenarios: Scenario[]; warm: number } {
  const { pages, accesses: n, cr3Targets } = WHICH_WINS;
  const spaces = v.workload === 'memcached' ? v.processes : 1;
  const accesses: Scenario['accesses'] = [];
  // warm-up (not counted): every page once in every address space, so the TLB starts full
  for (let a = 0; a < spaces; a++) {
    if (spaces > 1) accesses.push({ mov_cr3: a });
    for (let p = 0; p < pages; p++) accesses.push({ gva: hex(gvaOf(p) + 64n), op: 'read' });
  }
  const warm = accesses.length;
  // the same program for every variant of it: only the intervals, the TLB and the hosts change
  const r = rng(0x5eed + PROGRAMS.indexOf(v.workload));
  let cur = spaces - 1;
  for (let i = 0; i < n; i++) {
    const p = Math.floor(r() * pages);
    if (v.workload !== 'memcached' && i % v.every === v.every - 1) {
      const set = Math.floor(i / v.every) % 2 === 0;
      accesses.push({ pte_write: { gva: hex(gvaOf(p)), level: 1, set: set ? '0x200' : '0x0', clear: set ? '0x0' : '0x200' } });
    } else if (v.workload === 'memcached' && i % v.every === v.every - 1) {
      cur = (cur + 1) % spaces;
      accesses.push({ mov_cr3: cur });
    } else accesses.push({ gva: hex(gvaOf(p) + 64n), op: 'read' });
  }
  const mappings = Array.from({ length: pages }, (_, p) => ({ gva: hex(gvaOf(p)), gpa: hex(gpaOf(p)) }));
  // guest tables at gpa 0x100000 in the first 2 MiB; the data pages after them
  const small = [{ gpa: '0x0', hpa: '0x80000000', pages: 512 },
    ...Array.from({ length: pages }, (_, p) => ({ gpa: hex(gpaOf(p)), hpa: hex(0x100000000n + BigInt(p) * 4096n) }))];
  const regions = Number((gpaOf(pages - 1) >> 21n) + 1n);
  const scenarios = (['shadow', 'ept', 'npt'] as const).map((mode) => ({
    name: `exercise-which-${mode}`, mode,
    guest: { paging: '4level', address_spaces: spaces, ...(spaces > 1 ? { pcid: true } : {}), mappings },
    ...(mode === 'shadow' ? { shadow: { mappings: small, prefill: true, cr3_targets: cr3Targets } }
      : { nested: { mappings: mode === v.big ? [{ gpa: '0x0', hpa: '0x80000000', page: '2M', pages: regions }] : small } }),
    caches: { preset: 'x86-server', tlb: { entries: v.tlb, ways: 4 } },
    accesses,
  }) as unknown as Scenario);
  return { scenarios, warm };
}

export function whichWins(spec: ExerciseSpec, seed: number): Exercise {
  const v = whichWinsVariantOf(spec, seed);
  const { scenarios, warm } = whichWinsScenarios(v);
  const page = (m: 'ept' | 'npt') => (m === v.big ? '2 MiB' : '4 KiB');
  const story = msg(`whichWins.story.${v.workload}`, { every: v.every, processes: v.processes, targets: WHICH_WINS.cr3Targets });
  return {
    spec, seed, scenarios, input: whichWinsInput(), walkAccess: scenarios[0].accesses.length - 1,
    prompt: msg('whichWins.prompt', { story, tlb: v.tlb, pages: WHICH_WINS.pages, accesses: WHICH_WINS.accesses,
      eptPage: page('ept'), nptPage: page('npt'), ref: WHICH_WINS.refCycles, exit: WHICH_WINS.exitCycles }),
    nudge: msg('whichWins.nudge'), hint: msg('whichWins.hint'),
    expected: (results) => whichWinsAnswer(results, warm),
  };
}

/** The mode that pays least over the three results (shadow, EPT, NPT), or two that tie. */
export function whichWinsAnswer(results: { accesses: { memory_refs: number; exits: number }[] }[], warm: number): string {
  const cost = whichWinsCosts(results, warm);
  const best = Math.min(...cost);
  return WHICH_WINS_MODES.filter((_, k) => cost[k] === best).join(' or ');
}

/** Each mode's cycles after the warm-up: 40 a memory reference, 1,700 a VM exit. */
export function whichWinsCosts(results: { accesses: { memory_refs: number; exits: number }[] }[], warm: number): number[] {
  return results.map((res) => res.accesses.slice(warm)
    .reduce((c, a) => c + a.memory_refs * WHICH_WINS.refCycles + a.exits * WHICH_WINS.exitCycles, 0));
}
