/* Exercises are checked by the engine; these tests check the engine's answers against
 * arithmetic done here, independently, for many seeds. */
import { describe, expect, it, beforeAll } from 'vitest';
import { generate, check, say, type ExerciseSpec } from './exercises';
import i18n from '../i18n';
import { englishRuns } from '../test/english';
import { testEngine } from '../test/engine';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { whichWinsEstimate, sequenceAnswer } from '../test/exerciseModels';

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

  it('count-refs: the engine agrees with g + (g + 1) n per read', () => {
    const levelsOf: Record<string, number> = { '4K': 1, '2M': 2, '1G': 3 };
    for (const mode of ['ept', 'npt', 'native', 'flat']) {
      for (const seed of seeds) {
        const ex = generate({ kind: 'count-refs', mode }, seed);
        const s = ex.scenarios[0];
        const g = (s.guest.paging === '5level' ? 5 : 4) - levelsOf[s.guest.mappings![0].page ?? '4K'] + 1;
        let n = 0;
        if (mode === 'flat') n = 1;
        if (mode === 'ept' || mode === 'npt') {
          const page = s.nested!.mappings[s.nested!.mappings.length - 1].page ?? '4K';
          n = (s.nested!.levels ?? 4) - levelsOf[page] + 1;
        }
        const refs = s.accesses.length * (g + (g + 1) * n);
        expect(check(engine, ex, String(refs)).correct, `${mode} seed ${seed}`).toBe(true);
        expect(check(engine, ex, String(refs + 1)).correct).toBe(false);
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

  it('flat-table-size: x GiB of guest RAM -> x MiB (Sunway) or 2x MiB (x86)', () => {
    for (const seed of seeds) {
      const ex = generate({ kind: 'flat-table-size' }, seed);
      const gib = Number(BigInt((ex.scenarios[0] as unknown as { flat: { guest_ram: string } }).flat.guest_ram) >> 30n);
      // 8-byte entries: one per 8 KiB Sunway frame (x MiB), one per 4 KiB x86 frame (2x MiB)
      const mib = ex.scenarios[0].guest.paging === 'sunway' ? gib : 2 * gib;
      expect(check(engine, ex, String(mib)).correct).toBe(true);
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
        const mapped = s.guest.mappings!.some((m) => BigInt(m.gva) === (BigInt(acc.gva) & ~0xfffn));
        if (!mapped) want = 'guest_page_fault';
        else if (ovr.length === 0) want = 'ok';
        else if (ovr[0].clear === '0x2') want = acc.op === 'write' ? (mode === 'ept' ? 'ept_violation' : 'npt_fault') : 'ok';
        else if (mode === 'ept' && ovr[0].clear === '0x1') want = 'ept_misconfig';
        else want = mode === 'ept' ? 'ept_violation' : 'npt_fault';
        expect(check(engine, ex, want).correct, `${mode} seed ${seed}: ${say(ex.prompt)}`).toBe(true);
        expect(check(engine, ex, want === 'ok' ? 'guest_page_fault' : 'ok').correct).toBe(false);
      }
    }
  });

  it('which-wins: the estimate the hint teaches picks the engine\'s winner, in a variant of each program and host', () => {
    for (const workload of ['mcf', 'gcc', 'memcached'] as const) {
      for (const seed of [5, 6, 17]) {
        const ex = generate({ kind: 'which-wins', workloads: [workload] }, seed);
        const want = whichWinsEstimate(ex.scenarios).mode;
        const v = check(engine, ex, want);
        expect(v.correct, `${workload} seed ${seed}: engine says ${v.expected}, the estimate ${want}`).toBe(true);
        expect(v.expected, `${workload} seed ${seed}: a tie`).not.toMatch(/ or /);
      }
    }
  });

  it('an unknown kind is a clear error', () => {
    expect(() => generate({ kind: 'nope' as never }, 1)).toThrow(/unknown exercise kind "nope"/);
  });
});


describe('exercises on sequences, checked by hand-written models', () => {
  const variants = new Map<string, number>();
  const count = (kind: string, v: string | undefined) => variants.set(`${kind}/${v}`, (variants.get(`${kind}/${v}`) ?? 0) + 1);
  const expectEngine = (ex: ReturnType<typeof generate>, want: string | number) => {
    const v = check(engine, ex, String(want));
    expect(v.correct, `${ex.spec.kind}/${ex.variant} seed ${ex.seed}: model ${want}, engine ${v.expected}: ${say(ex.prompt)}`).toBe(true);
    const wrong = typeof want === 'number' ? String(want + 1) : ex.input.type === 'choice' ? ex.input.choices.find((c) => c !== want)! : 'nope';
    expect(check(engine, ex, wrong).correct).toBe(false);
  };

  it.each([
    ['shadow-exits', 'exits for mov cr3 and page-table writes, and shadow references'],
    ['flat-walk', 'references and exits of a lazy flat walk, flat fault against guest fault'],
    ['vmfunc-switch', 'the EPTP index after switches, the exits, what one VMFUNC does'],
    ['cache-hits', 'TLB hits over a sequence; references, nested-TLB and walk-cache hits of the last access'],
  ] as const)('%s: %s', (kind, _what) => {
    for (const seed of seeds) {
      const ex = generate({ kind }, seed);
      const want = sequenceAnswer(ex);
      expect(want, kind).toBeDefined();
      expectEngine(ex, want!);
      count(kind, ex.variant);
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

describe('agile-walk, checked against the switching rule worked out by hand', () => {
  it('the warm walk costs (n - S) + S (m + 1) + m, or n all shadow; a write exits exactly above the switch', () => {
    const seen = { refs: 0, write: 0, exit: 0, noExit: 0 };
    const answers = new Set<string>();
    for (const seed of seeds) {
      const ex = generate({ kind: 'agile-walk' }, seed);
      const s = ex.scenarios[0];
      const n = s.guest.paging === '5level' ? 5 : 4;
      const m = s.nested!.levels ?? 4;
      const sw = s.agile!.switch_level ?? 0;
      let want: string;
      if (ex.variant === 'refs') {
        want = String(sw === 0 ? n : (n - sw) + sw * (m + 1) + m);
        expect(check(engine, ex, String(Number(want) + 1)).correct).toBe(false);
      } else {
        const level = (s.accesses[1] as { pte_write: { level: number } }).pte_write.level;
        want = level > sw ? 'exit' : 'noExit';
        seen[want as 'exit' | 'noExit']++;
        expect(check(engine, ex, want === 'exit' ? 'noExit' : 'exit').correct).toBe(false);
      }
      const v = check(engine, ex, want);
      expect(v.correct, `seed ${seed}: by hand ${want}, engine ${v.expected}: ${say(ex.prompt)}`).toBe(true);
      seen[ex.variant as 'refs' | 'write']++;
      answers.add(want);
    }
    expect(seen.refs).toBeGreaterThan(300);
    expect(seen.write).toBeGreaterThan(300);
    expect(seen.exit).toBeGreaterThan(50);
    expect(seen.noExit).toBeGreaterThan(50);
    expect(answers.size).toBeGreaterThan(8);
  });
});

describe('exercises in Japanese and Chinese', () => {
  const specs: ExerciseSpec[] = [
    ...['ept', 'npt', 'native'].map((mode) => ({ kind: 'compute-hpa', mode }) as ExerciseSpec),
    ...['ept', 'npt', 'native', 'flat'].map((mode) => ({ kind: 'count-refs', mode }) as ExerciseSpec),
    ...['ept', 'npt'].map((mode) => ({ kind: 'predict-exit', mode }) as ExerciseSpec),
    ...['ept', 'npt'].map((mode) => ({ kind: 'predict-bits', mode }) as ExerciseSpec),
    { kind: 'flat-table-size' }, { kind: 'which-wins', workloads: ['mcf', 'gcc', 'memcached'] },
    { kind: 'shadow-exits' }, { kind: 'flat-walk' }, { kind: 'vmfunc-switch' }, { kind: 'cache-hits' }, { kind: 'agile-walk' },
  ];
  const numbers = (t: string) => (t.match(/0x[0-9a-f]+|\d+/gi) ?? []).sort();
  for (const lang of ['ja', 'zh']) {
    it(`${lang}: every prompt, hint (both steps) and choice is translated and keeps every number of the English`, () => {
      const t = i18n.getFixedT(lang, 'exercises');
      let n = 0;
      for (const spec of specs) {
        for (const seed of seeds.slice(0, 200)) {
          const ex = generate(spec, seed);
          for (const m of [ex.prompt, ex.nudge, ex.hint]) {
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
      expect(n).toBe(specs.length * 200 * 3);
    });
  }
});
