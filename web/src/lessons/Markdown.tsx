/* Lesson prose: Markdown (marked) with $...$ formulas typeset by KaTeX. Lessons are the
 * project's own text, not user input; [text](lesson:vmfunc) opens another lesson (or the
 * teacher guide) in place, and [text](app:live) opens another tab of the app (the live
 * guest, the Results tab, ...); [text](sheet:vmfunc) opens the lesson's answer sheet for
 * teachers. */
import { memo, useMemo } from 'react';
import { Marked } from 'marked';
import katex from 'katex';
import glossary from '../../../lessons/glossary.json';
import { VIEWS, type View } from '../model/url';

type Term = keyof typeof glossary.terms;
const escapeAttr = (t: string) => t.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/* [text](glossary:gpa) becomes the term with its definition on hover and focus, in the
 * lesson's language (English where a definition is missing). */
function markedFor(lang: string) {
  return new Marked({
    gfm: true,
    renderer: {
      link({ href, tokens }) {
        const inner = this.parser.parseInline(tokens);
        if (href.startsWith('lesson:')) {
          const id = href.slice('lesson:'.length);
          return `<a class="lesson-link" href="?view=lessons&amp;lesson=${escapeAttr(id)}" data-lesson="${escapeAttr(id)}">${inner}</a>`;
        }
        if (href.startsWith('sheet:')) {
          // the teacher's answer sheet of a lesson (30 seeds from seed 1; the page can change both)
          const id = href.slice('sheet:'.length);
          return `<a class="sheet-link" href="?view=lessons&amp;lesson=${escapeAttr(id)}&amp;seed=1&amp;sheet=30">${inner}</a>`;
        }
        if (href.startsWith('app:')) {
          const view = href.slice('app:'.length);
          if (!VIEWS.includes(view as View)) return inner;
          return `<a class="app-link" href="?view=${escapeAttr(view)}" data-view="${escapeAttr(view)}">${inner}</a>`;
        }
        if (!href.startsWith('glossary:')) return false;
        const key = href.slice('glossary:'.length) as Term;
        const term = glossary.terms[key] as Record<string, string> | undefined;
        const def = term?.[lang] ?? term?.en ?? '';
        return `<abbr class="term" tabindex="0" data-term="${escapeAttr(key)}" title="${escapeAttr(def)}">${inner}</abbr>`;
      },
    },
  });
}

export function renderMarkdown(text: string, lang = 'en'): string {
  const formulas: string[] = [];
  // Formulas first, so that Markdown never sees their underscores and stars.
  const withSlots = text.replace(/\$([^$\n]+)\$/g, (_, tex: string) => {
    formulas.push(katex.renderToString(tex, { throwOnError: false }));
    return `@@MATH${formulas.length - 1}@@`;
  });
  const html = markedFor(lang).parse(withSlots, { async: false }) as string;
  return html.replace(/@@MATH(\d+)@@/g, (_, i: string) => formulas[Number(i)]);
}

export const Markdown = memo(function Markdown({ text, lang = 'en', onView, onLesson }: { text: string; lang?: string;
  onView?: (v: View) => void; onLesson?: (id: string) => void }) {
  const html = useMemo(() => renderMarkdown(text, lang), [text, lang]);
  // Links into other tabs and lessons switch in place (the URL keeps the state, so Back returns).
  const onClick = (e: React.MouseEvent) => {
    const a = (e.target as HTMLElement).closest?.('a[data-view], a[data-lesson]') as HTMLAnchorElement | null;
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    if (a.dataset.view && onView) { e.preventDefault(); onView(a.dataset.view as View); }
    if (a.dataset.lesson && onLesson) { e.preventDefault(); onLesson(a.dataset.lesson); }
  };
  return <div className="prose" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
});
