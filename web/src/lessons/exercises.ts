/* Exercises in the OSTEP style: generated from a seed (the seed goes in the URL, so a
 * link reproduces the exercise) and checked by running the engine on the generated
 * scenario. No answer is stored anywhere: the engine computes it when checking. Each kind
 * is a file of its own under kinds/ behind the shape in shape.ts; this file is their table,
 * what says a message, and the checker. */
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { englishFor, type T } from '../i18n';
import { EXERCISE_KINDS, msg, type Exercise, type ExerciseKind, type ExerciseSpec, type GridInput, type Msg, type Unit, type Verdict } from './shape';
import { computeHpa } from './kinds/compute-hpa';
import { countRefs } from './kinds/count-refs';
import { predictExit } from './kinds/predict-exit';
import { predictBits } from './kinds/predict-bits';
import { flatTableSize } from './kinds/flat-table-size';
import { whichWins } from './kinds/which-wins';
import { shadowExits } from './kinds/shadow-exits';
import { flatWalk } from './kinds/flat-walk';
import { vmfuncSwitch } from './kinds/vmfunc-switch';
import { cacheHits } from './kinds/cache-hits';
import { agileWalk } from './kinds/agile-walk';
import { walkGrid } from './kinds/walk-grid';

export { EXERCISE_KINDS, type Exercise, type ExerciseKind, type ExerciseSpec, type GridInput, type Msg, type Unit, type Verdict };

/** The sentence in the language of `t` (a `t` for the exercises namespace; English by default). */
export function say(m: Msg, t: T = englishFor('exercises')): string {
  const values: Record<string, string | number> = {};
  for (const [k, v] of Object.entries(m.values ?? {})) {
    values[k] = Array.isArray(v) ? v.map((x, i) => t('item', { n: i + 1, what: say(x, t) })).join(t('sep'))
      : typeof v === 'object' ? say(v, t) : v;
  }
  return t(m.key, values);
}

const GENERATORS: Record<ExerciseKind, (spec: ExerciseSpec, seed: number) => Exercise> = {
  'compute-hpa': computeHpa,
  'count-refs': countRefs,
  'predict-exit': predictExit,
  'predict-bits': predictBits,
  'flat-table-size': flatTableSize,
  'which-wins': whichWins,
  'shadow-exits': shadowExits,
  'flat-walk': flatWalk,
  'vmfunc-switch': vmfuncSwitch,
  'cache-hits': cacheHits,
  'agile-walk': agileWalk,
  'walk-grid': walkGrid,
};

export function generate(spec: ExerciseSpec, seed: number): Exercise {
  const gen = GENERATORS[spec.kind];
  if (!gen) throw new Error(`unknown exercise kind "${spec.kind}"`);
  return gen(spec, seed);
}

/* Words a learner may write after a number, by what they name. Counting words that name
 * nothing in particular ("times", 回, 次) go with any count. */
const UNIT_WORDS: Record<string, string[]> = {
  refs: ['ref', 'refs', 'reference', 'references', 'memory reference', 'memory references', 'memory refs', 'mem refs', 'accesses', 'reads',
    'memory access', 'memory accesses', 'memory reads', 'entry reads', 'table reads', 'page-table reads', 'メモリアクセス', '回のメモリアクセス', '次内存读取',
    '参照', '回の参照', 'メモリ参照', '回のメモリ参照', '次访存', '次内存访问', '次引用', '次内存引用', '访存'],
  exits: ['exit', 'exits', 'vm exit', 'vm exits', 'vmexit', 'vmexits', '回の exit', '回の vm exit', '次退出', '次 vm exit', '退出'],
  hits: ['hit', 'hits', 'tlb hits', 'tlb hit', 'ヒット', '回ヒット', '次命中', '命中'],
  MiB: ['mib', 'mb', 'm', 'mbyte', 'mbytes', 'mebibyte', 'mebibytes', 'megabyte', 'megabytes'],
  KiB: ['kib', 'kb', 'k', 'kibibytes', 'kilobytes'],
  GiB: ['gib', 'gb', 'g', 'gibibytes', 'gigabytes'],
  bytes: ['b', 'byte', 'bytes', 'バイト', '字节'],
  cycles: ['cycle', 'cycles', 'サイクル', '周期', '个周期'],
  ns: ['ns', 'nanoseconds', 'ナノ秒', '纳秒'],
};
const COUNT_WORDS = ['x', 'times', '回', '次', '個', '个', 'つ'];
const COUNTS: Unit[] = ['refs', 'exits', 'hits'];

/** An answer as typed, made plain: full-width digits and letters of a Japanese or Chinese
 * input method become ASCII, case and surrounding spaces go. */
const plain = (answer: string) => answer.normalize('NFKC').trim().toLowerCase().replace(/\s+/g, ' ');

/* Words before a number that only hedge it ("about 5", "~5", 約 5, 大约 5): an estimate
 * the learner worked out is still their answer, so the number after them is read. */
const HEDGES = /^(?:about|around|approximately|approx\.?|roughly|circa|~|≈|約|およそ|だいたい|大约|约|大概)\s*/;
const unhedged = (a: string) => a.replace(HEDGES, '');

type Parsed = { value: string; unit: string | null } | null;

/** A number answer: the digits (with `_`, `,` or spaces between groups) and the word
 * after them, if any, as the unit it names ('?' for a word that names none). */
