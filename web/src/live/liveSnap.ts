/* One interface over the two live paging formats (32-bit and PAE) for the page. */
import type { Scenario } from '../../../wasm-core/js/types';
import type { CpuRegs } from './guestDriver';
import { buildScenario, snapshotTables, tablePages, type BuildOptions, type TableSnapshot } from './liveTables';
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
