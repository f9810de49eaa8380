/* Independent models of the four sequence kinds of exercise (shadow-exits, flat-walk,
 * vmfunc-switch, cache-hits): each walks the events with the rules of wasm-core/docs/model.md
 * written out by hand for the exercise's small machine, never with the engine. Used by
 * exercises.test.ts (every variant, 1,000 seeds) and lesson-exercises.test.ts (the
 * exercises the lessons embed). */
import type { Scenario } from '../../../wasm-core/js/types';

type Acc = Scenario['accesses'][number];
const pageOf = (gva: string, size = 4096n) => Number(BigInt(gva) / size);
const isMem = (a: Acc): a is { gva: string; op: 'read' | 'write' | 'fetch' } => 'gva' in a && 'op' in a;

/** Shadow paging over three pages of one guest page table, n address spaces. */
export function shadowModel(s: Scenario) {
  const targets = s.shadow!.cr3_targets ?? 0;
  let cur = 0, exits = 0, refs = 0;
  const filled = new Map<string, boolean>();   // space:page -> shadow leaf writable
  const dirty = new Set<string>();             // space:page -> guest D bit set
  const shadowed = new Set<number>();          // spaces whose shadow root and tables exist (and guest tables are write-protected)
  for (const a of s.accesses) {
    refs = 0;
    if ('mov_cr3' in a) { if (a.mov_cr3 >= targets) exits++; cur = a.mov_cr3; continue; }
    if ('pte_write' in a) {
      // Each space has its own table frames. A frame the VMM has walked is write-protected:
      // the write exits and the gva's shadow entries go, in every space (no reverse map).
      // A frame it never walked is a plain store it does not see: no exit, nothing zapped.
      if (!shadowed.has(cur)) continue;
      exits++;
      const p = pageOf(a.pte_write.gva);
      for (const k of [...filled.keys()]) if (k.endsWith(`:${p}`)) filled.delete(k);
      continue;
    }
    if (!isMem(a)) throw new Error('unexpected event');
    const k = `${cur}:${pageOf(a.gva)}`;
    const write = a.op === 'write';
    if (filled.has(k) && (!write || filled.get(k))) { refs = 4; continue; }
    refs = filled.has(k) || shadowed.has(cur) ? 4 : 1;   // down to the missing (or read-only) entry
    exits++;
    if (write) dirty.add(k);
    filled.set(k, dirty.has(k));
    shadowed.add(cur);
    refs += 4;                                           // the walk again after the fill
  }
  return { exits, refs };
}

/** A lazily filled flat table: 4 guest table frames from gpa 0x100000, data from 0x200000. */
export function flatModel(s: Scenario) {
  const frame = s.guest.paging === 'sunway' ? 8192n : 4096n;
  const tables = [0, 1, 2, 3].map((i) => Number(0x100000n / frame) + i);
  const filled = new Set<number>();
  let refs = 0, exits = 0;
  for (const a of s.accesses) {
    if (!isMem(a)) throw new Error('unexpected event');
    const data = Number((0x200000n + (BigInt(a.gva) - 0x400000n)) / frame);
    const misses = [...tables, data].filter((g) => !filled.has(g));
    refs = 4 + 5 + misses.length;
    exits = misses.length;
    for (const g of [...tables, data]) filled.add(g);
  }
  return { refs, exits };
}

export function flatOutcome(s: Scenario): string {
  const frame = s.guest.paging === 'sunway' ? 8192n : 4096n;
  const gva = BigInt((s.accesses[0] as { gva: string }).gva);
  if (gva >= 0x400000n && gva < 0x400000n + 2n * frame) return 'ok';
  if (gva >= 0x600000n && gva < 0x600000n + 2n * frame) return 'flat_fault';
  return 'guest_page_fault';
}

/** EPTP switching: entries 0, 1 and 2 hold valid EPTPs; only 1 maps the object at 0x500000. */
export function vmfuncModel(s: Scenario) {
  let cur = 0, exits = 0;
  for (const a of s.accesses) {
    if ('vmfunc' in a) { if ([0, 1, 2].includes(a.vmfunc)) cur = a.vmfunc; else exits++; }
    else if (isMem(a)) { if (a.gva === '0x500000' && cur !== 1) exits++; }
  }
  return { index: cur, exits };
}

export function vmfuncOutcome(s: Scenario): string {
  const a = s.accesses[0] as { vmfunc: number; function?: number };
  if (!s.nested!.vmfunc) return 'ud';
  if ((a.function ?? 0) !== 0) return 'exit59_function';
  if (a.vmfunc >= 512) return 'exit59_range';
  return [0, 1, 2].includes(a.vmfunc) ? 'switched' : 'exit59_invalid';
}

/** EPT with a TLB, guest and nested page-walk caches and a nested TLB, none evicting in
 * so short a run. The guest's tables are allocated from gpa 0x100000 in the order its
 * mappings need them (model.md 3, step 2: the root first, then each mapping's descent);
 * each mapping is one 4 KiB page. */
