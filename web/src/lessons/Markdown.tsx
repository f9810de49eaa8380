/* Lesson prose: Markdown (marked) with $...$ formulas typeset by KaTeX. Lessons are the
 * project's own text, not user input; links to other lessons stay inside the app. */
import { memo, useMemo } from 'react';
import { marked } from 'marked';
import katex from 'katex';

export function renderMarkdown(text: string): string {
  const formulas: string[] = [];
  // Formulas first, so that Markdown never sees their underscores and stars.
  const withSlots = text.replace(/\$([^$\n]+)\$/g, (_, tex: string) => {
    formulas.push(katex.renderToString(tex, { throwOnError: false }));
    return `@@MATH${formulas.length - 1}@@`;
  });
  const html = marked.parse(withSlots, { async: false, gfm: true }) as string;
  return html.replace(/@@MATH(\d+)@@/g, (_, i: string) => formulas[Number(i)]);
}

export const Markdown = memo(function Markdown({ text }: { text: string }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div className="prose" dangerouslySetInnerHTML={{ __html: html }} />;
});
