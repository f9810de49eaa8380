/* Exercises that vary and a checker that forgives how an answer is written. Every kind of
 * exercise (and every spec a lesson embeds): the first 20 seeds ask 20 different questions,
 * and over the seeds of a class of 300 (progress/seed.ts, the seeds students get) no variant
 * of a question has one answer right for more than 45 % of them (65 % for a question with
 * two possible answers, such as exit or no exit): the engine's answers. which-wins, whose
 * variants are a finite list, over all of them by the engine: what changes its winner,
 * the winner's lead, and the estimate its hint teaches. Then the checker: units and words
 * after numbers, hedges before them, hex with `_`, spaces and a full stop, full-width
 * digits, and a unit other than the one asked for. And the hints, a nudge and then the
 * method, checked against the answer of 1,000 seeds in every language: neither step says it. */
import { beforeAll, describe, expect, it } from 'vitest';
import i18n from '../i18n';
import type { Scenario, Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import { whichWinsEstimate } from '../test/exerciseModels';
import { seedFor } from '../progress/seed';
import { LANGS, LESSONS } from './content';
import { answered, check, generate, judge, say, type Exercise, type ExerciseSpec } from './exercises';
import { WHICH_WINS, countsAsResult, whichWinsCosts, whichWinsScenarios, whichWinsVariants, type WhichWinsVariant } from './kinds/which-wins';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });

const GENERIC: ExerciseSpec[] = [
  ...['ept', 'npt', 'native'].map((mode) => ({ kind: 'compute-hpa', mode }) as ExerciseSpec),
  ...['ept', 'npt', 'native', 'flat'].map((mode) => ({ kind: 'count-refs', mode }) as ExerciseSpec),
  ...['ept', 'npt'].map((mode) => ({ kind: 'predict-exit', mode }) as ExerciseSpec),
  ...['ept', 'npt'].map((mode) => ({ kind: 'predict-bits', mode }) as ExerciseSpec),
  { kind: 'flat-table-size' }, { kind: 'which-wins' },
  { kind: 'shadow-exits' }, { kind: 'flat-walk' }, { kind: 'vmfunc-switch' }, { kind: 'cache-hits' }, { kind: 'agile-walk' },
  ...['ept', 'npt', 'agile'].map((mode) => ({ kind: 'walk-grid', mode }) as ExerciseSpec),
];
/** Each spec with where its students meet it (a lesson and the exercise's place in it). */
const SPECS = new Map<string, { spec: ExerciseSpec; lesson: string; index: number }>();
GENERIC.forEach((spec, i) => SPECS.set(JSON.stringify(spec), { spec, lesson: 'generic', index: i }));
for (const lang of LANGS) for (const l of Object.values(LESSONS[lang])) for (const p of l.parts) {
  if (p.type === 'exercise') SPECS.set(JSON.stringify(p.spec), { spec: p.spec, lesson: l.meta.id, index: p.index });
}
const CLASS = Array.from({ length: 300 }, (_, i) => `student ${i + 1}`);

/** which-wins weighs only each access's memory references and exits: its three streams run
 * through the engine's counts (the same walks without their steps; tests/server/
 * grade-counts.test.ts checks, access by access, that they are run()'s), about a tenth of
 * the time of whole results. */
const countsOf = (s: Scenario) => countsAsResult(engine.runCounts(s));
// which-wins runs three streams per check: one engine run per variant (its prompt names it)
const memo = new Map<string, string>();
const answerOf = (ex: Exercise) => {
  const key = ex.spec.kind === 'which-wins' ? say(ex.prompt) : null;
  const known = key && memo.get(key);
  if (known) return known;
  const a = ex.expected(ex.scenarios.map((s) => (key ? countsOf(s) : engine.run(s))));
  if (key) memo.set(key, a);
  return a;
};

describe('exercises vary', () => {
  for (const [name, { spec, lesson, index }] of SPECS) {
    it(`${name}: 20 different questions in seeds 1-20; over a class of 300, no variant right with one answer for more than 45 % (two-answer questions 65 %)`, () => {
      const prompts = Array.from({ length: 20 }, (_, i) => say(generate(spec, i + 1).prompt));
      const repeated = prompts.filter((p, i) => prompts.indexOf(p) !== i);
      expect(repeated, name).toEqual([]);
      const byVariant = new Map<string, { n: number; counts: Map<string, number>; limit: number }>();
      for (const student of CLASS) {
        const ex = generate(spec, seedFor('VARIETY', student, lesson, index));
        const limit = ex.input.type === 'choice' && ex.input.choices.length === 2 ? 0.65 : 0.45;
        const v = byVariant.get(ex.variant ?? '') ?? { n: 0, counts: new Map(), limit };
        byVariant.set(ex.variant ?? '', v);
        v.n++;
        for (const a of answerOf(ex).split(' or ')) v.counts.set(a, (v.counts.get(a) ?? 0) + 1);
      }
      for (const [variant, { n, counts, limit }] of byVariant) {
        expect(counts.size, `${name} ${variant}: one answer for every student`).toBeGreaterThan(1);
        for (const [a, c] of counts) expect(c / n, `${name} ${variant}: "${a}" is right for ${c} of ${n} students`).toBeLessThanOrEqual(limit);
      }
    }, 600_000);
  }
});

