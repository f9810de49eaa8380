/* PAE paging of the live guest (the -686-pae kernel): 4 PDPTEs loaded at CR3, 512-entry
 * directories and tables of 8-byte entries, 2 MiB pages. As in liveTables.ts the tables are
 * only read here and handed to the engine as they are (guest.tables): the PDPT at the real
 * CR3 (32-byte aligned inside its page), directories and tables at their real addresses,
 * every entry with its real value; the engine does the walks. */
import type { Scenario } from '../../../wasm-core/js/types';
import type { CpuRegs } from './guestDriver';
import type { BuildOptions } from './liveTables';
import { hostSection, TableSet } from './liveTables';

export interface PaeSnapshot {
  regs: CpuRegs;
  pdpt: bigint[];
  /** Directories by PDPT index; tables by (PDPT index << 9 | PD index). */
  pds: Map<number, bigint[]>;
  pts: Map<number, bigint[]>;
}

const hex = (n: number | bigint) => '0x' + n.toString(16);
const ADDR = 0x000ffffffffff000n;

function read64(mem: Uint8Array, addr: number, n: number): bigint[] {
  const dv = new DataView(mem.buffer, mem.byteOffset, mem.byteLength);
  const out: bigint[] = [];
  for (let i = 0; i < n; i++) out.push(addr + 8 * i + 8 <= mem.length ? dv.getBigUint64(addr + 8 * i, true) : 0n);
  return out;
}

export function snapshotPae(mem: Uint8Array, regs: CpuRegs): PaeSnapshot {
  if (regs.paging !== 'pae') throw new Error(`not PAE paging: ${regs.paging}`);
  const s: PaeSnapshot = { regs, pdpt: read64(mem, regs.cr3 & 0xffffffe0, 4), pds: new Map(), pts: new Map() };
  s.pdpt.forEach((e, i) => {
    if (!(e & 1n)) return;
    const pd = read64(mem, Number(e & ADDR), 512);
    s.pds.set(i, pd);
    pd.forEach((d, j) => { if ((d & 1n) && !(d & 0x80n)) s.pts.set((i << 9) | j, read64(mem, Number(d & ADDR), 512)); });
  });
  return s;
}

export function tablePagesPae(s: PaeSnapshot) {
  return { directory: 1 + s.pds.size, tables: s.pts.size, total: 1 + s.pds.size + s.pts.size };
}

export function mappedPagesPae(s: PaeSnapshot): { gva: number; size: number; user: boolean }[] {
  const out: { gva: number; size: number; user: boolean }[] = [];
  for (const [i, pd] of s.pds) pd.forEach((d, j) => {
    if (!(d & 1n)) return;
    const base = i * 0x40000000 + j * 0x200000;
    if (d & 0x80n) { out.push({ gva: base, size: 0x200000, user: !!(d & 4n) }); return; }
    s.pts.get((i << 9) | j)!.forEach((t, k) => { if (t & 1n) out.push({ gva: base + k * 4096, size: 4096, user: !!(d & t & 4n) }); });
  });
  return out;
}

/** One scenario with the directory entries for the 2 MiB regions (`va >>> 21`) that the
 * gvas touch and the tables they point to, all at their real addresses. */
export function buildScenarioPae(s: PaeSnapshot, gvas: number[], opt: BuildOptions = { mode: 'native' }, slots?: number[]): Scenario {
  const want = slots ?? [...new Set(gvas.map((v) => v >>> 21))].sort((a, b) => a - b);
  const cr3 = s.regs.cr3 & 0xffffffe0;
  const pdptFrame = BigInt(cr3 & 0xfffff000);
  const first = (cr3 & 0xfe0) >>> 3;   // the PDPT's first entry in its page
  const t = new TableSet();
  s.pdpt.forEach((e, i) => t.add(pdptFrame, first + i, e));
  for (const slot of want) {
    const i = slot >>> 9, j = slot & 511;
    if (!(s.pdpt[i] & 1n)) continue;
    const pdAddr = s.pdpt[i] & ADDR;
    const d = s.pds.get(i)![j];
    t.frame(pdAddr);
    t.add(pdAddr, j, d);
    if (!(d & 1n) || (d & 0x80n)) continue;
    const ptAddr = d & ADDR;
    t.frame(ptAddr);
    s.pts.get(slot)!.forEach((e, k) => t.add(ptAddr, k, e));
  }
  const sc: Record<string, unknown> = {
    name: opt.name ?? 'live-guest-pae',
    description: opt.description ?? `The live v86 guest's PAE page tables (CR3 ${hex(s.regs.cr3)}), read from its memory.`,
    mode: opt.mode,
    guest: { paging: 'pae', cr3: hex(cr3 >>> 0), cr0_wp: (s.regs.cr0 & 0x10000) !== 0, efer_nxe: false,
      cr4_smep: (s.regs.cr4 & 0x100000) !== 0, cr4_smap: (s.regs.cr4 & 0x200000) !== 0, tables: t.tables() },
    accesses: gvas.map((g) => ({ gva: hex(g >>> 0), op: 'read', user: opt.user ?? false })),
    ...hostSection(opt),
  };
  return sc as unknown as Scenario;
}

export function buildScenariosPae(s: PaeSnapshot, gvas: number[], opt: BuildOptions = { mode: 'native' }): { scenario: Scenario; gvas: number[] }[] {
  const bySlot = new Map<number, number[]>();
  for (const g of gvas) { const k = g >>> 21; if (!bySlot.has(k)) bySlot.set(k, []); bySlot.get(k)!.push(g); }
  const cost = (k: number) => 1 + (s.pts.get(k)?.filter((e) => e).length ?? 0);
  const out: { scenario: Scenario; gvas: number[] }[] = [];
  let slots: number[] = [], vas: number[] = [], n = 0;
  const flush = () => { if (slots.length) out.push({ scenario: buildScenarioPae(s, vas, opt, slots), gvas: vas }); slots = []; vas = []; n = 0; };
  for (const [slot, list] of [...bySlot].sort((a, b) => a[0] - b[0])) {
    if (n + cost(slot) > 200_000 || vas.length + list.length > 4000) flush();
    slots.push(slot); n += cost(slot); vas.push(...list.slice(0, 4000));
  }
  flush();
  return out;
}
