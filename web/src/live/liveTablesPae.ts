/* PAE paging of the live guest (the -686-pae kernel): 4 PDPTEs loaded at CR3, 512-entry
 * directories and tables of 8-byte entries, 2 MiB pages. As in liveTables.ts the tables are
 * only read here and the engine does the walks; every entry the engine reads has the real
 * value except the address bits of non-leaf entries: the engine's allocator places the PDPT
 * at the start of the page that holds the real one (CR3 bits 31:12) and the directories and
 * tables after it. */
import type { Scenario } from '../../../wasm-core/js/types';
import type { CpuRegs } from './guestDriver';
import type { BuildOptions } from './liveTables';
import { hostSection } from './liveTables';

export interface PaeSnapshot {
  regs: CpuRegs;
  pdpt: bigint[];
  /** Directories by PDPT index; tables by (PDPT index << 9 | PD index). */
  pds: Map<number, bigint[]>;
  pts: Map<number, bigint[]>;
}

const hex = (n: number | bigint) => '0x' + n.toString(16);
const M64 = (1n << 64n) - 1n;
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

/** One scenario reproducing the 2 MiB regions (`va >>> 21`) that the gvas touch. */
export function buildScenarioPae(s: PaeSnapshot, gvas: number[], opt: BuildOptions = { mode: 'native' }, slots?: number[]): Scenario {
  const want = slots ?? [...new Set(gvas.map((v) => v >>> 21))].sort((a, b) => a - b);
  const mappings: Record<string, unknown>[] = [];
  const overrides: Record<string, unknown>[] = [];
  const exact = (gva: number, level: number, v: bigint) => overrides.push({ gva: hex(gva), level, set: hex(v), clear: hex(~v & M64) });
  const flags = (gva: number, level: number, v: bigint) => { const f = 0x8000000000000fffn; overrides.push({ gva: hex(gva), level, set: hex(v & f), clear: hex(~v & f) }); };
  const leaf = (gva: number, v: bigint, page: '4K' | '2M') => mappings.push({
    gva: hex(gva), gpa: hex(v & 1n ? v & (page === '2M' ? 0x000fffffffe00000n : ADDR) : 0n), page,
    writable: !!(v & 2n), user: !!(v & 4n), global: !!(v & 0x100n) });
  const pdDone = new Set<number>();
  for (const slot of want) {
    const i = slot >>> 9, j = slot & 511, base = slot * 0x200000;
    if (!(s.pdpt[i] & 1n)) continue;
    const d = s.pds.get(i)![j];
    const before = mappings.length;
    if (d & 1n) {
      if (d & 0x80n) { leaf(base, d, '2M'); exact(base, 2, d); }
      else {
        const pt = s.pts.get(slot)!;
        let any = false;
        pt.forEach((t, k) => { if (t || (!any && k === 511)) { leaf(base + k * 4096, t, '4K'); exact(base + k * 4096, 1, t); any = true; } });
        flags(base, 2, d);
      }
    }
    if (mappings.length === before) { leaf(base, 1n, '2M'); exact(base, 2, d); } // keep the directory, with the real (not-present) entry
    if (!pdDone.has(i)) { pdDone.add(i); flags(base, 3, s.pdpt[i]); }
  }
  const sc: Record<string, unknown> = {
    name: opt.name ?? 'live-guest-pae',
    description: opt.description ?? `The live v86 guest's PAE page tables (CR3 ${hex(s.regs.cr3)}), read from its memory.`,
    mode: opt.mode,
    guest: { paging: 'pae', table_base: hex((s.regs.cr3 & 0xfffff000) >>> 0), cr0_wp: (s.regs.cr0 & 0x10000) !== 0, efer_nxe: false,
      cr4_smep: (s.regs.cr4 & 0x100000) !== 0, cr4_smap: (s.regs.cr4 & 0x200000) !== 0, mappings, overrides },
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
    if (n + cost(slot) > 3900 || vas.length + list.length > 4000) flush();
    slots.push(slot); n += cost(slot); vas.push(...list.slice(0, 4000));
  }
  flush();
  return out;
}
