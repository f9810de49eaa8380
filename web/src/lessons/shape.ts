/* The shape every exercise kind shares (kinds/*.ts, one file a kind): what a generated
 * exercise holds, the seeded choices its parameters come from, and the helpers several
 * kinds use to build scenarios and say events. */
import type { Scenario, Result } from '../../../wasm-core/js/vmsim';

/** A sentence to say, as an i18next key (namespace `exercises`) with its values; a value
 * may itself be a Msg (a phrase said in the same language) or a list of them (said one
 * after the other, numbered, with the language's separator). */
export interface Msg { key: string; values?: Record<string, string | number | Msg | Msg[]> }
export const msg = (key: string, values?: Msg['values']): Msg => ({ key, values });

export type ExerciseKind = 'compute-hpa' | 'count-refs' | 'predict-exit' | 'predict-bits' | 'flat-table-size' | 'which-wins'
  | 'shadow-exits' | 'flat-walk' | 'vmfunc-switch' | 'cache-hits' | 'agile-walk' | 'walk-grid';
export const EXERCISE_KINDS: ExerciseKind[] = ['compute-hpa', 'count-refs', 'predict-exit', 'predict-bits', 'flat-table-size', 'which-wins',
  'shadow-exits', 'flat-walk', 'vmfunc-switch', 'cache-hits', 'agile-walk', 'walk-grid'];

export interface ExerciseSpec {
  kind: ExerciseKind;
  mode?: string;
  workloads?: string[];
}

export interface Exercise {
  spec: ExerciseSpec;
  seed: number;
  prompt: Msg;
  /** What the learner types or picks. */
  input: { type: 'hex' } | { type: 'number'; unit?: Unit } | { type: 'choice'; choices: string[] } | GridInput;
  /** Help in two steps: a nudge first, then the method (`hint`); neither says the answer. */
  nudge: Msg;
  hint: Msg;
  /** The scenarios the engine runs to find the answer (one, or one per mode to compare). */
  scenarios: Scenario[];
  /** Turns the engine's results into the expected answer, as the learner would write it. */
  expected: (results: Result[]) => string;
  /** Which access of the first scenario the walk shown after checking is (default 0). */
  walkAccess?: number;
  /** The variant of a kind that asks several questions (for tests and the page's data-variant). */
  variant?: string;
}

/** A grid to fill in (kinds/walk-grid.ts): one table a reference, from `options`, then an
 * address at each of `addresses`; answered as "n4 n3 ... | 0x... 0x...". */
export interface GridInput { type: 'grid'; refs: number; options: string[]; addresses: { ref: number; what: 'gpa' | 'hpa' }[] }

export interface Verdict {
  correct: boolean;
  expected: string;
  results: Result[];
  /** A grid's cells right of all of them, and which (partial credit). */
  score?: { right: number; of: number; cells: boolean[] };
  /** Said when the answer's unit is not the one asked for ("8 KiB" where MiB is asked). */
  unitNote?: Msg;
}

/** What a number answer counts: memory references, VM exits, cache hits, or a size in MiB. */
export type Unit = 'refs' | 'exits' | 'hits' | 'MiB';

export function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const hex = (n: bigint | number) => '0x' + BigInt(n).toString(16);
export const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
export const page4k = (r: () => number, lo: number, hi: number) => BigInt(lo + Math.floor(r() * ((hi - lo) / 4096)) * 4096);
const gcd = (a: number, b: number): number => (b ? gcd(b, a % b) : a);

/** One of `n` combinations of an exercise's parameters for a seed. Seeds in a row step
 * through all n combinations before any comes again (a stride coprime with n), so "Another
 * one" does not ask the same question twice within n tries. */
export function comboOf(seed: number, n: number): number {
  let stride = Math.max(1, Math.round(n * 0.618));
  while (gcd(stride, n) !== 1) stride++;
  const i = (((seed - 1) % n) + n) % n;
  return (i * stride + Math.floor(n / 3)) % n;
}
/** The combination's digits, one per parameter with that many values. */
export function digits(seed: number, sizes: number[]): number[] {
  let i = comboOf(seed, sizes.reduce((a, b) => a * b, 1));
  return sizes.map((d) => { const k = i % d; i = Math.floor(i / d); return k; });
}

/** Guest tables live at gpa 0x100000 and are backed with the first 2 MiB of guest RAM. */
export function nestedFor(mode: string, extra: { gpa: string; hpa: string; page?: '4K' | '2M' | '1G'; pages?: number }[]) {
  const maps = [{ gpa: '0x0', hpa: '0x40000000', pages: 512 }, ...extra];
  if (mode === 'ept' || mode === 'npt') return { nested: { mappings: maps } };
  if (mode === 'flat') return { flat: { guest_ram: '0x40000000', prefill: true, mappings: maps.map(({ gpa, hpa, pages }) => ({ gpa, hpa, pages: pages ?? 1 })) } };
  if (mode === 'shadow') return { shadow: { mappings: maps.map(({ gpa, hpa, pages }) => ({ gpa, hpa, pages: pages ?? 1 })) } };
  return {};
}
/* The events of a sequence exercise, as the engine takes them and as the prompt says them. */
export const PAGE = (base: bigint, i: number) => hex(base + BigInt(i) * 4096n);
export type Ev = { access: Scenario['accesses'][number]; words: Msg };
export const evRead = (gva: string): Ev => ({ access: { gva, op: 'read' }, words: msg('ev.read', { gva }) });
export const evWrite = (gva: string): Ev => ({ access: { gva, op: 'write' }, words: msg('ev.write', { gva }) });
export const lastIsAccess = (evs: Ev[]) => { const a = evs[evs.length - 1]?.access; return !!a && 'gva' in a && 'op' in a; };
