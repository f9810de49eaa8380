/* Every namespace's Japanese and Chinese files carry exactly the English keys, with the
 * same {{placeholders}} and no empty strings; nothing falls back to English by accident. */
import { describe, expect, it } from 'vitest';
import i18n, { NAMESPACES, resources, tEn } from '../i18n';

type Tree = Record<string, unknown>;
function leaves(t: Tree, prefix = ''): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(t)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object') for (const [kk, vv] of leaves(v as Tree, key)) out.set(kk, vv);
    else out.set(key, String(v));
  }
  return out;
}
const placeholders = (s: string) => [...s.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]).sort();

describe('locales', () => {
  it('has every namespace in English', () => {
    for (const ns of NAMESPACES) expect(resources.en[ns], ns).toBeTruthy();
  });
  for (const lang of ['ja', 'zh']) {
    for (const ns of NAMESPACES) {
      it(`${lang}/${ns} has the English keys, the same placeholders and no blanks`, () => {
        const en = leaves(resources.en[ns] as Tree);
        const other = leaves((resources[lang]?.[ns] ?? {}) as Tree);
        expect([...en.keys()].filter((k) => !other.has(k)), 'missing keys').toEqual([]);
        expect([...other.keys()].filter((k) => !en.has(k)), 'keys English lacks').toEqual([]);
        for (const [k, v] of other) {
          expect(v.trim(), `${lang}/${ns}:${k} is blank`).not.toBe('');
          expect(placeholders(v), `${lang}/${ns}:${k} placeholders`).toEqual(placeholders(en.get(k)!));
        }
      });
    }
  }
  it('falls back to English for a key a language lacks, never to blank', () => {
    i18n.addResource('en', 'views', 'test_only_key', 'English only');
    expect(i18n.getFixedT('ja', 'views')('test_only_key')).toBe('English only');
    expect(tEn('test_only_key')).toBe('English only');
  });
});

describe('example descriptions', () => {
  const files = import.meta.glob<{ description: string }>('../../../wasm-core/examples/*.json', { eager: true, import: 'default' });
  const descriptions = Object.fromEntries(Object.entries(files).map(([p, s]) => [p.replace(/^.*\/([^/]+)\.json$/, '$1'), s.description]));
  const lessonFiles = import.meta.glob<{ description: string }>('../../../lessons/scenarios/*.json', { eager: true, import: 'default' });
  const known = new Set(Object.values(descriptions));
  const lessonOnly = Object.fromEntries(Object.entries(lessonFiles)
    .map(([p, s]) => [p.replace(/^.*\/([^/]+)\.json$/, '$1'), s.description] as const)
    .filter(([, d]) => d && !known.has(d)));
  it('are in English exactly as the scenario files say (lesson scenarios that repeat an example share its entry)', () => {
    expect(resources.en.examples).toEqual({ ...descriptions, lesson: lessonOnly });
  });
  // A translation that drops or changes a number (24 references, EXITINFO1 0x200000007,
  // 196 ns) says something the engine does not: every number of the English must be there.
  const numbers = (s: string) => new Set(s.match(/0x[0-9a-f]+|\d+(?:[.,]\d+)*/gi) ?? []);
  for (const lang of ['ja', 'zh']) {
    it(`keep every number of the English in ${lang}`, () => {
      const all = { ...descriptions, ...Object.fromEntries(Object.entries(lessonOnly).map(([k, v]) => [`lesson.${k}`, v])) };
      const tr = resources[lang].examples as Record<string, string> & { lesson: Record<string, string> };
      for (const [name, en] of Object.entries(all)) {
        const other = String(name.startsWith('lesson.') ? tr.lesson[name.slice(7)] ?? '' : tr[name] ?? '');
        const have = numbers(other);
        expect([...numbers(en)].filter((n) => !have.has(n)), `${lang}:${name}`).toEqual([]);
      }
    });
  }
});