describe('which-wins needs the reasoning: every variant, by the engine', () => {
  const runs = new Map<string, { winner: string; costs: number[] }>();
  const key = (v: WhichWinsVariant) => JSON.stringify(v);
  const run = (v: WhichWinsVariant) => {
    let r = runs.get(key(v));
    if (!r) {
      const { scenarios, warm } = whichWinsScenarios(v);
      const costs = whichWinsCosts(scenarios.map(countsOf), warm);
      r = { winner: ['shadow', 'ept', 'npt'][costs.indexOf(Math.min(...costs))], costs };
      runs.set(key(v), r);
    }
    return r;
  };
  const ALL = whichWinsVariants({ kind: 'which-wins' });
  const lessonSpecs = [...SPECS.values()].filter((x) => x.spec.kind === 'which-wins');

  it('a finite list: 72 variants for the three programs, each its own question', () => {
    expect(ALL.length).toBe(72);
    const prompts = new Set(ALL.map((_, i) => say(generate({ kind: 'which-wins' }, i + 1).prompt)));
    expect(prompts.size).toBe(72);
  });
  it('the winner costs at least 10 % less than the runner-up, never a tie, never the host with 4 KiB nested pages; the hint\'s estimate picks it', () => {
    for (const v of ALL) {
      const { winner, costs } = run(v);
      const sorted = [...costs].sort((a, b) => a - b);
      expect(sorted[1] / sorted[0], `${key(v)}: ${costs}`).toBeGreaterThanOrEqual(1.1);
      expect([v.big, 'shadow'], key(v)).toContain(winner);
      const ex = generate({ kind: 'which-wins' }, ALL.indexOf(v) + 1);
      const scenarios = whichWinsScenarios(v).scenarios;
      expect(whichWinsEstimate(scenarios).mode, `${key(v)}: the estimate`).toBe(winner);
      expect(ex.scenarios.length).toBe(3);
    }
  }, 600_000);
  it('the TLB size, the interval and the number of processes each change the winner', () => {
    const changes = (param: keyof WhichWinsVariant) => ALL.some((v) => ALL.some((w) =>
      w[param] !== v[param] && (Object.keys(v) as (keyof WhichWinsVariant)[]).every((k) => k === param || v[k] === w[k]) && run(v).winner !== run(w).winner));
    for (const p of ['tlb', 'every', 'processes'] as const) expect(changes(p), p).toBe(true);
  }, 600_000);
  it('no program and 2 MiB host fix the answer: shadow paging and that host each win some; every lesson that asks has each mode win', () => {
    for (const workload of Object.keys(WHICH_WINS.every)) for (const big of ['ept', 'npt'] as const) {
      const winners = new Set(ALL.filter((v) => v.workload === workload && v.big === big).map((v) => run(v).winner));
      expect([...winners].sort(), `${workload}, 2 MiB pages on ${big}`).toEqual([big, 'shadow'].sort());
    }
    expect(lessonSpecs.length).toBeGreaterThanOrEqual(3);
    for (const { spec, lesson } of lessonSpecs) {
      const winners = new Set(whichWinsVariants(spec).map((v) => run(v).winner));
      expect([...winners].sort(), lesson).toEqual(['ept', 'npt', 'shadow']);
    }
  }, 600_000);
});

