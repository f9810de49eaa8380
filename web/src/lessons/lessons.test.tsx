// @vitest-environment jsdom
/* The lessons view with the real engine: the index and progress, a lesson's prose,
 * embedded walk and exercises, the language switch with its visible English fallback,
 * every lesson and the teacher guide in Japanese and Chinese with no English prose left,
 * and links to other lessons and to the guide. */
import { afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import '../i18n';
import { LessonsView } from './LessonsView';
import { GUIDES, LESSONS, LESSON_ORDER, TEACHER_GUIDE, parseLesson, lessonFor } from './content';
import { englishRuns } from '../test/english';
import { renderMarkdown } from './Markdown';
import { generate } from './exercises';
import { App } from '../App';
import i18n from '../i18n';

let engine: Vmsim;
beforeAll(async () => {
  engine = await testEngine();
});
afterEach(() => {
  cleanup();
  localStorage.clear();
});

describe('lesson content', () => {
  it('has the eight lessons in order in English, Japanese and Chinese, and the teacher guide apart from them', () => {
    expect(LESSON_ORDER).toHaveLength(8);
    expect(LESSON_ORDER[0]).toBe('four-address-spaces');
    expect(LESSON_ORDER).not.toContain(TEACHER_GUIDE);
    for (const lang of ['en', 'ja', 'zh'] as const) {
      expect(Object.values(LESSONS[lang]).map((l) => l.meta.order).sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      for (const id of LESSON_ORDER) expect(lessonFor(id, lang).fallback, `${lang} ${id}`).toBe(false);
      expect(Object.keys(GUIDES[lang])).toEqual([TEACHER_GUIDE]);
      expect(lessonFor(TEACHER_GUIDE, lang)).toMatchObject({ fallback: false, lesson: { meta: { language: lang } } });
    }
  });

  it('splits prose, views and exercises', () => {
    const l = parseLesson('---\nid: x\ntitle: X\norder: 1\nprerequisites: []\nlanguage: en\nscenarios: [ept-4k]\n---\nhello\n```vmemlab\nscenario: ept-4k\nview: walk\naccess: 0\n```\nmid\n```exercise\nkind: count-refs\nmode: ept\n```\n');
    expect(l.parts.map((p) => p.type)).toEqual(['prose', 'view', 'prose', 'exercise']);
    expect(() => parseLesson('no front matter')).toThrow(/front matter/);
  });

  it('typesets formulas with KaTeX and leaves the rest to Markdown', () => {
    const html = renderMarkdown('refs: $(n+1)(m+1) - 1$ and **bold**');
    expect(html).toContain('class="katex"');
    expect(html).toContain('<strong>bold</strong>');
  });
});

describe('lessons view', () => {
  const nav: Record<string, unknown>[] = [];
  const onNavigate = (p: Record<string, unknown>) => nav.push(p);

  it('opens another tab from a lesson link in place, in every language', () => {
    for (const lang of ['en', 'ja', 'zh'] as const) {
      const got: Record<string, unknown>[] = [];
      const { container, unmount } = render(<LessonsView engine={engine} lesson="four-address-spaces" seed={1} lang={lang} onNavigate={(p) => got.push(p)} />);
      const link = container.querySelector<HTMLAnchorElement>('a.app-link[data-view="live"]');
      expect(link, lang).toBeTruthy();
      expect(link!.getAttribute('href')).toBe('?view=live');
      fireEvent.click(link!);
      expect(got).toEqual([{ view: 'live' }]);
      unmount();
    }
    expect(renderMarkdown('[x](app:nonsense)')).not.toContain('<a');
  });

  it('lists the lessons with progress and remembers a lesson marked done', () => {
    const { unmount } = render(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} lang="en" onNavigate={onNavigate} />);
    fireEvent.click(screen.getByLabelText(/Mark as done/));
    unmount();
    render(<LessonsView engine={engine} lesson={null} seed={1} lang="en" onNavigate={onNavigate} />);
    expect(screen.getByTestId('progress').textContent).toBe('1 of 8 lessons done');
    expect(screen.getAllByRole('listitem')).toHaveLength(8);
  });

  it('renders a lesson with its live 24-reference walk and checks an exercise with the engine', () => {
    render(<LessonsView engine={engine} lesson="ept-and-npt" seed={3} lang="en" onNavigate={onNavigate} />);
    const fig = document.querySelector('figure.embedded-walk[data-scenario="ept-4k"]')!;
    expect(fig).toBeTruthy();
    expect(fig.textContent).toContain('24');
    const ex = document.querySelector('section.exercise[data-kind="count-refs"]') as HTMLElement;
    const input = within(ex).getByLabelText('Your answer');
    const status = () => within(ex).getByRole('status').textContent!;
    // an empty answer: said so, with the hint, and no answer given away
    fireEvent.click(within(ex).getByText('Check'));
    expect(status()).toMatch(/^No answer yet/);
    // the hint's first step, a nudge, with the method one click away
    const hint = () => ex.querySelector('.hint') as HTMLElement;
    expect(hint().dataset.step).toBe('nudge');
    expect(within(hint()).getByRole('button', { name: 'Show the method' })).toBeTruthy();
    // two wrong answers: said so, tries counted, still no answer; a unit other than the one
    // asked for is named
    const unitNote = ' Check the unit: this question asks for a number of memory references.';
    for (const [i, wrong] of ['1', '2 exits'].entries()) {
      fireEvent.change(input, { target: { value: wrong } });
      fireEvent.click(within(ex).getByText('Check'));
      expect(status()).toBe(`Not quite: that was try ${i + 1} of 3. Look at the hint and try again.${i ? unitNote : ''}`);
    }
    // after two wrong tries the method is shown too
    expect(hint().dataset.step).toBe('method');
    expect(hint().textContent).toContain('g + (g + 1) x n');
    // the right one (the engine's own count of this exercise's scenario), with its unit
    const ex0 = generate({ kind: 'count-refs', mode: 'ept' }, Number(ex.dataset.seed));
    const right = String(engine.run(ex0.scenarios[0]).accesses.reduce((c, a) => c + a.memory_refs, 0));
    fireEvent.change(input, { target: { value: `${right} references` } });
    fireEvent.click(within(ex).getByText('Check'));
    expect(status()).toMatch(/^Correct\./);
    // and its walk, with its own step controls
    fireEvent.click(within(ex).getByText('Show the walk'));
    expect(ex.querySelector('[role="toolbar"]')).toBeTruthy();
  });

  it('shows the answer only after three wrong tries or when asked', () => {
    render(<LessonsView engine={engine} lesson="ept-and-npt" seed={5} lang="en" onNavigate={onNavigate} />);
    const [a, b] = [...document.querySelectorAll<HTMLElement>('section.exercise[data-kind="count-refs"], section.exercise[data-kind="predict-exit"]')];
    const expected = (el: HTMLElement) => {
      const e = generate({ kind: el.dataset.kind as 'count-refs', mode: el.dataset.kind === 'count-refs' ? 'ept' : 'ept' }, Number(el.dataset.seed));
      return e.expected(e.scenarios.map((x) => engine.run(x)));
    };
    const want = expected(a);
    const input = within(a).getByLabelText('Your answer');
    for (let i = 0; i < 3; i++) {
      expect(within(a).getByRole('status').textContent).not.toContain(`answer: ${want}`);
      fireEvent.change(input, { target: { value: String(Number(want) + 1 + i) } });
      fireEvent.click(within(a).getByText('Check'));
    }
    expect(within(a).getByRole('status').textContent).toBe(`Not quite. After 3 tries, here is the engine's answer: ${want}.`);
    // asking for it
    fireEvent.click(within(b).getByText('Show answer'));
    expect(within(b).getByRole('status').textContent).toMatch(/^The engine's answer: /);
  });

  it('"Another one" changes only its own exercise; the others keep their seed and state', () => {
    const got: Record<string, unknown>[] = [];
    const { rerender } = render(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} lang="en" onNavigate={(p) => got.push(p)} />);
    const cards = () => [...document.querySelectorAll<HTMLElement>('section.exercise')];
    expect(cards().map((c) => Number(c.dataset.seed))).toEqual([1, 2, 3, 4, 5, 6]);
    // answer the last exercise correctly
    const last = cards()[4];
    const e = generate({ kind: 'predict-bits', mode: 'npt' }, 5);
    fireEvent.change(within(last).getByLabelText('Your answer'), { target: { value: e.expected(e.scenarios.map((x) => engine.run(x))) } });
    fireEvent.click(within(last).getByText('Check'));
    expect(within(last).getByRole('status').textContent).toMatch(/^Correct\./);
    const prompts = cards().map((c) => c.querySelector('.exercise-prompt')!.textContent);
    fireEvent.click(within(cards()[0]).getByText('Another one'));
    expect(got.at(-1)).toEqual({ seeds: [2] });
    rerender(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} seeds={[2]} lang="en" onNavigate={(p) => got.push(p)} />);
    expect(cards().map((c) => Number(c.dataset.seed))).toEqual([2, 2, 3, 4, 5, 6]);
    expect(cards()[0].querySelector('.exercise-prompt')!.textContent).not.toBe(prompts[0]);
    expect(cards().slice(1).map((c) => c.querySelector('.exercise-prompt')!.textContent)).toEqual(prompts.slice(1));
    expect(within(cards()[4]).getByRole('status').textContent).toMatch(/^Correct\./);
  });

  it('steps an embedded walk with its own controls and with the keys while it has focus', () => {
    render(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} lang="en" onNavigate={onNavigate} />);
    const fig = document.querySelector('figure.embedded-walk[data-scenario="ept-4k"]') as HTMLElement;
    const group = fig.querySelector('[role="group"]') as HTMLElement;
    const counter = () => Number(fig.querySelector('.counter [data-field="step"]')!.textContent);
    const total = counter();   // starts at the whole walk
    expect(total).toBe(28);
    fireEvent.keyDown(group, { key: 'Home' });
    expect(counter()).toBe(0);
    fireEvent.keyDown(group, { key: 'ArrowRight' });
    fireEvent.keyDown(group, { key: 'ArrowRight' });
    expect(counter()).toBe(2);
    expect(fig.querySelectorAll('td[aria-current="step"]')).toHaveLength(1);
    fireEvent.click(within(fig).getByLabelText('step back (←)'));
    expect(counter()).toBe(1);
    fireEvent.keyDown(group, { key: 'End' });
    expect(counter()).toBe(total);
  });

  it('has no repeated id on any lesson page', () => {
    for (const id of LESSON_ORDER) {
      const { container, unmount } = render(<LessonsView engine={engine} lesson={id} seed={1} lang="en" onNavigate={onNavigate} />);
      // open every exercise's walk too
      for (const ex of container.querySelectorAll<HTMLElement>('section.exercise')) fireEvent.click(within(ex).getByText('Show answer'));
      for (const b of [...container.querySelectorAll<HTMLButtonElement>('section.exercise button.linklike')]) fireEvent.click(b);
      // (a flat-table-size exercise has no access to walk)
      expect(container.querySelectorAll('section.exercise .stepped-walk').length, id).toBe(container.querySelectorAll('section.exercise:not([data-kind="flat-table-size"])').length);
      const ids = [...container.querySelectorAll('[id]')].map((e) => e.id);
      expect(ids.filter((x, i) => ids.indexOf(x) !== i), id).toEqual([]);
      unmount();
    }
  });

  it('shows a translated lesson, and the English one with a visible notice where there is none', () => {
    const { unmount } = render(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} lang="ja" onNavigate={onNavigate} />);
    expect(document.querySelector('article.lesson')!.getAttribute('lang')).toBe('ja');
    expect(document.body.textContent).toContain('2次元ウォーク');
    expect(screen.queryByRole('note')).toBeNull();
    unmount();
    // Every lesson is translated now; a lesson added in English only must still show its notice.
    const zh = LESSONS.zh['shadow-paging'];
    delete LESSONS.zh['shadow-paging'];
    try {
      render(<LessonsView engine={engine} lesson="shadow-paging" seed={1} lang="zh" onNavigate={onNavigate} />);
      expect(screen.getByRole('note').textContent).toContain('中文');
      expect(document.querySelector('article.lesson')!.getAttribute('lang')).toBe('en');
    } finally {
      LESSONS.zh['shadow-paging'] = zh;
    }
  });

  it('links the teacher guide from the index, and shows it without progress in every language', () => {
    for (const lang of ['en', 'ja', 'zh'] as const) {
      const got: Record<string, unknown>[] = [];
      const { unmount } = render(<LessonsView engine={engine} lesson={null} seed={1} lang={lang} onNavigate={(p) => got.push(p)} />);
      fireEvent.click(screen.getByRole('button', { name: GUIDES[lang][TEACHER_GUIDE].meta.title }));
      expect(got).toEqual([{ lesson: TEACHER_GUIDE }]);
      unmount();
      const page = render(<LessonsView engine={engine} lesson={TEACHER_GUIDE} seed={1} lang={lang} onNavigate={() => {}} />);
      const article = page.container.querySelector('article.lesson')!;
      expect(article.getAttribute('lang')).toBe(lang);
      expect(article.querySelector('h1')!.textContent).toBe(GUIDES[lang][TEACHER_GUIDE].parts[0].type === 'prose'
        ? /^# (.+)$/m.exec((GUIDES[lang][TEACHER_GUIDE].parts[0] as { text: string }).text)![1] : '');
      expect(article.querySelectorAll('input[type="checkbox"]')).toHaveLength(0);   // no "mark as done"
      expect(article.querySelectorAll('a.lesson-link').length).toBeGreaterThanOrEqual(7);
      page.unmount();
    }
  });

  it('opens another lesson from a lesson link in place', () => {
    const got: Record<string, unknown>[] = [];
    const { container } = render(<LessonsView engine={engine} lesson="four-address-spaces" seed={1} lang="zh" onNavigate={(p) => got.push(p)} />);
    const link = container.querySelector<HTMLAnchorElement>('a.lesson-link[data-lesson="shadow-paging"]')!;
    expect(link.getAttribute('href')).toBe('?view=lessons&lesson=shadow-paging');
    expect(link.textContent).toBe('第2课');
    fireEvent.click(link);
    expect(got).toEqual([{ lesson: 'shadow-paging' }]);
  });
});

