/* Exercises are checked by the engine; these tests check the engine's answers against
 * arithmetic done here, independently, for many seeds. */
import { describe, expect, it, beforeAll } from 'vitest';
import { generate, check, say, type ExerciseSpec } from './exercises';
import i18n from '../i18n';
import { englishRuns } from '../test/english';
import { testEngine } from '../test/engine';
import type { Scenario, Vmsim } from '../../../wasm-core/js/vmsim';

let engine: Vmsim;
beforeAll(async () => {
  engine = await testEngine();
});

const seeds = Array.from({ length: 1000 }, (_, i) => i * 7919 + 1);

describe('exercises', () => {
  it('the same seed gives the same exercise', () => {
    const a = generate({ kind: 'compute-hpa', mode: 'ept' }, 42);
    const b = generate({ kind: 'compute-hpa', mode: 'ept' }, 42);
    expect(say(a.prompt)).toBe(say(b.prompt));
    expect(say(generate({ kind: 'compute-hpa', mode: 'ept' }, 43).prompt)).not.toBe(say(a.prompt));
  });

  it('compute-hpa: the engine agrees with page replacement done by hand', () => {
    for (const mode of ['ept', 'npt', 'native']) {
      for (const seed of seeds) {
        const ex = generate({ kind: 'compute-hpa', mode }, seed);
        const s = ex.scenarios[0];
        const acc = s.accesses[0] as { gva: string };
        const off = BigInt(acc.gva) & 0xfffn;
        const gpa = BigInt(s.guest.mappings![0].gpa);
        const target = mode === 'native' ? gpa : BigInt(s.nested!.mappings[1].hpa);
        const byHand = '0x' + (target + off).toString(16);
        expect(check(engine, ex, byHand).correct, `${mode} seed ${seed}`).toBe(true);
        expect(check(engine, ex, '0x1234').correct).toBe(false);
      }
    }
  });

  it('count-refs: the engine agrees with g + (g + 1) n', () => {
    const levelsOf: Record<string, number> = { '4K': 1, '2M': 2, '1G': 3 };
    for (const mode of ['ept', 'npt', 'native', 'flat']) {
      for (const seed of seeds) {
        const ex = generate({ kind: 'count-refs', mode }, seed);
        const s = ex.scenarios[0];
        const g = 4 - levelsOf[s.guest.mappings![0].page ?? '4K'] + 1;
        let n = 0;
        if (mode === 'flat') n = 1;
        if (mode === 'ept' || mode === 'npt') {
          const page = s.nested!.mappings[s.nested!.mappings.length - 1].page ?? '4K';
          n = (s.nested!.levels ?? 4) - levelsOf[page] + 1;
        }
        expect(check(engine, ex, String(g + (g + 1) * n)).correct, `${mode} seed ${seed}`).toBe(true);
        expect(check(engine, ex, String(g + (g + 1) * n + 1)).correct).toBe(false);
      }
    }
  });

  it('predict-bits: the exit information follows the manuals\' bit definitions', () => {
    // EPT (A/D off): table-page faults have bit 8 clear; a blocked A-bit write is RD|WR.
    const ept = (onTable: boolean, clear: string, op: string): string => {
      const acc = op === 'read' ? 1 : op === 'write' ? 2 : 4;
      if (onTable) return { '0x7': '0x81', '0x2': '0xab', '0x6': '0x8b', '0x4': '0x0' }[clear]!;
      const allowed = 7 & ~Number(clear);
      if (allowed & acc) return '0x0';
      return '0x' + (acc | (allowed << 3) | 0x180).toString(16);
    };
    // NPT: every nested access is a user access; guest table accesses are writes.
    const npt = (onTable: boolean, clear: string, op: string): string => {
      if (onTable) return clear === '0x1' ? '0x200000006' : '0x200000007';
      const w = op === 'write' ? 2 : 0, id = op === 'fetch' ? 0x10 : 0;
      // (added, not ORed: JavaScript's | works on 32 bits)
      if (clear === '0x1') return '0x' + (0x100000004 + w + id).toString(16);
      if (clear === '0x2' && op !== 'write') return '0x0';
      return '0x' + (0x100000005 + w + id).toString(16);
    };
    for (const mode of ['ept', 'npt']) {
      for (const seed of seeds.slice(0, 300)) {
        const ex = generate({ kind: 'predict-bits', mode }, seed);
        const s = ex.scenarios[0];
        const o = s.nested!.overrides![0];
        const op = (s.accesses[0] as { op: string }).op;
        const want = (mode === 'ept' ? ept : npt)(!!o.guest_table, o.clear!, op);
        expect(check(engine, ex, want).correct, `${mode} seed ${seed}: ${say(ex.prompt)}`).toBe(true);
        expect(check(engine, ex, want === '0x0' ? '0x81' : '0x0').correct).toBe(false);
      }
    }
  });

  it('flat-table-size: x GiB of guest RAM -> x MiB', () => {
    for (const seed of seeds) {
      const ex = generate({ kind: 'flat-table-size' }, seed);
      const gib = Number(BigInt((ex.scenarios[0] as unknown as { flat: { guest_ram: string } }).flat.guest_ram) >> 30n);
      expect(check(engine, ex, String(gib)).correct).toBe(true);
      expect(check(engine, ex, String(gib * 1024)).correct).toBe(false);
    }
  });

  it('predict-exit: the outcome follows from what was changed', () => {
    for (const mode of ['ept', 'npt']) {
      for (const seed of seeds) {
        const ex = generate({ kind: 'predict-exit', mode }, seed);
        const s = ex.scenarios[0];
        const ovr = s.nested!.overrides ?? [];
        const acc = s.accesses[0] as { gva: string; op: string };
        let want: string;
        if (acc.gva === '0x401000') want = 'guest_page_fault';
        else if (ovr.length === 0) want = 'ok';
        else if (ovr[0].clear === '0x2') want = acc.op === 'write' ? (mode === 'ept' ? 'ept_violation' : 'npt_fault') : 'ok';
        else if (mode === 'ept' && ovr[0].clear === '0x1') want = 'ept_misconfig';
        else want = mode === 'ept' ? 'ept_violation' : 'npt_fault';
        expect(check(engine, ex, want).correct, `${mode} seed ${seed}: ${say(ex.prompt)}`).toBe(true);
        expect(check(engine, ex, want === 'ok' ? 'guest_page_fault' : 'ok').correct).toBe(false);
      }
    }
  });

  it('which-wins: shadow paging for poor locality, nested paging for page-table churn and many address spaces', () => {
    const want = { mcf: ['shadow'], gcc: ['ept', 'npt'], memcached: ['ept', 'npt'] } as const;
    for (const workload of ['mcf', 'gcc', 'memcached'] as const) {
      const ex = generate({ kind: 'which-wins', workloads: [workload] }, 5);
      const v = check(engine, ex, want[workload][0]);
      expect(v.correct, `${workload}: engine says ${v.expected}`).toBe(true);
    }
  });

  it('an unknown kind is a clear error', () => {
    expect(() => generate({ kind: 'nope' as never }, 1)).toThrow(/unknown exercise kind "nope"/);
  });
});