describe('the checker forgives how an answer is written', () => {
  const num = (unit?: 'refs' | 'exits' | 'hits' | 'MiB') => ({ input: { type: 'number', ...(unit ? { unit } : {}) } }) as Pick<Exercise, 'input'>;
  const hexIn = { input: { type: 'hex' } } as Pick<Exercise, 'input'>;
  it('units and words after numbers, spaces and full-width digits', () => {
    for (const a of ['8', '8 MiB', '8MiB', '8 mib', '8 MB', '８', '８ ＭｉＢ', ' 8 MiB. ']) expect(judge(num('MiB'), '8', a), a).toBe(true);
    for (const a of ['3', '3 references', '3 refs', '3 memory references', '3 times', '3 回', '３回', '3 次', '3次访存', '3 回の参照']) expect(judge(num('refs'), '3', a), a).toBe(true);
    for (const a of ['2 exits', '2 VM exits', '2 回', '2次退出']) expect(judge(num('exits'), '2', a), a).toBe(true);
    for (const a of ['5 hits', '5 TLB hits', '5 次命中']) expect(judge(num('hits'), '5', a), a).toBe(true);
    expect(judge(num('refs'), '1024', '1,024 refs')).toBe(true);
    expect(judge(num('refs'), '1024', '1_024')).toBe(true);
  });
  it('an estimate said as one ("about 5", "~5", 約 5, 大约 5) and "memory accesses" are read', () => {
    for (const a of ['about 5', '~5', '~ 5', '≈5', 'around 5 refs', 'roughly 5 references', '5 memory accesses', 'about 5 memory accesses', '約5回', '大约 5 次', '5 次内存读取'])
      expect([judge(num('refs'), '5', a), answered(num('refs'), a)], a).toEqual([true, true]);
    expect(judge(num('refs'), '5', 'about 6')).toBe(false);
    for (const a of ['0x1ab.', '0x1ab。', '1ab.', 'about 0x1ab', ' 0x1AB. ']) expect([judge(hexIn, '0x1ab', a), answered(hexIn, a)], a).toEqual([true, true]);
    expect(answered(hexIn, '0x1ab..')).toBe(false);
  });
  it('hex with or without 0x, in any case, with _ or spaces between digits, full-width', () => {
    for (const a of ['0xbb12ffb2', 'bb12ffb2', '0xBB12_FFB2', '0xbb12 ffb2', 'BB12 FFB2', '０ｘｂｂ１２ｆｆｂ２', ' 0xbb12_ffb2 '])
      expect([judge(hexIn, '0xbb12ffb2', a), answered(hexIn, a)], a).toEqual([true, true]);
    expect(judge(hexIn, '0xbb12ffb2', '0xbb12ffb3')).toBe(false);
  });
  it('a unit other than the one asked for is wrong, with a note that names the unit asked for', () => {
    for (const [ex, a] of [[num('MiB'), '8 KiB'], [num('MiB'), '8 GiB'], [num('MiB'), '8 times'], [num('refs'), '3 exits'], [num('refs'), '3 ns'],
      [num('refs'), '3 cycles'], [num('exits'), '3 refs'], [num(), '3 MiB']] as const) {
      expect(answered(ex, a), a).toBe(true);
      expect(judge(ex, a.split(' ')[0], a), a).toBe(false);
    }
    const ex = generate({ kind: 'flat-table-size' }, 1);
    const right = answerOf(ex);
    const v = check(engine, ex, `${right} KiB`);
    expect(v.correct).toBe(false);
    expect(say(v.unitNote!)).toBe('Check the unit: this question asks for a size in MiB.');
    expect(check(engine, ex, `${right} MiB`)).toMatchObject({ correct: true });
    expect(check(engine, ex, `${right} MiB`).unitNote).toBeUndefined();
  });
  it('words that name no unit, or no number, are not an answer yet', () => {
    for (const a of ['', '  ', 'three', '3 bananas', 'MiB']) expect(answered(num('MiB'), a), a).toBe(false);
    for (const a of ['', 'xyz', '0x', '0xg1']) expect(answered(hexIn, a), a).toBe(false);
  });
});

describe('hints come in two steps and never say the answer', () => {
  /** Whether `text` holds `answer` as a number or hex of its own (not inside another word). */
  const holds = (text: string, answer: string) =>
    new RegExp(`(?<![0-9a-z_.])${answer.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![0-9a-z_])`, 'i').test(text);
  for (const [name, { spec }] of SPECS) {
    it(`${name}: the nudge and the method, in en, ja and zh, over 1,000 seeds`, () => {
      const ts = LANGS.map((l) => i18n.getFixedT(l, 'exercises'));
      for (let seed = 1; seed <= 1000; seed++) {
        const ex = generate(spec, seed);
        expect(say(ex.nudge), name).not.toBe(say(ex.hint));
        const expected = answerOf(ex);
        for (const t of ts) {
          for (const m of [ex.nudge, ex.hint]) {
            const text = say(m, t);
            for (const a of expected.split(' or ')) {
              if (ex.input.type !== 'choice') { expect(holds(text, a), `${name} seed ${seed}: "${a}" in "${text}"`).toBe(false); continue; }
              // a choice may be named only where every choice is (the hint then singles none out)
              const words = (c: string) => t(`choice.${c}`).toLowerCase();
              if (text.toLowerCase().includes(words(a)))
                expect(ex.input.choices.filter((c) => !text.toLowerCase().includes(words(c))), `${name} seed ${seed}: "${a}" named in "${text}"`).toEqual([]);
            }
          }
        }
      }
    }, 300_000);
  }
  it('the native count-refs method is about the guest\'s own levels, not the 2-D walk', () => {
    expect(say(generate({ kind: 'count-refs', mode: 'native' }, 1).hint)).not.toMatch(/2-D|nested/);
  });
});
