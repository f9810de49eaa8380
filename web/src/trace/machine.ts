/* "Your machine": a hw-lab result (hw-lab/schema/result.schema.json) turned into the cost
 * model's numbers, each with where in the result it comes from, so that the replay's
 * counts can be priced on the learner's own machine beside the default preset. The
 * counts do not change (the caches stay the preset's); only what an exit and a
 * page-walk reference cost does:
 * - an exit: the cpuid sample's minimum less the timer's own minimum, measured inside a
 *   VM (cpuid always exits there); on bare metal there is no exit to measure and the
 *   default stays;
 * - a page-walk reference: the pointer chase at its largest working set, 4 KiB pages
 *   less transparent huge pages, per access: a 4 KiB walk reads one level more than a
 *   2 MiB one (with the walk caches holding the levels above, that level is the one
 *   that misses);
 * - the page sizes the result's kernel reports. */
import type { ReplayReport } from '../../../wasm-core/js/replay';

interface Metric { name: string; min?: number; median?: number }
interface Case { name: string; status?: string; params?: Record<string, unknown>; metrics?: Metric[] }
interface Bench { name: string; cases?: Case[] }
export interface HwResult {
  probe?: { cpu?: { model?: string }; virtualization?: { in_vm?: boolean; hypervisor?: string | null };
    memory?: { base_page_bytes?: number; huge_page_bytes?: number; thp_enabled?: string } };
  timer?: { unit?: string; freq_hz?: number };
  benchmarks?: Bench[];
}

export interface MachineCost {
  /** Cycles per VM exit, or null when the result measured none (bare metal). */
  exit: number | null;
  exitFrom: string | null;
  /** Cycles per page-walk reference, or null when the pointer chase did not give one. */
  ref: number | null;
  refFrom: string | null;
  cpu: string;
  inVm: boolean;
  basePage: number | null;
  hugePage: number | null;
  thp: string | null;
}

const metric = (c: Case | undefined, name: string) => c?.metrics?.find((m) => m.name === name);
const ok = (c: Case | undefined) => c && (c.status === undefined || c.status === 'ok');

/** The cost model's numbers from a hw-lab result; throws when the file is not one. */
export function machineFromResult(r: HwResult): MachineCost {
  if (!r || typeof r !== 'object' || !Array.isArray(r.benchmarks) || !r.probe) throw new Error('not a hw-lab result');
  if (r.timer?.unit && r.timer.unit !== 'tsc_cycles') throw new Error('the result is timed in ' + r.timer.unit + ', not TSC cycles');
  const bench = (n: string) => r.benchmarks!.find((b) => b.name === n);
  const inVm = !!r.probe.virtualization?.in_vm;
  let exit: number | null = null, exitFrom: string | null = null;
  const cpuid = bench('cpuid_exit');
  const leaf = cpuid?.cases?.find((c) => c.name.startsWith('cpuid') && ok(c));
  const timer = cpuid?.cases?.find((c) => c.name === 'timer_overhead' && ok(c));
  const cm = metric(leaf, 'cycles')?.min, tm = metric(timer, 'cycles')?.min;
  if (inVm && cm !== undefined && tm !== undefined && cm > tm) {
    exit = cm - tm;
    exitFrom = `cpuid_exit ${leaf!.name} min ${cm} - timer_overhead min ${tm}`;
  }
  let ref: number | null = null, refFrom: string | null = null;
  const chase = bench('ptrchase')?.cases?.filter(ok) ?? [];
  const ws = (c: Case) => Number(c.params?.working_set_bytes ?? 0);
  const small = chase.filter((c) => c.name.startsWith('4k_'));
  const largest = small.sort((a, b) => ws(b) - ws(a))[0];
  const huge = largest && chase.find((c) => c.name.startsWith('thp_') && ws(c) === ws(largest));
  const a4 = metric(largest, 'access')?.median, a2 = metric(huge, 'access')?.median;
  if (a4 !== undefined && a2 !== undefined && a4 > a2) {
    ref = Math.round((a4 - a2) * 10) / 10;
    refFrom = `ptrchase ${largest!.name} median ${a4.toFixed(1)} - ${huge!.name} median ${a2.toFixed(1)}`;
  }
  const mem = r.probe.memory ?? {};
  return {
    exit, exitFrom, ref, refFrom, cpu: r.probe.cpu?.model ?? '', inVm,
    basePage: mem.base_page_bytes ?? null, hugePage: mem.huge_page_bytes ?? null, thp: mem.thp_enabled ?? null,
  };
}

/** Each mode's overhead against native with the machine's costs in place of the
 * report's (the counts are the report's own): mode -> percent. */
export function overheadOn(report: ReplayReport, m: MachineCost): Record<string, number> {
  const c = report.cost_model;
  const perExit = m.exit ?? c.cycles_per_exit;
  // the machine's own reference cost when it measured one; else the report's (by where found)
  const refCycles = (x: ReplayReport['modes'][number]) =>
    m.ref !== null ? x.refs * m.ref : x.ref_cycles ?? x.refs * c.cycles_per_ref;
  const cycles = (x: ReplayReport['modes'][number]) =>
    x.accesses * c.cycles_per_access + refCycles(x) + x.exits * perExit + x.tlb_misses * c.refill_trap;
  const native = report.modes.find((x) => x.mode === 'native');
  const out: Record<string, number> = {};
  if (!native) return out;
  const base = cycles(native);
  for (const x of report.modes) out[x.mode] = base > 0 ? (100 * (cycles(x) - base)) / base : 0;
  return out;
}