/* Independent models of the four sequence kinds: each walks the events with the rules of
 * wasm-core/docs/model.md written out by hand for the exercise's small machine. */
type Acc = Scenario['accesses'][number];
const pageOf = (gva: string, size = 4096n) => Number(BigInt(gva) / size);
const isMem = (a: Acc): a is { gva: string; op: 'read' | 'write' | 'fetch' } => 'gva' in a && 'op' in a;

/** Shadow paging over three pages of one guest page table, n address spaces. */
function shadowModel(s: Scenario) {
  const targets = s.shadow!.cr3_targets ?? 0;
  let cur = 0, exits = 0, refs = 0;
  const filled = new Map<string, boolean>();   // space:page -> shadow leaf writable
  const dirty = new Set<string>();             // space:page -> guest D bit set
  const shadowed = new Set<number>();          // spaces whose shadow root and tables exist (and guest tables are write-protected)
  for (const a of s.accesses) {
    refs = 0;
    if ('mov_cr3' in a) { if (a.mov_cr3 >= targets) exits++; cur = a.mov_cr3; continue; }
    if ('pte_write' in a) {
      if (shadowed.has(cur)) exits++;
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
function flatModel(s: Scenario) {
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

function flatOutcome(s: Scenario): string {
  const frame = s.guest.paging === 'sunway' ? 8192n : 4096n;
  const gva = BigInt((s.accesses[0] as { gva: string }).gva);
  if (gva >= 0x400000n && gva < 0x400000n + 2n * frame) return 'ok';
  if (gva >= 0x600000n && gva < 0x600000n + 2n * frame) return 'flat_fault';
  return 'guest_page_fault';
}

/** EPTP switching: entries 0, 1 and 2 hold valid EPTPs; only 1 maps the object at 0x500000. */
function vmfuncModel(s: Scenario) {
  let cur = 0, exits = 0;
  for (const a of s.accesses) {
    if ('vmfunc' in a) { if ([0, 1, 2].includes(a.vmfunc)) cur = a.vmfunc; else exits++; }
    else if (isMem(a)) { if (a.gva === '0x500000' && cur !== 1) exits++; }
  }
  return { index: cur, exits };
}

function vmfuncOutcome(s: Scenario): string {
  const a = s.accesses[0] as { vmfunc: number; function?: number };
  if (!s.nested!.vmfunc) return 'ud';
  if ((a.function ?? 0) !== 0) return 'exit59_function';
  if (a.vmfunc >= 512) return 'exit59_range';
  return [0, 1, 2].includes(a.vmfunc) ? 'switched' : 'exit59_invalid';
}

/** EPT with a TLB, guest and nested page-walk caches and a nested TLB, none evicting in
 * so short a run. Guest tables at gpa pages 0x100-0x103; gva page 0x400+i -> gpa 0x200+i. */
function cacheModel(s: Scenario) {
  const tlb = new Map<number, boolean>();       // gva page -> filled by a write
  let gpwc = false;                             // the PD entry above every page is cached
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
    if ('invlpg' in a) { tlb.delete(pageOf(a.invlpg)); gpwc = false; continue; }
    if (!isMem(a)) throw new Error('unexpected event');
    const p = pageOf(a.gva);
    const c = { refs: 0, ntlb: 0, pwc: 0 };
    const write = a.op === 'write';
    if (tlb.has(p) && (!write || tlb.get(p))) { tlbHits++; last = c; continue; }
    const levels = gpwc ? [1] : [4, 3, 2, 1];
    if (gpwc) c.pwc++;
    for (const l of levels) { nested(0x100 + 4 - l, c); c.refs++; }
    nested(0x200 + (p - 0x400), c);
    tlb.set(p, write);
    gpwc = true;
    last = c;
  }
  return { tlbHits, ...last };
}

describe('exercises on sequences, checked by hand-written models', () => {
  const variants = new Map<string, number>();
  const count = (kind: string, v: string | undefined) => variants.set(`${kind}/${v}`, (variants.get(`${kind}/${v}`) ?? 0) + 1);
  const expectEngine = (ex: ReturnType<typeof generate>, want: string | number) => {
    const v = check(engine, ex, String(want));
    expect(v.correct, `${ex.spec.kind}/${ex.variant} seed ${ex.seed}: model ${want}, engine ${v.expected}: ${say(ex.prompt)}`).toBe(true);
    const wrong = typeof want === 'number' ? String(want + 1) : ex.input.type === 'choice' ? ex.input.choices.find((c) => c !== want)! : 'nope';
    expect(check(engine, ex, wrong).correct).toBe(false);
  };

  it('shadow-exits: exits for mov cr3 and page-table writes, and shadow references', () => {
    for (const seed of seeds) {
      const ex = generate({ kind: 'shadow-exits' }, seed);
      const m = shadowModel(ex.scenarios[0]);
      expectEngine(ex, ex.variant === 'exits' ? m.exits : m.refs);
      count('shadow-exits', ex.variant);
    }
  });

  it('flat-walk: references and exits of a lazy flat walk, flat fault against guest fault', () => {
    for (const seed of seeds) {
      const ex = generate({ kind: 'flat-walk' }, seed);
      const s = ex.scenarios[0];
      if (ex.variant === 'outcome') expectEngine(ex, flatOutcome(s));
      else { const m = flatModel(s); expectEngine(ex, ex.variant === 'refs' ? m.refs : m.exits); }
      count('flat-walk', ex.variant);
    }
  });

  it('vmfunc-switch: the EPTP index after switches, the exits, what one VMFUNC does', () => {
    for (const seed of seeds) {
      const ex = generate({ kind: 'vmfunc-switch' }, seed);
      const s = ex.scenarios[0];
      if (ex.variant === 'outcome') expectEngine(ex, vmfuncOutcome(s));
      else { const m = vmfuncModel(s); expectEngine(ex, ex.variant === 'index' ? m.index : m.exits); }
      count('vmfunc-switch', ex.variant);
    }
  });

  it('cache-hits: TLB hits over a sequence; references, nested-TLB and walk-cache hits of the last access', () => {
    for (const seed of seeds) {
      const ex = generate({ kind: 'cache-hits' }, seed);
      const m = cacheModel(ex.scenarios[0]);
      expectEngine(ex, { tlb: m.tlbHits, refs: m.refs, ntlb: m.ntlb, pwc: m.pwc }[ex.variant as 'tlb']);
      count('cache-hits', ex.variant);
    }
  });

  it('every variant of every new kind came up, and the answers vary', () => {
    for (const v of ['shadow-exits/exits', 'shadow-exits/refs', 'flat-walk/refs', 'flat-walk/exits', 'flat-walk/outcome',
      'vmfunc-switch/index', 'vmfunc-switch/exits', 'vmfunc-switch/outcome', 'cache-hits/tlb', 'cache-hits/refs', 'cache-hits/ntlb', 'cache-hits/pwc'])
      expect(variants.get(v) ?? 0, v).toBeGreaterThan(50);
    for (const kind of ['shadow-exits', 'flat-walk', 'vmfunc-switch', 'cache-hits'] as const) {
      const answers = new Set(seeds.slice(0, 200).map((seed) => { const ex = generate({ kind }, seed); return ex.expected(ex.scenarios.map((x) => engine.run(x))); }));
      expect(answers.size, kind).toBeGreaterThan(3);
    }
  });
});

describe('exercises in Japanese and Chinese', () => {
  const specs: ExerciseSpec[] = [
    ...['ept', 'npt', 'native'].map((mode) => ({ kind: 'compute-hpa', mode }) as ExerciseSpec),
    ...['ept', 'npt', 'native', 'flat'].map((mode) => ({ kind: 'count-refs', mode }) as ExerciseSpec),
    ...['ept', 'npt'].map((mode) => ({ kind: 'predict-exit', mode }) as ExerciseSpec),
    ...['ept', 'npt'].map((mode) => ({ kind: 'predict-bits', mode }) as ExerciseSpec),
    { kind: 'flat-table-size' }, { kind: 'which-wins', workloads: ['mcf', 'gcc', 'memcached'] },
    { kind: 'shadow-exits' }, { kind: 'flat-walk' }, { kind: 'vmfunc-switch' }, { kind: 'cache-hits' },
  ];
  const numbers = (t: string) => (t.match(/0x[0-9a-f]+|\d+/gi) ?? []).sort();
  for (const lang of ['ja', 'zh']) {
    it(`${lang}: every prompt, hint and choice is translated and keeps every number of the English`, () => {
      const t = i18n.getFixedT(lang, 'exercises');
      let n = 0;
      for (const spec of specs) {
        for (const seed of seeds.slice(0, 200)) {
          const ex = generate(spec, seed);
          for (const m of [ex.prompt, ex.hint]) {
            const en = say(m);
            const other = say(m, t);
            expect(other, en).not.toBe(en);
            expect(englishRuns(other), other).toEqual([]);
            const have = new Set(numbers(other));
            expect(numbers(en).filter((x) => !have.has(x)), `${en} / ${other}`).toEqual([]);
            n++;
          }
          if (ex.input.type === 'choice') for (const c of ex.input.choices) expect(i18n.exists(`exercises:choice.${c}`, { lng: lang })).toBe(true);
        }
      }
      expect(n).toBe(specs.length * 200 * 2);
    });
  }
});
