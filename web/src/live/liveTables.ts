/* The live guest's page tables, read from v86's memory only to extract them, then handed to
 * the engine as a scenario: the engine does every walk. 32-bit paging (2 levels, 4 MiB
 * pages with CR4.PSE). The scenario gives the tables as they are (guest.tables): the page
 * directory at the real CR3, each page table at its real address, every entry with its
 * real value, so the engine reads exactly the addresses the guest's MMU reads. */
import type { Scenario } from '../../../wasm-core/js/types';
import type { CpuRegs } from './guestDriver';

export interface TableSnapshot {
  regs: CpuRegs;
  /** The page directory: 1024 entries. */
  pd: Uint32Array;
  /** Page tables by directory index (present, non-4M PDEs only). */
  pts: Map<number, Uint32Array>;
}

const hex = (n: number | bigint) => '0x' + n.toString(16);

function readU32s(mem: Uint8Array, addr: number, n: number): Uint32Array {
  const out = new Uint32Array(n);
  const dv = new DataView(mem.buffer, mem.byteOffset, mem.byteLength);
  for (let i = 0; i < n; i++) out[i] = addr + 4 * i + 4 <= mem.length ? dv.getUint32(addr + 4 * i, true) : 0;
  return out;
}

const pse = (s: TableSnapshot) => (s.regs.cr4 & 0x10) !== 0;
const isLarge = (s: TableSnapshot, pde: number) => (pde & 1) === 1 && (pde & 0x80) !== 0 && pse(s);

/** Copies the page directory at CR3 and every page table it points to. */
export function snapshotTables(mem: Uint8Array, regs: CpuRegs): TableSnapshot {
  if (regs.paging !== '32bit') throw new Error(`the lab reads 32-bit paging; the guest is in ${regs.paging} mode`);
  const snap: TableSnapshot = { regs, pd: readU32s(mem, regs.cr3 & 0xfffff000, 1024), pts: new Map() };
  for (let i = 0; i < 1024; i++) {
    const pde = snap.pd[i];
    if ((pde & 1) && !isLarge(snap, pde)) snap.pts.set(i, readU32s(mem, pde & 0xfffff000, 1024));
  }
  return snap;
}

/** Guest page-table pages a shadow hypervisor must write-protect to shadow this address
 * space: the directory and each page table it references. */
export function tablePages(s: TableSnapshot): { directory: number; tables: number; total: number } {
  return { directory: 1, tables: s.pts.size, total: 1 + s.pts.size };
}

/** Every mapped 4 KiB page (or 4 MiB page) of the snapshot, for pickers and tests. */
export function mappedPages(s: TableSnapshot): { gva: number; size: number; user: boolean }[] {
  const out: { gva: number; size: number; user: boolean }[] = [];
  for (let i = 0; i < 1024; i++) {
    const pde = s.pd[i];
    if (!(pde & 1)) continue;
    if (isLarge(s, pde)) { out.push({ gva: i * 0x400000, size: 0x400000, user: (pde & 4) !== 0 }); continue; }
    const pt = s.pts.get(i)!;
    for (let j = 0; j < 1024; j++) if (pt[j] & 1) out.push({ gva: (i * 1024 + j) * 4096, size: 4096, user: (pde & pt[j] & 4) !== 0 });
  }
  return out;
}

export type HostMode = 'native' | 'ept' | 'npt' | 'flat' | 'shadow';
export type Backing = '4K' | '2M' | '1G';
export interface HostOptions { mode: HostMode; backing?: Backing; guestRam?: number }

/** Host frames for the guest's RAM: chunks of guest-physical memory scattered over host
 * memory by a fixed permutation (so the same guest gives the same host picture). */
const HOST_BASE = 0x40000000; // 1 GiB: clear of the engine's nested/shadow table frames
function hostMappings(ram: number, backing: Backing, withPage: boolean) {
  if (backing === '1G') return [{ gpa: '0x0', hpa: hex(0x40000000 * 5), ...(withPage ? { page: '1G' } : {}) }];
  const chunk = backing === '2M' ? 0x200000 : 0x10000; // 4K backing: 64 KiB runs of 16 frames
  const n = Math.ceil(ram / chunk);
  const out: Record<string, unknown>[] = [];
  // multiplicative permutation of 0..n-1 over a power-of-two range twice as large
  let m = 1; while (m < 2 * n) m <<= 1;
  for (let k = 0, used = 0; used < n; k++) {
    const slot = (k * 2654435761) % m; // odd multiplier: a permutation of 0..m-1
    const gpa = used * chunk;
    const pages = backing === '2M' ? 1 : chunk / 4096;
    out.push({ gpa: hex(gpa), hpa: hex(HOST_BASE + slot * chunk), ...(withPage ? { page: backing } : {}), ...(pages > 1 ? { pages } : {}) });
    used++;
  }
  return out;
}

