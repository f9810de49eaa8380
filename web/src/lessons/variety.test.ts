/* Exercises that vary and a checker that forgives how an answer is written. Every kind of
 * exercise (and every spec a lesson embeds): the first 20 seeds ask 20 different questions,
 * and over seeds 1..1000 no answer is right for more than 60 % of them (the engine's
 * answers; which-wins, whose check runs three streams, by its rule over 1,000 seeds and by
 * the engine on the first 40). Then the checker: units and words after numbers, hex with
 * `_` and spaces, full-width digits, and a unit other than the one asked for. And the
 * hints, a nudge and then the method, checked against the answer of 1,000 seeds in every
 * language: neither step says it. */
import { beforeAll, describe, expect, it } from 'vitest';
import i18n from '../i18n';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import { LANGS, LESSONS } from './content';
import { answered, check, generate, judge, say, type Exercise, type ExerciseSpec } from './exercises';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });

const GENERIC: ExerciseSpec[] = [
  ...['ept', 'npt', 'native'].map((mode) => ({ kind: 'compute-hpa', mode }) as ExerciseSpec),
  ...['ept', 'npt', 'native', 'flat'].map((mode) => ({ kind: 'count-refs', mode }) as ExerciseSpec),
  ...['ept', 'npt'].map((mode) => ({ kind: 'predict-exit', mode }) as ExerciseSpec),
  ...['ept', 'npt'].map((mode) => ({ kind: 'predict-bits', mode }) as ExerciseSpec),
  { kind: 'flat-table-size' }, { kind: 'which-wins' },
  { kind: 'shadow-exits' }, { kind: 'flat-walk' }, { kind: 'vmfunc-switch' }, { kind: 'cache-hits' },
];
const SPECS = new Map<string, ExerciseSpec>();
for (const spec of GENERIC) SPECS.set(JSON.stringify(spec), spec);
for (const lang of LANGS) for (const l of Object.values(LESSONS[lang])) for (const p of l.parts) if (p.type === 'exercise') SPECS.set(JSON.stringify(p.spec), p.spec);

const answerOf = (ex: Exercise) => ex.expected(ex.scenarios.map((s) => engine.run(s)));
/** which-wins by its rule: shadow paging without PTE writes or mov cr3, else the 2 MiB host. */
const whichRule = (ex: Exercise) => {
  const s = ex.scenarios[0];
  if (!s.accesses.some((a) => 'pte_write' in a || 'mov_cr3' in a)) return 'shadow';
  return ex.scenarios.find((x) => x.nested?.mappings.some((m) => m.page === '2M'))!.mode;
};

describe('exercises vary', () => {
  for (const [name, spec] of SPECS) {
    it(`${name}: 20 different questions in seeds 1-20, no answer right for more than 60 % of seeds 1-1000`, () => {
      const prompts = Array.from({ length: 20 }, (_, i) => say(generate(spec, i + 1).prompt));
      const repeated = prompts.filter((p, i) => prompts.indexOf(p) !== i);
      expect(repeated, name).toEqual([]);
      const ww = spec.kind === 'which-wins';
      const counts = new Map<string, number>();
      const n = 1000;
      for (let seed = 1; seed <= n; seed++) {
        const ex = generate(spec, seed);
        if (ww && seed <= 40) expect(answerOf(ex), `${name} seed ${seed}`).toBe(whichRule(ex));
        const answer = ww ? whichRule(ex) : answerOf(ex);
        for (const a of answer.split(' or ')) counts.set(a, (counts.get(a) ?? 0) + 1);
      }
      for (const [a, c] of counts) expect(c / n, `${name}: "${a}" is right for ${c} of ${n} seeds`).toBeLessThanOrEqual(0.6);
      if (ww) expect([...counts.keys()].length, `${name}: more than one mode wins`).toBeGreaterThan(1);
    }, 300_000);
  }
  it('which-wins with every workload: each of shadow paging, EPT and NPT wins for some seeds', () => {
    const winners = new Set(Array.from({ length: 60 }, (_, i) => whichRule(generate({ kind: 'which-wins' }, i + 1))));
    expect([...winners].sort()).toEqual(['ept', 'npt', 'shadow']);
  });
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
  for (const [name, spec] of SPECS) {
    it(`${name}: the nudge and the method, in en, ja and zh, over 1,000 seeds`, () => {
      const ts = LANGS.map((l) => i18n.getFixedT(l, 'exercises'));
      const ww = spec.kind === 'which-wins';
      for (let seed = 1; seed <= 1000; seed++) {
        const ex = generate(spec, seed);
        expect(say(ex.nudge), name).not.toBe(say(ex.hint));
        // which-wins by its rule (its check runs three streams); the others by the engine
        const expected = ww ? whichRule(ex) : answerOf(ex);
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
