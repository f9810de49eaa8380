/* Figures the views and lessons derive from the published ones, each computed in one place
 * so that every tab and lesson says the same number. */
import figures from '../../../wasm-core/data/published-figures.json';

/** A ratio as the lab says it: to one decimal, rounded to the nearest (699/196 = 3.566 → 3.6). */
export function ratio1(a: number, b: number): number {
  return Math.round((a / b) * 10) / 10;
}

/** How many times faster a VMFUNC gate's round trip is than a VMCALL's (ELISA: 699 ns / 196 ns). */
export const VMFUNC_SPEEDUP = ratio1(figures.vmfunc_vs_vmcall.round_trip_ns.vmcall, figures.vmfunc_vs_vmcall.round_trip_ns.vmfunc_gate);
