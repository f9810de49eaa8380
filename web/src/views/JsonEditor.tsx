/* CodeMirror 6 with JSON highlighting, loaded on demand (it is the biggest dependency and
 * only the playground needs it). Controlled: the parent owns the text. */
import { useEffect, useRef } from 'react';
import { EditorView, keymap, lineNumbers, highlightActiveLine } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { bracketMatching, syntaxHighlighting, defaultHighlightStyle } from '@codemirror/language';
import { json } from '@codemirror/lang-json';
import { EditorState } from '@codemirror/state';

export default function JsonEditor({ value, onChange }: { value: string; onChange: (v: string) => void }) {
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
          syntaxHighlighting(defaultHighlightStyle), keymap.of([...defaultKeymap, ...historyKeymap]), json(), EditorView.lineWrapping,
          EditorView.contentAttributes.of({ 'aria-label': 'scenario JSON' }),
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
