/* The course's pure parts (web/server/course/): the lesson catalog against the grader's own
 * reading of the lessons, scores worked out by hand, rosters as Canvas, Moodle and a pasted
 * list give them, and the gradebook files' layouts. No database. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { loadCatalog } from '../../web/server/course/catalog.mjs';
import { gradebookCsv } from '../../web/server/course/gradebook.mjs';
import { parseRoster, ROSTER_MAX } from '../../web/server/course/roster.mjs';
import { DEFAULT_SETTINGS, exerciseScore, gradedLessons, studentScores } from '../../web/server/course/scoring.mjs';
import { checkSettings } from '../../web/server/course/settings.mjs';
import { root } from './helpers';

const fixture = (f: string) => readFileSync(join(__dirname, 'fixtures', f), 'utf8');
const S = { ...DEFAULT_SETTINGS };
let t = 0;
const at = () => new Date(Date.UTC(2026, 10, 20, 9, 0, t++)).toISOString();
const a = (verdict: string, extra: Record<string, unknown> = {}) => ({ seed: 1, verdict, hint: false, shown: false, at: at(), received_at: at(), ...extra });

describe('the lesson catalog', () => {
  it('lists every lesson with the exercises the grader numbers (web/server/gen/grade.mjs reads the same files its own way)', async () => {
    const cat = loadCatalog();
    expect(cat.map((l) => l.order)).toEqual([...cat.map((l) => l.order)].sort((x, y) => x - y));
    const bundle = join(root, 'web', 'server', 'gen', 'grade.mjs');
    if (!existsSync(bundle)) throw new Error('the grading bundle is not built: make web/server/gen/grade.mjs');
    const { SPECS } = await import(bundle);
    expect(Object.fromEntries(cat.map((l) => [l.id, l.kinds]))).toEqual(Object.fromEntries(Object.entries(SPECS as Record<string, { kind: string }[]>).map(([id, specs]) => [id, specs.map((s) => s.kind)])));
    for (const l of cat) for (const lang of ['en', 'ja', 'zh']) expect(l.title[lang], `${l.id} ${lang}`).toBeTruthy();
    expect(cat.find((l) => l.id === 'ept-and-npt')!.title.ja).not.toBe(cat.find((l) => l.id === 'ept-and-npt')!.title.en);
  });
});

describe('scores', () => {
  it('counts the first, best or last checked answer; blank checks and the shown answer itself are not answers', () => {
    const list = [a('empty'), a('wrong'), a('correct'), a('wrong')];
    expect(exerciseScore(list, 2, { ...S, counts: 'first' }, null)).toMatchObject({ score: 0, counted: true });
    expect(exerciseScore(list, 2, { ...S, counts: 'best' }, null).score).toBe(2);
    expect(exerciseScore(list, 2, { ...S, counts: 'last' }, null).score).toBe(0);
    expect(exerciseScore([a('empty')], 2, S, null)).toEqual({ score: 0, late: false, counted: false });
    // in any order: by the page's time
    expect(exerciseScore([...list].reverse(), 2, { ...S, counts: 'first' }, null).score).toBe(0);
  });
  it('gives a walk grid\'s wrong attempt its share of the points (cells right of all), with the same costs; other wrong answers none', () => {
    const grid = (right: number, extra: Record<string, unknown> = {}) => a('wrong', { score: { right, of: 26 }, ...extra });
    expect(exerciseScore([grid(13)], 2, S, null).score).toBe(1);
    expect(exerciseScore([grid(20), grid(23), grid(21)], 1, { ...S, counts: 'best' }, null).score).toBe(0.88);
    expect(exerciseScore([grid(20), grid(23), grid(21)], 1, { ...S, counts: 'last' }, null).score).toBe(0.81);
    expect(exerciseScore([grid(13, { hint: true })], 1, { ...S, hint_cost: 0.5 }, null).score).toBe(0.25);
    expect(exerciseScore([a('empty', { shown: true }), grid(26)], 1, S, null).score).toBe(0); // after the answer was shown
    expect(exerciseScore([a('wrong')], 1, S, null).score).toBe(0);
    expect(exerciseScore([grid(23), a('correct', { score: { right: 26, of: 26 } })], 1, S, null).score).toBe(1);
    // the lesson adds the share in
    const lessons = [{ id: 'l', title: {}, points: [1, 2], possible: 3 }];
    const r = studentScores([{ lesson: 'l', exercise: 0, ...a('correct') }, { lesson: 'l', exercise: 1, ...grid(13) }], lessons, S);
    expect(r.lessons.l).toMatchObject({ score: 2, exercises: [1, 1] });
  });
  it('takes the hint\'s and the shown answer\'s costs, the shown answer per variant and from when it was shown', () => {
    const s = { ...S, hint_cost: 0.25, shown_cost: 0.5 };
    expect(exerciseScore([a('correct', { hint: true })], 1, s, null).score).toBe(0.75);
    const shown = a('empty', { shown: true, seed: 7 });
    expect(exerciseScore([shown, a('correct', { seed: 7 })], 1, s, null).score).toBe(0.5);
    expect(exerciseScore([shown, a('correct', { seed: 8 })], 1, s, null).score).toBe(1); // another variant, solved without it
    expect(exerciseScore([a('correct', { seed: 7 }), { ...shown, at: at() }], 1, { ...s, counts: 'first' }, null).score).toBe(1); // solved before it was shown
    expect(exerciseScore([a('correct', { hint: true, shown: true })], 1, s, null).score).toBe(0.38); // 1 x 0.75 x 0.5, two decimals
  });
  it('marks answers that arrived after the closing time late, and takes their cost', () => {
    const closes = '2026-11-20T09:00:10.000Z';
    const late = { ...a('correct'), received_at: '2026-11-20T09:00:11.000Z' };
    expect(exerciseScore([late], 1, { ...S, late_cost: 0.2 }, closes)).toMatchObject({ score: 0.8, late: true });
    // best: a score on time beats the same score late
    const onTime = { ...a('correct'), received_at: '2026-11-20T09:00:09.000Z' };
    expect(exerciseScore([late, onTime], 1, S, closes)).toMatchObject({ score: 1, late: false });
  });
  it('sums exercises into lessons and lessons into the total, with each exercise\'s points', () => {
    const cat = [{ id: 'l1', title: { en: 'L1' }, kinds: ['x', 'y', 'z'] }, { id: 'l2', title: { en: 'L2' }, kinds: ['x'] }, { id: 'l3', title: { en: 'L3' }, kinds: [] }];
    const s = { ...S, points: { l1: [2, 0.5] } };
    const lessons = gradedLessons(cat, s);
    expect(lessons.map((l) => [l.id, l.points, l.possible])).toEqual([['l1', [2, 0.5, 1], 3.5], ['l2', [1], 1]]);
    const r = studentScores([
      { lesson: 'l1', exercise: 0, ...a('correct') }, { lesson: 'l1', exercise: 1, ...a('correct') }, { lesson: 'l2', exercise: 0, ...a('wrong') },
      { lesson: 'l9', exercise: 0, ...a('correct') }, // a lesson not graded
    ], lessons, s);
    expect(r).toMatchObject({ total: 2.5, possible: 4.5, late: [], lessons: { l1: { score: 2.5, exercises: [2, 0.5, null] }, l2: { score: 0, exercises: [0] } } });
    expect(gradedLessons(cat, { ...S, lessons: ['l2'] }).map((l) => l.id)).toEqual(['l2']);
  });
  it('refuses settings with the field named', () => {
    const cat = loadCatalog();
    expect(checkSettings({ closes_at: '2026-12-01T09:00Z' }, cat).closes_at).toBe('2026-12-01T09:00:00.000Z');
    expect(() => checkSettings({ lesson_closes: { 'no-such': null } }, cat)).toThrow(/lesson_closes\/no-such/);
    expect(() => checkSettings({ points: { vmfunc: [1, 1, 1, 1, 1, 1, 1, 1, 1] } }, cat)).toThrow(/points\/vmfunc/);
    expect(() => checkSettings({ points: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`l${i}`, [1]])) }, cat)).toThrow(/\/points/);
    expect(() => checkSettings([], cat)).toThrow();
  });
});

describe('rosters', () => {
  it('reads Canvas\'s gradebook export: names, Canvas ID, SIS User ID, SIS Login ID, section; no Points Possible row, no Test Student', () => {
    expect(parseRoster(fixture('roster-canvas.csv'))).toEqual([
      { name: 'Tanaka, Aiko', canvas_id: '101', sis_id: 'S001', login: 'aiko', section: 'Sec A', email: null },
      { name: 'Martin, Bea', canvas_id: '102', sis_id: 'S002', login: 'bea', section: 'Sec A', email: null },
      { name: 'Li, Wei', canvas_id: '103', sis_id: 'S003', login: 'wei', section: 'Sec B', email: null },
    ]);
  });
  it('reads Moodle\'s export (First name, Last name, ID number, Email address; a byte order mark)', () => {
    const r = parseRoster(fixture('roster-moodle.csv'));
    expect(r.map((e) => [e.name, e.sis_id, e.email])).toEqual([['Aiko Tanaka', 'S001', 'aiko@example.edu'], ['Bea Martin', 'S002', 'bea@example.edu'], ['王 伟', 'S003', 'wei@example.edu']]);
  });
  it('reads pasted lines without a header, comma or tab, ID or name first; a name twice gets its ID', () => {
    expect(parseRoster('S1, Ann Lee\nBo Chen,S2\n').map((e) => [e.sis_id, e.name])).toEqual([['S1', 'Ann Lee'], ['S2', 'Bo Chen']]);
    expect(parseRoster('ann@example.edu\tAnn\n').map((e) => [e.email, e.name])).toEqual([['ann@example.edu', 'Ann']]);
    expect(parseRoster('S1,Ann\nS2,Ann\n').map((e) => e.name)).toEqual(['Ann (S1)', 'Ann (S2)']);
    expect(parseRoster('氏名,学籍番号\n山田 太郎,2026001\n')[0]).toMatchObject({ name: '山田 太郎', sis_id: '2026001' });
  });
  it('refuses what it cannot match, naming the line', () => {
    expect(() => parseRoster('Name,Section\nAnn,A\n')).toThrow(/line 1/); // no identifier column: read as lines, and "Name" has no ID
    expect(() => parseRoster('Name,Student ID\nAnn,\n')).toThrow(/line 2: Ann has no student ID/);
    expect(() => parseRoster('Student,ID,SIS User ID\nAnn,x1,S1\n')).toThrow(/holds numbers/);
    expect(() => parseRoster(`Name,Student ID\n${'A'.repeat(61)},1\n`)).toThrow(/longer than 60/);
    expect(() => parseRoster(`Name,Student ID\n${Array.from({ length: ROSTER_MAX + 5 }, (_, i) => `N${i},${i}`).join('\n')}`)).toThrow(/at most 2000/);
    expect(() => parseRoster('"unclosed,1\n')).toThrow(/not CSV/);
  });
});

describe('gradebook layouts', () => {
  const lessons = [{ id: 'l1', title: { en: 'One, first', ja: '一' }, points: [1, 1], possible: 2 }, { id: 'l2', title: { en: '=2', ja: '二' }, points: [1], possible: 1 }];
  const sc = (l1: number, l2: number, late: string[] = []) => ({ lessons: { l1: { score: l1, possible: 2, late: late.includes('l1'), exercises: [] }, l2: { score: l2, possible: 1, late: false, exercises: [] } }, total: l1 + l2, possible: 3, late });
  const rows = [
    { name: 'Ann', sis_id: 'S1', email: 'ann@x.edu', login: null, canvas_id: '11', section: 'A', scores: sc(1.5, 1, ['l1']) },
    { name: 'Bo', sis_id: null, email: 'bo@x.edu', login: null, canvas_id: null, section: null, scores: null },
    { name: 'Cy (no roster)', sis_id: null, email: null, login: null, canvas_id: null, section: null, scores: sc(0, 0) },
  ];
  const read = (format: string, lang = 'en') => parse(gradebookCsv({ lessons, rows, format, lang }), { bom: true }) as string[][];
  it('plain: every row, lesson columns "Title (id)", total, possible, late; a title that starts like a formula neutralised', () => {
    expect(read('plain')).toEqual([
      ['ID', 'Email', 'Name', 'Section', 'One, first (l1)', "'=2 (l2)", 'Total', 'Possible', 'Late'],
      ['S1', 'ann@x.edu', 'Ann', 'A', '1.5', '1', '2.5', '3', 'l1'],
      ['', 'bo@x.edu', 'Bo', '', '', '', '', '3', ''],
      ['', '', 'Cy (no roster)', '', '0', '0', '0', '3', ''],
    ]);
  });
  it('canvas: the five identity columns, Points Possible, only rows Canvas can match', () => {
    expect(read('canvas')).toEqual([
      ['Student', 'ID', 'SIS User ID', 'SIS Login ID', 'Section', 'One, first (l1)', "'=2 (l2)"],
      ['Points Possible', '', '', '', '', '2', '1'],
      ['Ann', '11', 'S1', '', 'A', '1.5', '1'],
    ]);
  });
  it('moodle: ID number and Email address to map from, a column per grade item, titles in the language asked', () => {
    expect(read('moodle', 'ja')).toEqual([
      ['ID number', 'Email address', 'Full name', '一', '二'],
      ['S1', 'ann@x.edu', 'Ann', '1.5', '1'],
      ['', 'bo@x.edu', 'Bo', '', ''],
    ]);
  });
});

describe('the results CSV\'s figures', () => {
  it('are rounded as the page shows them (charts.ts\'s fmt), as plain numbers', async () => {
    const { shown } = await import('../../web/server/csv.mjs');
    const { fmt } = await import('../../web/src/results/charts');
    for (const v of [1933.8332037263747, -1933.5, 123.456, 12.34, 9.876, 1.005, 0.012345, 0, 250000.4, -3]) {
      expect(String(shown(v)), String(v)).toBe(String(Number(fmt(v, 'en-US').replace(/,/g, ''))));
    }
    expect(shown(1933.8332037263747)).toBe(1934);
    expect(shown(undefined)).toBe('');
  });
});

describe('the rehearsal sample (hw-lab/samples/quick-in-a-vm.json)', () => {
  it('is a valid result that plots on the class chart\'s opening measure', async () => {
    const Ajv2020 = (await import('ajv/dist/2020.js')).default;
    const schema = JSON.parse(readFileSync(join(root, 'hw-lab', 'schema', 'result.schema.json'), 'utf8'));
    const sample = JSON.parse(readFileSync(join(root, 'hw-lab', 'samples', 'quick-in-a-vm.json'), 'utf8'));
    const validate = new Ajv2020({ strict: false }).compile(schema);
    expect(validate(sample), JSON.stringify(validate.errors)).toBe(true);
    const { summarize } = await import('../../web/src/results/extract.mjs');
    const s = summarize(sample);
    expect(s.metrics.cpuid_published_min_cycles).toBeGreaterThan(0);
    expect(s.hypervisor).not.toBe('none (bare metal)');
  });
});
