// @vitest-environment jsdom
/* The lessons view with the real engine: the index and progress, a lesson's prose,
 * embedded walk and exercises, the language switch with its visible English fallback. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import '../i18n';
import { LessonsView } from './LessonsView';
import { LESSONS, LESSON_ORDER, parseLesson, lessonFor } from './content';
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
  it('has the seven English lessons in order, and 1, 3, 5 in Japanese and Chinese', () => {
    expect(LESSON_ORDER).toHaveLength(7);
    expect(LESSON_ORDER[0]).toBe('four-address-spaces');
    for (const lang of ['ja', 'zh'] as const) {
      expect(Object.values(LESSONS[lang]).map((l) => l.meta.order).sort()).toEqual([1, 3, 5]);
      expect(lessonFor('shadow-paging', lang).fallback).toBe(true);
      expect(lessonFor('ept-and-npt', lang).fallback).toBe(false);
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
    render(<LessonsView engine={engine} lesson="shadow-paging" seed={1} lang="zh" onNavigate={onNavigate} />);
    expect(screen.getByRole('note').textContent).toContain('中文');
    expect(document.querySelector('article.lesson')!.getAttribute('lang')).toBe('en');
  });
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
