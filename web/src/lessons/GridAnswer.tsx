/* The answer of a walk-grid exercise as the learner fills it in (at most 35 references and
 * two addresses of 24 characters: within the 200 characters the class server keeps): one picker a memory
 * reference (which table it reads) and one field an asked address; the answer is kept as
 * the text the checker reads (exercises.ts gridAnswer). After a check each cell is marked
 * right or wrong (the partial credit). */
import { useTranslation } from 'react-i18next';
import { gridAnswer, gridCells, type GridInput } from './exercises';

export function GridAnswer({ input, answer, onChange, readOnly, marks }: { input: GridInput; answer: string;
  onChange: (answer: string) => void; readOnly: boolean; marks?: boolean[] }) {
  const { t: tx } = useTranslation('exercises');
  const cells = gridCells(input, answer).map((c) => (c === '-' ? '' : c));
  const set = (i: number, v: string) => { const next = [...cells]; next[i] = v; onChange(gridAnswer(input, next)); };
  const label = (o: string) => tx(`walkGrid.table.${o[0]}`, { level: o.slice(1) });
  const mark = (i: number) => marks && (
    <span className={marks[i] ? 'cell-mark ok' : 'cell-mark error'} aria-label={tx(marks[i] ? 'walkGrid.cellRight' : 'walkGrid.cellWrong')}>{marks[i] ? '✓' : '✗'}</span>
  );
  return (
    <div className="grid-answer" data-testid="grid-answer">
      <ol className="grid-refs">
        {Array.from({ length: input.refs }, (_, i) => (
          <li key={i} data-ref={i + 1}>
            <label>{tx('walkGrid.ref', { n: i + 1 })}{' '}
              <select value={cells[i]} disabled={readOnly} onChange={(e) => set(i, e.target.value)}>
                <option value="">—</option>
                {input.options.map((o) => <option key={o} value={o}>{label(o)}</option>)}
              </select>
            </label>{mark(i)}
          </li>
        ))}
      </ol>
      {input.addresses.map((a, j) => (
        <p key={j} className="grid-address">
          <label>{tx(`walkGrid.${a.what}`, { n: a.ref })}{' '}
            <input value={cells[input.refs + j]} readOnly={readOnly} placeholder="0x…" spellCheck={false} maxLength={24}
              onChange={(e) => set(input.refs + j, e.target.value)} />
          </label>{mark(input.refs + j)}
        </p>
      ))}
    </div>
  );
}

/** The grid on paper, where the pickers do not print: the tables a reference may read,
 * listed once, then a numbered blank for each reference and a line for each address. */
export function PrintGrid({ input }: { input: GridInput }) {
  const { t: tx } = useTranslation('exercises');
  const label = (o: string) => tx(`walkGrid.table.${o[0]}`, { level: o.slice(1) });
  return (
    <div className="print-grid" data-testid="print-grid">
      <p className="print-grid-options">{tx('walkGrid.printTables', { tables: input.options.map(label).join(' · ') })}</p>
      <ol className="print-grid-refs">
        {Array.from({ length: input.refs }, (_, i) => <li key={i}>{tx('walkGrid.ref', { n: i + 1 })}:</li>)}
      </ol>
      {input.addresses.map((a, j) => <p key={j} className="print-line">{tx(`walkGrid.${a.what}`, { n: a.ref })}:</p>)}
    </div>
  );
}
