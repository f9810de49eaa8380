import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, digits, evRead, evWrite, type ExerciseSpec, type Exercise, type Ev } from '../shape';

/* The guest's four pages: side by side (one page table holds them all) or spread so that
 * they share fewer upper levels (the walk caches then skip less). */
const LAYOUTS = {
  near: [0x400000n, 0x401000n, 0x402000n, 0x403000n],
  spread: [0x400000n, 0x401000n, 0x600000n, 0x40000000n],
  far: [0x400000n, 0x600000n, 0x40000000n, 0x8000000000n],
};

/** Caching the walk: TLB hits over a sequence, and for the last access its references,
 * nested-TLB hits and page-walk-cache hits, under EPT with the x86 server's caches. The
 * last access of the refs, ntlb and pwc questions always walks (a page not touched yet,
 * one just invalidated, or a write to a page only read so far), so the question is what
 * the walk caches spare it, never only whether the TLB hit. */
export function cacheHits(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const [v, c, l] = digits(seed, [4, 3, 3]);
  const variant = (['tlb', 'refs', 'ntlb', 'pwc'] as const)[v];
  const layout = (['near', 'spread', 'far'] as const)[l];
  const pages = LAYOUTS[layout].map((p) => hex(p));
  const evs: Ev[] = [];
  const n = (variant === 'tlb' ? 4 : 2) + Math.floor(r() * 4);
  // pages whose TLB entry a read filled (a write to one walks again), and pages in the TLB
  const readOnly = new Set<string>();
  const cached = new Set<string>();
  for (let i = 0; i < n; i++) {
    // the refs/ntlb/pwc questions keep one page back for a first touch at the end
    const gva = pages[Math.floor(r() * (variant === 'tlb' ? 4 : 3))];
    const k = r();
    if (k < 0.6) { evs.push(evRead(gva)); if (!cached.has(gva)) { cached.add(gva); readOnly.add(gva); } }
    else if (k < 0.85) { evs.push(evWrite(gva)); cached.add(gva); readOnly.delete(gva); }
    else { evs.push({ access: { invlpg: gva }, words: msg('ev.invlpg', { gva }) }); cached.delete(gva); readOnly.delete(gva); }
  }
  if (variant === 'tlb') {
    const last = evs[evs.length - 1]?.access;
    if (!last || !('op' in last)) evs.push(evRead(pages[Math.floor(r() * 4)]));
  } else {
    const end = (['fresh', 'invlpg', 'write'] as const)[c];
    if (end === 'fresh') evs.push(r() < 0.5 ? evRead(pages[3]) : evWrite(pages[3]));
    else if (end === 'invlpg') {
      const gva = pages[Math.floor(r() * 3)];
      evs.push({ access: { invlpg: gva }, words: msg('ev.invlpg', { gva }) }, evRead(gva));
    } else {
      // a page the TLB holds from a read; failing that, the fourth page read first
      const only = pages.slice(0, 3).filter((p) => readOnly.has(p));
      const gva = only.length ? only[Math.floor(r() * only.length)] : pages[3];
      if (!only.length) evs.push(evRead(gva));
      evs.push(evWrite(gva));
    }
  }
  const s: Scenario = {
    name: `exercise-caches-${seed}`, mode: 'ept',
    guest: { paging: '4level', mappings: pages.map((gva, i) => ({ gva, gpa: hex(0x200000n + BigInt(i) * 4096n) })) },
    nested: { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }] },
    caches: { preset: 'x86-server' },
    accesses: evs.map((e) => e.access),
  };
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', unit: variant === 'refs' ? 'refs' : 'hits' }, walkAccess: evs.length - 1,
    prompt: msg(`cacheHits.${variant}`, { setup: msg(`cacheHits.setup${{ near: '', spread: 'Spread', far: 'Far' }[layout]}`), events: evs.map((e) => e.words) }),
    nudge: msg('cacheHits.nudge'), hint: msg('cacheHits.hint'),
    expected: ([res]) => {
      const last = res.accesses[res.accesses.length - 1];
      if (variant === 'tlb') return String(res.accesses.filter((a) => a.cache?.tlb === 'hit').length);
      if (variant === 'refs') return String(last.memory_refs);
      return String(variant === 'ntlb' ? last.cache?.ntlb_hits ?? 0 : last.cache?.pwc_hits ?? 0);
    },
  };
}