/** The host half of a scenario: nested tables, flat table or shadow memory slots. */
export function hostSection(opt: HostOptions): Record<string, unknown> {
  const ram = opt.guestRam ?? 0x8000000;
  const backing = opt.backing ?? '4K';
  if (opt.mode === 'ept' || opt.mode === 'npt') return { nested: { mappings: hostMappings(ram, backing, true) } };
  if (opt.mode === 'flat') return { flat: { guest_ram: hex(ram), prefill: true, mappings: hostMappings(ram, '4K', false) } };
  if (opt.mode === 'shadow') return { shadow: { mappings: hostMappings(ram, '4K', false) } };
  return {};
}

export interface BuildOptions extends HostOptions { name?: string; description?: string; user?: boolean }

/** Collects tables by frame: the same frame reached twice (a page table shared by two
 * directory entries, or the directory itself) is one table, as it is in memory. */
export class TableSet {
  private frames = new Map<bigint, Record<string, string>>();
  add(gpa: number | bigint, index: number, value: number | bigint) {
    const g = BigInt(gpa);
    if (!this.frames.has(g)) this.frames.set(g, {});
    if (value) this.frames.get(g)![String(index)] = hex(BigInt(value));
  }
  /** Touches a frame with no non-zero entry yet (a table of zeros is still a table). */
  frame(gpa: number | bigint) { const g = BigInt(gpa); if (!this.frames.has(g)) this.frames.set(g, {}); }
  get size() { let n = 0; for (const e of this.frames.values()) n += Object.keys(e).length; return n; }
  tables() { return [...this.frames].map(([gpa, entries]) => ({ gpa: hex(gpa), entries })); }
}

/** One scenario with the directory entries for the PDE slots that `gvas` touch (or `slots`)
 * and the page tables they point to, all at their real addresses. */
export function buildScenario(s: TableSnapshot, gvas: number[], opt: BuildOptions = { mode: 'native' }, slots?: number[]): Scenario {
  const want = slots ?? [...new Set(gvas.map((v) => v >>> 22))].sort((a, b) => a - b);
  const cr3 = (s.regs.cr3 & 0xfffff000) >>> 0;
  const t = new TableSet();
  t.frame(cr3);
  for (const i of want) {
    const pde = s.pd[i];
    t.add(cr3, i, pde >>> 0);
    if (!(pde & 1) || isLarge(s, pde)) continue;
    const ptAddr = (pde & 0xfffff000) >>> 0;
    t.frame(ptAddr);
    s.pts.get(i)!.forEach((pte, j) => t.add(ptAddr, j, pte >>> 0));
  }
  const guest = {
    paging: '32bit', cr3: hex(cr3),
    cr0_wp: (s.regs.cr0 & 0x10000) !== 0, cr4_pse: pse(s),
    cr4_smep: (s.regs.cr4 & 0x100000) !== 0, cr4_smap: (s.regs.cr4 & 0x200000) !== 0,
    tables: t.tables(),
  };
  const sc: Record<string, unknown> = {
    name: opt.name ?? 'live-guest',
    description: opt.description ?? `The live v86 guest's 32-bit page tables (CR3 ${hex(s.regs.cr3)}), read from its memory.`,
    mode: opt.mode, guest,
    accesses: gvas.map((g) => ({ gva: hex(g >>> 0), op: 'read', user: opt.user ?? false })),
  };
  Object.assign(sc, hostSection(opt));
  return sc as unknown as Scenario;
}

/** Splits many gvas over several scenarios so each stays inside the engine's limits. */
export function buildScenarios(s: TableSnapshot, gvas: number[], opt: BuildOptions = { mode: 'native' }): { scenario: Scenario; gvas: number[] }[] {
  const bySlot = new Map<number, number[]>();
  for (const g of gvas) { const k = g >>> 22; if (!bySlot.has(k)) bySlot.set(k, []); bySlot.get(k)!.push(g); }
  const cost = (i: number) => (s.pts.get(i) ? s.pts.get(i)!.reduce((n, e) => n + (e ? 1 : 0), 1) : 1);
  const out: { scenario: Scenario; gvas: number[] }[] = [];
  let slots: number[] = [], vas: number[] = [], entries = 0;
  const flush = () => { if (slots.length) out.push({ scenario: buildScenario(s, vas, opt, slots), gvas: vas }); slots = []; vas = []; entries = 0; };
  for (const [slot, list] of [...bySlot].sort((a, b) => a[0] - b[0])) {
    for (let k = 0; k < list.length; k += 4000) {
      const part = list.slice(k, k + 4000);
      if (entries + cost(slot) > 200_000 || vas.length + part.length > 4000) flush();
      if (!slots.includes(slot)) { slots.push(slot); entries += cost(slot); }
      vas.push(...part);
    }
  }
  flush();
  return out;
}
