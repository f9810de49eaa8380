/* One interface over the two live paging formats (32-bit and PAE) for the page. */
import type { Scenario } from '../../../wasm-core/js/types';
import type { CpuRegs } from './guestDriver';
import { buildScenario, realPt, snapshotTables, tablePages, type BuildOptions, type TableSnapshot } from './liveTables';
import { buildScenarioPae, snapshotPae, tablePagesPae, type PaeSnapshot } from './liveTablesPae';

export type LiveSnap = { kind: '32bit'; s: TableSnapshot } | { kind: 'pae'; s: PaeSnapshot };

export function snapshot(mem: Uint8Array, regs: CpuRegs): LiveSnap | null {
  if (regs.paging === '32bit') return { kind: '32bit', s: snapshotTables(mem, regs) };
  if (regs.paging === 'pae') return { kind: 'pae', s: snapshotPae(mem, regs) };
  return null;
}
export function build(snap: LiveSnap, gvas: number[], opt: BuildOptions = { mode: 'native' }): Scenario {
  return snap.kind === '32bit' ? buildScenario(snap.s, gvas, opt) : buildScenarioPae(snap.s, gvas, opt);
}
export function pages(snap: LiveSnap): { directory: number; tables: number; total: number } {
  return snap.kind === '32bit' ? tablePages(snap.s) : tablePagesPae(snap.s);
}
/** The real address of the last-level table for a gva (where the model relocates it). */
export function realTable(snap: LiveSnap, gva: number): number | null {
  if (snap.kind === '32bit') return realPt(snap.s, gva);
  const e = snap.s.pdpt[gva >>> 30];
  if (!(e & 1n)) return null;
  const d = snap.s.pds.get(gva >>> 30)![(gva >>> 21) & 511];
  return (d & 1n) && !(d & 0x80n) ? Number(d & 0x000ffffffffff000n) : null;
}