describe('every lesson and the teacher guide in Japanese and Chinese', () => {
  /* What a reader sees: the text without lang="en" parts (English terms at first use, engine
   * messages) and without code (commands stay as they are typed), plus titles and labels. */
  const visible = (el: Element) => {
    const c = el.cloneNode(true) as Element;
    c.querySelectorAll('[lang="en"], code, pre').forEach((n) => n.remove());
    const attrs = [...el.querySelectorAll('[title],[aria-label],[placeholder]')]
      .filter((e) => !e.closest('[lang="en"]'))
      .map((e) => ['title', 'aria-label', 'placeholder'].map((a) => e.getAttribute(a) ?? '').join(' | '));
    return { text: c.textContent ?? '', attrs: attrs.join(' | ') };
  };
  for (const lang of ['ja', 'zh'] as const) {
    it(`${lang}: all eight lessons and the guide render, embedded walks and exercises included, with no English prose`, async () => {
      await i18n.changeLanguage(lang);   // as LessonsTab does for the lesson's language
      onTestFinished(() => { void i18n.changeLanguage('en'); });
      for (const id of [...LESSON_ORDER, TEACHER_GUIDE]) {
        const { container, unmount } = render(<LessonsView engine={engine} lesson={id} seed={7} lang={lang} onNavigate={() => {}} />);
        const article = container.querySelector('article.lesson')!;
        expect(article.getAttribute('lang'), id).toBe(lang);
        expect(container.querySelector('[role="note"]'), `${lang} ${id}: fallback notice`).toBeNull();
        expect(container.querySelector('.error'), `${lang} ${id}: ${container.querySelector('.error')?.textContent}`).toBeNull();
        const { text, attrs } = visible(article);
        expect(text.length, id).toBeGreaterThan(2000);
        expect(englishRuns(text), `${lang} ${id}`).toEqual([]);
        expect(englishRuns(attrs), `${lang} ${id}: titles and labels`).toEqual([]);
        if (id !== TEACHER_GUIDE) {
          const l = LESSONS[lang][id];
          expect(container.querySelectorAll('figure.embedded-walk').length, id).toBe(l.parts.filter((p) => p.type === 'view').length);
          expect(container.querySelectorAll('section.exercise').length, id).toBe(l.parts.filter((p) => p.type === 'exercise').length);
        }
        unmount();
      }
    }, 120_000);
  }
});

describe('the shell in three languages', () => {
  it('names the tabs in the language of the URL and falls back to English for the rest', async () => {
    history.replaceState(null, '', '?lang=zh');
    render(<App engine={engine} />);
    expect(await screen.findByRole('button', { name: '课程' })).toBeTruthy();
    expect(screen.getByRole('button', { name: '遍历' })).toBeTruthy();
    expect(i18n.t('no.such.key', 'fallback text')).toBe('fallback text');
    cleanup();
    history.replaceState(null, '', '?lang=en');
    render(<App engine={engine} />);
    expect(await screen.findByRole('button', { name: 'Lessons' })).toBeTruthy();
    history.replaceState(null, '', '/');
  });
});
