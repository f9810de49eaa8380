/* Each glossary term written one way in Japanese and in Chinese, across the lessons (and
 * the teacher guide), the glossary's own definitions and every string of the interface
 * (src/locales): lessons/glossary.json's `rendered` names the word (`as`, which must be in
 * use) and the renderings a translation drifted to before (`not`, which must be gone). */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import glossary from '../../../lessons/glossary.json';

const ROOT = join(__dirname, '..', '..', '..');
type Rendered = Partial<Record<'ja' | 'zh', { as: string; not: string[] }>>;
const TERMS = glossary.terms as unknown as Record<string, Record<'en' | 'ja' | 'zh', string> & { rendered?: Rendered }>;

/** Every text a learner reads in one language, by where it comes from. */
function texts(lang: 'ja' | 'zh'): [string, string][] {
  const lessons = join(ROOT, 'lessons', lang);
  const locales = join(ROOT, 'web', 'src', 'locales', lang);
  return [
    ...readdirSync(lessons).filter((f) => f.endsWith('.md')).map((f) => [`lessons/${lang}/${f}`, readFileSync(join(lessons, f), 'utf8')] as [string, string]),
    ...readdirSync(locales).filter((f) => f.endsWith('.json')).map((f) => [`locales/${lang}/${f}`, readFileSync(join(locales, f), 'utf8')] as [string, string]),
    ['lessons/glossary.json', Object.values(TERMS).map((t) => t[lang]).join('\n')],
  ];
}

describe('glossary terms, one rendering each', () => {
  it('the terms that drifted have a rendering in both languages', () => {
    for (const id of ['reference', 'flat', 'shadow', 'walk', 'ept_misconfig', 'ept_violation', 'page_fault'])
      for (const lang of ['ja', 'zh'] as const) expect(TERMS[id].rendered?.[lang]?.as, `${id} ${lang}`).toBeTruthy();
  });

  for (const lang of ['ja', 'zh'] as const)
    it(`${lang}: each term written as the glossary says, nowhere another way`, () => {
      const all = texts(lang);
      const stray: string[] = [];
      for (const [id, term] of Object.entries(TERMS)) {
        const r = term.rendered?.[lang];
        if (!r) continue;
        expect(all.some(([, text]) => text.includes(r.as)), `${id}: "${r.as}" in use`).toBe(true);
        for (const bad of r.not)
          for (const [where, text] of all)
            for (let i = text.indexOf(bad); i >= 0; i = text.indexOf(bad, i + 1))
              stray.push(`${id}: "${bad}" (write "${r.as}") in ${where}: …${text.slice(Math.max(0, i - 15), i + bad.length + 15)}…`);
      }
      expect(stray).toEqual([]);
    });
});
