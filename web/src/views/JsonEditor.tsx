/* CodeMirror 6 with JSON highlighting, loaded on demand (it is the biggest dependency and
 * only the playground needs it). Controlled: the parent owns the text. */
import { useEffect, useRef } from 'react';
import { EditorView, keymap, lineNumbers, highlightActiveLine } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { bracketMatching, syntaxHighlighting, defaultHighlightStyle, HighlightStyle } from '@codemirror/language';
import { json } from '@codemirror/lang-json';
import { EditorState } from '@codemirror/state';

/* CodeMirror's default colours, each behind a CSS variable (--cm-a11 for #a11, ...) so the
 * dark theme can give it a light variant (style.css); two of them darkened for AA contrast
 * on white. */
const LIGHT_AA: Record<string, string> = { '#e40': '#b33000', '#f00': '#c00000' };
const highlight = HighlightStyle.define(defaultHighlightStyle.specs.map((s) =>
  typeof s.color === 'string' ? { ...s, color: `var(--cm-${s.color.slice(1)}, ${LIGHT_AA[s.color] ?? s.color})` } : s));

export default function JsonEditor({ value, onChange, label }: { value: string; onChange: (v: string) => void; label: string }) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;

  useEffect(() => {
    view.current = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: value,
        extensions: [lineNumbers(), history(), highlightActiveLine(), bracketMatching(),
          syntaxHighlighting(highlight), keymap.of([...defaultKeymap, ...historyKeymap]), json(), EditorView.lineWrapping,
          // tabindex: the scroller then holds focusable content, as keyboard users and axe-core expect
          EditorView.contentAttributes.of({ 'aria-label': label, tabindex: '0' }),
          EditorView.updateListener.of((u) => { if (u.docChanged) change.current(u.state.doc.toString()); })],
      }),
    });
    return () => view.current?.destroy();
    // The editor is created once; later values arrive through the effect below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  return <div ref={host} className="cm-host" data-testid="json-editor" />;
}
