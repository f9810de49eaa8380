/* One guest mapping and one access, expressed as a scenario for every mode, so that the
 * compare view runs the same translation six ways, twice: cold (the first access of a
 * fresh machine whose tables are all built in advance or all filled on demand, `Tables`,
 * agile's shadow part with them)
 * and warm (the same access again, after the first pass filled whatever was missing and
 * set the A/D bits; no TLB or walk caches, so every access walks).
 * Cycles use the cost model of `vmsim experiment` (wasm-core/docs/model.md 5b, 5c) so the
 * numbers line up with the CLI. */
import type { AccessResult, Mode, Op, Scenario } from '../../../wasm-core/js/types';
import costModel from '../../../wasm-core/data/cost-model.json';
import { hex, hexToBig } from './decode';

/** How every mode's translation structures start (one meaning everywhere: Compare,
 * `vmsim replay --tables`, `vmsim experiment --tables`, model.md 5): "built" in advance
 * (nested tables, the flat table and the shadow tables hold every mapped page: no exit
 * to fill anything), or filled "on-demand" (each mode pays the exits of its first
 * touches: one EPT violation or NPT fault per nested page, one flat fill per frame, one
 * hidden page fault per shadowed page). */
export type Tables = 'built' | 'on-demand';
export const TABLES: Tables[] = ['built', 'on-demand'];
export const DEFAULT_TABLES: Tables = 'built';

export interface CompareInput {
  gva: string;
  gpa: string;
  op: Op;
  user: boolean;
  /** DEFAULT_TABLES when left out. */
  tables?: Tables;
}

export const COMPARE_MODES: Mode[] = ['native', 'ept', 'npt', 'flat', 'shadow', 'agile'];
/** Agile paging in the comparison: the switch at guest level 2 (2 shadow entries, then
 * the 2-D walk of the guest's L2 and L1 tables: 16 references warm). */
export const COMPARE_AGILE_SWITCH = 2;
/** Which access of a compare scenario is which. */
export const COLD = 0;
export const WARM = 1;

/** "a < b = c < d": names ordered by value, ties joined by "=". */
export function ordering(items: { name: string; value: number }[], fmt: (n: number) => string = String): string {
  const sorted = [...items].sort((a, b) => a.value - b.value);
  return sorted.map((x, i) => (i === 0 ? '' : x.value === sorted[i - 1].value ? ' = ' : ' < ') + `${x.name} ${fmt(x.value)}`).join('');
}
export const DEFAULT_COMPARE: CompareInput = { gva: '0x400000', gpa: '0x200000', op: 'read', user: false, tables: DEFAULT_TABLES };

/* Guest tables sit at gpa 0x100000; the first 4 MiB of guest RAM are backed one to one
 * from hpa 0x80000000, and the data page too when it lies above. */
const HOST_BASE = 0x80000000n;
const LOW_PAGES = 1024;

/** What is wrong with the input, as a key of the views namespace (compare.problem.*), or null. */
export function checkCompareInput(inp: CompareInput): 'hex' | 'gpaRange' | 'gpaTables' | 'gvaRange' | null {
  let gva: bigint, gpa: bigint;
  try {
    gva = hexToBig(inp.gva);
    gpa = hexToBig(inp.gpa);
  } catch {
    return 'hex';
  }
  if (gpa >= 1n << 30n) return 'gpaRange';
  if (gpa >= 0x100000n && gpa < 0x110000n) return 'gpaTables';
  if (gva >= 1n << 47n) return 'gvaRange';
  return null;
}

export function compareScenario(mode: Mode, inp: CompareInput): Scenario {
  const gva = hexToBig(inp.gva) & ~0xfffn;
  const gpa = hexToBig(inp.gpa) & ~0xfffn;
  const slots = [{ gpa: '0x0', hpa: hex(HOST_BASE), pages: LOW_PAGES }];
  if (gpa >= BigInt(LOW_PAGES) * 4096n) slots.push({ gpa: hex(gpa), hpa: hex(HOST_BASE + gpa), pages: 1 });
  const s: Scenario = {
    name: `compare-${mode}`,
    mode,
    guest: { paging: '4level', mappings: [{ gva: hex(gva), gpa: hex(gpa) }] },
    // the same access twice: [0] cold, [1] warm
    accesses: [{ gva: inp.gva, op: inp.op, user: inp.user }, { gva: inp.gva, op: inp.op, user: inp.user }],
  };
  // Every mode starts the same way: all structures built, or all filled on first touch.
  const built = (inp.tables ?? DEFAULT_TABLES) === 'built';
  if (mode === 'ept' || mode === 'npt' || mode === 'agile') s.nested = built ? { mappings: slots } : { on_demand: true, mappings: slots };
  if (mode === 'agile') s.agile = { switch_level: COMPARE_AGILE_SWITCH, prefill: built };
  if (mode === 'flat') s.flat = { guest_ram: '0x40000000', prefill: built, mappings: slots };
  if (mode === 'shadow') s.shadow = built ? { prefill: true, mappings: slots } : { mappings: slots };
  if (mode === 'native') s.guest.mappings![0].gpa = hex(HOST_BASE + gpa);
  return s;
}

/** vmsim experiment's cost model, from the data file the engine compiles in
 * (wasm-core/data/cost-model.json, model.md 5c, each value with its source): cycles per
 * access, per page-walk reference, per VM exit (KVM's estimated switch in the published
 * cpuid runs) and per VMFUNC (the published 196 ns / 699 ns ratio applied to the exit,
 * per VMFUNC of a round trip). */
const P = costModel.parameters;
export const COST = {
  perAccess: P.cycles_per_access.value,
  perRef: P.cycles_per_ref.value,
  perExit: P.cycles_per_exit.value,
  perVmfunc: P.cycles_per_vmfunc.value,
};
export function cycles(a: Pick<AccessResult, 'memory_refs' | 'exits'>): number {
  return COST.perAccess + a.memory_refs * COST.perRef + a.exits * COST.perExit;
}
/** The same on the learner's machine: its exit and reference where its hw-lab result
 * measured them (web/src/trace/machine.ts), the default's where not. */
export function cyclesOn(a: Pick<AccessResult, 'memory_refs' | 'exits'>, mine: { exit: number | null; ref: number | null }): number {
  return COST.perAccess + a.memory_refs * (mine.ref ?? COST.perRef) + a.exits * (mine.exit ?? COST.perExit);
}
