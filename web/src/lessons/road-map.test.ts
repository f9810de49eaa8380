/* Where the course says how many lessons there are, it says what the lessons folder holds:
 * Lesson 1's road map links every later lesson with its number, in every language, and
 * Start here names the last one. */
import { describe, expect, it } from 'vitest';
import { LESSONS, LESSON_ORDER } from './content';
import { LANGS } from './langs';
import views from '../locales/en/views.json';
import viewsJa from '../locales/ja/views.json';
import viewsZh from '../locales/zh/views.json';

const NUMBER: Record<string, (n: number) => string> = { en: (n) => `lesson ${n}`, ja: (n) => `レッスン${n}`, zh: (n) => `第${n}课` };

describe('the road map', () => {
  it('there are eight lessons', () => expect(LESSON_ORDER).toHaveLength(8));

  for (const lang of LANGS)
    it(`Lesson 1 (${lang}) links every later lesson under its number`, () => {
      const first = LESSONS[lang][LESSON_ORDER[0]];
      const text = first.parts.filter((p) => p.type === 'prose').map((p) => (p as { text: string }).text).join('\n');
      LESSON_ORDER.slice(1).forEach((id, i) => {
        expect(text, `${lang}: ${id}`).toContain(`[${NUMBER[lang](i + 2)}](lesson:${id})`);
      });
    });

  it('Start here names the first and the last lesson, in every language', () => {
    const n = LESSON_ORDER.length;
    expect(views.start.order).toMatch(new RegExp(`Lesson 1 .*Lesson ${n} \\(agile paging\\)`));
    expect(viewsJa.start.order).toContain(`第 ${n} 課（アジャイルページング）`);
    expect(viewsZh.start.order).toContain(`第 ${n} 课（敏捷分页）`);
    for (const v of [views, viewsJa, viewsZh]) expect(v.start.order).not.toMatch(/Lesson 7 \(|第 7 課（|第 7 课（/);
  });
});