export function cacheModel(s: Scenario) {
  const shift = (l: number) => 12n + 9n * BigInt(l - 1);
  // the table frame (gpa page) at each level that a gva's walk reads, and each page's gpa page
  const frames = new Map<string, number>([['4:0', 0x100]]);
  let next = 0x101;
  const dataOf = new Map<number, number>();
  for (const m of s.guest.mappings!) {
    const gva = BigInt(m.gva);
    for (let l = 3; l >= 1; l--) {
      const key = `${l}:${gva >> shift(l + 1)}`;
      if (!frames.has(key)) frames.set(key, next++);
    }
    dataOf.set(pageOf(m.gva), Number(BigInt(m.gpa!) >> 12n));
  }
  const tableAt = (gva: bigint, l: number) => frames.get(l === 4 ? '4:0' : `${l}:${gva >> shift(l + 1)}`)!;
  const tlb = new Map<number, boolean>();       // gva page -> filled by a write
  const gpwc = new Set<string>();               // level:gva bits of levels >= it
  const ntlb = new Set<number>();
  const npwc = [new Set<number>(), new Set<number>(), new Set<number>()];   // keys of L2, L3, L4 entries
  let tlbHits = 0, last = { refs: 0, ntlb: 0, pwc: 0 };
  const nested = (p: number, c: typeof last) => {
    if (ntlb.has(p)) { c.ntlb++; return; }
    const keys = [p >> 9, p >> 18, p >> 27];
    const hit = keys.findIndex((k, i) => npwc[i].has(k));
    if (hit >= 0) { c.pwc++; c.refs += hit + 1; } else c.refs += 4;
    ntlb.add(p);
    keys.forEach((k, i) => npwc[i].add(k));
  };
  for (const a of s.accesses) {
    if ('invlpg' in a) { tlb.delete(pageOf(a.invlpg)); gpwc.clear(); continue; }
    if (!isMem(a)) throw new Error('unexpected event');
    const p = pageOf(a.gva);
    const gva = BigInt(a.gva);
    const c = { refs: 0, ntlb: 0, pwc: 0 };
    const write = a.op === 'write';
    if (tlb.has(p) && (!write || tlb.get(p))) { tlbHits++; last = c; continue; }
    // the deepest guest walk-cache hit (level 2 first) starts the walk below it
    const hit = [2, 3, 4].find((l) => gpwc.has(`${l}:${gva >> shift(l)}`));
    if (hit) c.pwc++;
    for (let l = (hit ?? 5) - 1; l >= 1; l--) { nested(tableAt(gva, l), c); c.refs++; }
    nested(dataOf.get(p)!, c);
    tlb.set(p, write);
    for (const l of [2, 3, 4]) gpwc.add(`${l}:${gva >> shift(l)}`);
    last = c;
  }
  return { tlbHits, ...last };
}

/** The model's answer to a generated exercise of a sequence kind (the figure or outcome
 * its variant asks for), or undefined for another kind. */
export function sequenceAnswer(ex: { spec: { kind: string }; variant?: string; scenarios: Scenario[] }): string | number | undefined {
  const s = ex.scenarios[0];
  switch (ex.spec.kind) {
    case 'shadow-exits': { const m = shadowModel(s); return ex.variant === 'exits' ? m.exits : m.refs; }
    case 'flat-walk': {
      if (ex.variant === 'outcome') return flatOutcome(s);
      const m = flatModel(s);
      return ex.variant === 'refs' ? m.refs : m.exits;
    }
    case 'vmfunc-switch': {
      if (ex.variant === 'outcome') return vmfuncOutcome(s);
      const m = vmfuncModel(s);
      return ex.variant === 'index' ? m.index : m.exits;
    }
    case 'cache-hits': { const m = cacheModel(s); return { tlb: m.tlbHits, refs: m.refs, ntlb: m.ntlb, pwc: m.pwc }[ex.variant as 'tlb']; }
    default: return undefined;
  }
}

/** which-wins by the estimate its hint teaches, not by running anything: TLB misses from
 * the TLB's share of the pages in use (random reads), about one reference a miss under
 * shadow paging, two for a 2-D walk on 2 MiB nested pages and three on 4 KiB ones; 1,700
 * cycles for each exit, which only shadow paging takes (a page-table write and the touch
 * that refills its entry; a mov cr3 outside the CR3-target values). */
export function whichWinsEstimate(scenarios: Scenario[]): { mode: string; costs: number[] } {
  const s = scenarios[0] as Scenario & { guest: { address_spaces?: number }; caches: { tlb: { entries: number } } };
  const spaces = s.guest.address_spaces ?? 1;
  const pages = s.guest.mappings!.length;
  const warm = spaces * pages + (spaces > 1 ? spaces : 0);
  const stream = s.accesses.slice(warm);
  const reads = stream.filter(isMem).length;
  const writes = stream.filter((a) => 'pte_write' in a).length;
  const targets = scenarios.find((x) => x.mode === 'shadow')!.shadow!.cr3_targets ?? 0;
  const switches = stream.filter((a) => 'mov_cr3' in a && a.mov_cr3 >= targets).length;
  // a few misses remain where the TLB could hold every page (its sets conflict)
  const misses = Math.max(1, reads * (1 - s.caches.tlb.entries / (pages * spaces)));
  const costs = scenarios.map((x) => {
    if (x.mode === 'shadow') return misses * 40 + (2 * writes + switches) * 1700;
    return misses * (x.nested!.mappings.some((m) => m.page === '2M') ? 2 : 3) * 40;
  });
  return { mode: scenarios[costs.indexOf(Math.min(...costs))].mode, costs };
}
