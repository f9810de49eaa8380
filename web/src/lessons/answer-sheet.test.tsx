// @vitest-environment jsdom
/* The teacher's answer sheet: its lines are the variants students get (a class's by name,
 * progress/seed.ts; the page's by seed, as LessonsView numbers them), every answer on it
 * is one the checker accepts for that variant, it is reached from the lessons' index, the
 * teacher guide (en, ja, zh) and the address, and it prints without the page's controls. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import '../i18n';
import i18n from '../i18n';
import { AnswerSheet } from './AnswerSheet';
import { classRows, lessonSpecs, seedRows } from './answerSheet';
import { LessonsView } from './LessonsView';
import { GUIDES, LANGS, LESSON_ORDER, TEACHER_GUIDE } from './content';
import { check, generate } from './exercises';
import { renderMarkdown } from './Markdown';
import { seedFor, variantLink } from '../progress/seed';
import { parseUrl, toSearch } from '../model/url';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(() => cleanup());

describe('the rows', () => {
  it('a class: each student\'s own seeds and the links that open them', () => {
    const rows = classRows('ept-and-npt', 'ABC123', ['Ada', 'Grace']);
    expect(rows.map((r) => r.label)).toEqual(['Ada', 'Grace']);
    for (const r of rows) {
      expect(r.seeds).toEqual(lessonSpecs('ept-and-npt').map((_, k) => seedFor('ABC123', r.label, 'ept-and-npt', k)));
      expect(r.links).toEqual(r.seeds.map((s, k) => variantLink('ept-and-npt', k, s)));
    }
  });
  it('without a class: the page at seed N asks exercise k at N + k', () => {
    const rows = seedRows('vmfunc', 7, 3);
    expect(rows.map((r) => r.label)).toEqual(['7', '8', '9']);
    expect(rows[0].seeds).toEqual(lessonSpecs('vmfunc').map((_, k) => 7 + k));
    expect(rows[0].links[0]).toBe('/?view=lessons&lesson=vmfunc&seed=7');
    expect(seedRows('vmfunc', 1, 10_000)).toHaveLength(500);
    expect(() => seedRows('nope', 1, 3)).toThrow(/no lesson "nope"/);
  });
});

describe('the sheet', () => {
  it('every answer it prints is accepted by the checker for that variant (lesson 3, four seeds)', async () => {
    const rows = seedRows('ept-and-npt', 40, 4);
    render(<AnswerSheet engine={engine} lesson="ept-and-npt" rows={rows} lang="en" by="seed" />);
    const table = await screen.findByRole('table');
    await waitFor(() => expect(table.dataset.state).toBe('done'), { timeout: 30_000 });
    const specs = lessonSpecs('ept-and-npt');
    const body = table.querySelectorAll('tbody tr');
    expect(body).toHaveLength(4);
    const t = i18n.getFixedT('en', 'exercises');
    body.forEach((tr, i) => {
      tr.querySelectorAll('td').forEach((td, k) => {
        const seed = rows[i].seeds[k];
        expect(Number(td.dataset.seed)).toBe(seed);
        const ex = generate(specs[k], seed);
        const shown = td.querySelector('.sheet-answer')!.textContent!;
        // a choice is printed in words: the choice those words name
        const answer = ex.input.type === 'choice' ? ex.input.choices.find((c) => t(`choice.${c}`) === shown) ?? shown : shown;
        expect(check(engine, ex, answer).correct, `seed ${seed}, exercise ${k + 1}: "${shown}"`).toBe(true);
      });
    });
  }, 60_000);

  it('opens from the address (?sheet=N) and the index; its controls change the address; Back returns to the lesson', async () => {
    const s = parseUrl('?view=lessons&lesson=vmfunc&seed=5&sheet=3');
    expect(s.sheet).toBe(3);
    expect(toSearch(s)).toContain('sheet=3');
    expect(parseUrl('?view=lessons&lesson=vmfunc&sheet=99999').sheet).toBe(500);
    const nav: Record<string, unknown>[] = [];
    render(<LessonsView engine={engine} lesson="vmfunc" seed={5} sheet={3} lang="en" onNavigate={(p) => nav.push(p)} />);
    const sheet = screen.getByTestId('answer-sheet');
    expect(within(sheet).getAllByRole('row')).toHaveLength(4);
    expect(within(sheet).getByRole('rowheader', { name: '5' })).toBeTruthy();
    fireEvent.change(within(sheet).getByLabelText('seeds'), { target: { value: '12' } });
    expect(nav.pop()).toEqual({ sheet: 12 });
    fireEvent.click(screen.getByRole('button', { name: /← / }));
    expect(nav.pop()).toEqual({ sheet: null });
    cleanup();
    render(<LessonsView engine={engine} lesson={null} seed={1} lang="en" onNavigate={(p) => nav.push(p)} />);
    fireEvent.click(screen.getByTestId('sheet-link'));
    expect(nav.pop()).toEqual({ lesson: LESSON_ORDER[0], seed: 1, sheet: 30 });
  });

  it('the teacher guide links every lesson\'s sheet, in every language', () => {
    for (const lang of LANGS) {
      const guide = GUIDES[lang][TEACHER_GUIDE].parts.map((p) => (p as { text?: string }).text ?? '').join('\n');
      const html = renderMarkdown(guide, lang);
      for (const id of LESSON_ORDER) expect(html, `${lang}: ${id}`).toContain(`href="?view=lessons&amp;lesson=${id}&amp;seed=1&amp;sheet=30"`);
    }
  });
});
