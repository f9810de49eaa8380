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
  it('has the seven lessons in order in English, Japanese and Chinese, and the teacher guide apart from them', () => {
    expect(LESSON_ORDER).toHaveLength(7);
    expect(LESSON_ORDER[0]).toBe('four-address-spaces');
    expect(LESSON_ORDER).not.toContain(TEACHER_GUIDE);
    for (const lang of ['en', 'ja', 'zh'] as const) {
      expect(Object.values(LESSONS[lang]).map((l) => l.meta.order).sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
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
    expect(screen.getByTestId('progress').textContent).toBe('1 of 7 lessons done');
    expect(screen.getAllByRole('listitem')).toHaveLength(7);
  });

  it('renders a lesson with its live 24-reference walk and checks an exercise with the engine', () => {
    render(<LessonsView engine={engine} lesson="ept-and-npt" seed={3} lang="en" onNavigate={onNavigate} />);
    const fig = document.querySelector('figure.embedded-walk[data-scenario="ept-4k"]')!;
    expect(fig).toBeTruthy();
    expect(fig.textContent).toContain('24');
    const ex = document.querySelector('section.exercise[data-kind="count-refs"]') as HTMLElement;
    const input = within(ex).getByLabelText('Your answer');
    fireEvent.change(input, { target: { value: '1' } });
    fireEvent.click(within(ex).getByText('Check'));
    const status = within(ex).getByRole('status');
    expect(status.textContent).toMatch(/^Not quite: the engine says (\d+)\./);
    const right = /the engine says (\d+)/.exec(status.textContent!)![1];
    fireEvent.change(input, { target: { value: right } });
    fireEvent.click(within(ex).getByText('Check'));
    expect(within(ex).getByRole('status').textContent).toMatch(/^Correct\./);
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
    it(`${lang}: all seven lessons and the guide render, embedded walks and exercises included, with no English prose`, async () => {
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