function parseNumber(a: string): Parsed {
  const m = /^(\d+(?:[ _,]\d{3})*|\d[\d_]*)\s*(.*)$/.exec(unhedged(a));
  if (!m) return null;
  const value = String(Number(m[1].replace(/[ _,]/g, '')));
  const word = m[2].replace(/[.。]$/, '').trim();
  if (!word) return { value, unit: null };
  if (COUNT_WORDS.includes(word)) return { value, unit: 'count' };
  const unit = Object.keys(UNIT_WORDS).find((u) => UNIT_WORDS[u].includes(word));
  return { value, unit: unit ?? '?' };
}

/** A hex answer: with or without 0x, with `_` or spaces between digits, and the full
 * stop that ends a sentence after it ("0x1ab."). */
function parseHex(a: string): string | null {
  const m = /^(?:0x)?([0-9a-f][0-9a-f_ ]*?)\s*[.。]?$/.exec(unhedged(a));
  if (!m) return null;
  try { return '0x' + BigInt('0x' + m[1].replace(/[_ ]/g, '')).toString(16); } catch { return null; }
}

function normalise(input: Exercise['input'], answer: string): string {
  const a = plain(answer);
  if (input.type === 'hex') return parseHex(a) ?? a;
  if (input.type === 'number') return parseNumber(a)?.value ?? a;
  return a;
}

/** Whether the unit written after a number is one the question allows: none, a plain
 * counting word for a count, or the unit asked for. */
function unitFits(input: Exercise['input'], answer: string): boolean {
  if (input.type !== 'number') return true;
  const unit = parseNumber(plain(answer))?.unit ?? null;
  if (unit === null) return true;
  if (unit === 'count') return input.unit !== 'MiB';
  return unit === input.unit;
}

/** Whether `answer` is the engine's `expected` answer as the learner may write it (a hex
 * number in any case, with or without 0x, with `_` or spaces between digits; a number
 * with the unit asked for or a counting word after it; full-width digits; either of two
 * modes that tie). A unit other than the one asked for is wrong whatever the number. */
export function judge(ex: Pick<Exercise, 'input'>, expected: string, answer: string): boolean {
  if (ex.input.type === 'grid') { const g = gridScore(ex.input, expected, answer); return g.right === g.of; }
  if (!unitFits(ex.input, answer)) return false;
  const accepted = expected.split(' or ').map((e) => normalise(ex.input, e));
  return accepted.includes(normalise(ex.input, answer));
}

/** What to say about an answer whose unit is not the one asked for (undefined if it fits). */
export function unitNote(ex: Pick<Exercise, 'input'>, answer: string): Msg | undefined {
  if (unitFits(ex.input, answer) || ex.input.type !== 'number') return undefined;
  return msg('unit.wrong', { asked: msg(`unit.${ex.input.unit ?? 'none'}`) });
}

/** Runs the engine on the exercise's scenarios and compares with the learner's answer. */
export function check(engine: Pick<Vmsim, 'run'>, ex: Exercise, answer: string): Verdict {
  const results = ex.scenarios.map((s) => engine.run(s));
  const expected = ex.expected(results);
  const note = unitNote(ex, answer);
  const score = ex.input.type === 'grid' ? gridScore(ex.input, expected, answer) : undefined;
  return { correct: judge(ex, expected, answer), expected, results, ...(note ? { unitNote: note } : {}), ...(score ? { score } : {}) };
}

/** A grid answer's cells, as the page writes it ("n4 n3 ... | 0x... 0x..."): the tables
 * (lower case; an empty cell "-") and the addresses (hex as the checker reads it). */
export function gridCells(input: GridInput, answer: string): string[] {
  const [tables = '', addresses = ''] = answer.normalize('NFKC').toLowerCase().split('|');
  const t = tables.trim().split(/\s+/).filter(Boolean);
  const a = addresses.trim().split(/\s+/).filter(Boolean);
  return [...Array.from({ length: input.refs }, (_, i) => t[i] ?? '-'),
    ...input.addresses.map((_, i) => (a[i] ? parseHex(a[i]) ?? a[i] : '-'))];
}

/** The grid as text, from its cells (the page builds the answer with it). */
export function gridAnswer(input: GridInput, cells: string[]): string {
  const t = cells.slice(0, input.refs).map((c) => c.trim() || '-');
  const a = cells.slice(input.refs).map((c) => c.trim().replace(/\s+/g, '') || '-');
  return `${t.join(' ')} | ${a.join(' ')}`;
}

/** Partial credit: which cells of a grid answer match the engine's grid. */
export function gridScore(input: GridInput, expected: string, answer: string): { right: number; of: number; cells: boolean[] } {
  const want = gridCells(input, expected);
  const got = gridCells(input, answer);
  const cells = want.map((w, i) => got[i] !== '-' && got[i] === w);
  return { right: cells.filter(Boolean).length, of: cells.length, cells };
}

/** Whether an answer is there to check at all (blank, a number field without a number, a
 * word after it that names no unit, or a hex field without a hex number). */
export function answered(ex: Pick<Exercise, 'input'>, answer: string): boolean {
  const a = plain(answer);
  if (!a) return false;
  if (ex.input.type === 'number') { const p = parseNumber(a); return !!p && p.unit !== '?'; }
  if (ex.input.type === 'hex') return parseHex(a) !== null;
  if (ex.input.type === 'grid') return gridCells(ex.input, a).some((c) => c !== '-');
  return ex.input.choices.includes(answer.trim());
}
