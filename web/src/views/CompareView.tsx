/* One guest mapping, one access, five modes: the scenarios are generated in TS
 * (model/compare.ts), each run through the same engine, the counts set side by side. */
import { useMemo, useState } from 'react';
import type { AccessResult, Op } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { checkCompareInput, COMPARE_MODES, compareScenario, cycles, type CompareInput } from '../model/compare';
import { outcomeWords } from '../model/decode';

export interface CompareProps {
  engine: Pick<Vmsim, 'run'>;
  input: CompareInput;
  onInput?: (i: CompareInput) => void;
  onOpen?: (scenarioJson: string) => void;
}

interface Row { mode: string; access: AccessResult | null; error: string | null; json: string }

export function runCompare(engine: Pick<Vmsim, 'run'>, input: CompareInput): Row[] {
  return COMPARE_MODES.map((mode) => {
    const s = compareScenario(mode, input);
    const json = JSON.stringify(s, null, 2);
    try {
      return { mode, access: engine.run(s).accesses[0], error: null, json };
    } catch (e) {
      return { mode, access: null, error: (e as Error).message, json };
    }
  });
}

export function CompareView({ engine, input, onInput, onOpen }: CompareProps) {
  const [draft, setDraft] = useState(input);
  const problem = checkCompareInput(input);
  const rows = useMemo(() => (problem ? [] : runCompare(engine, input)), [engine, input, problem]);
  const max = Math.max(1, ...rows.map((r) => (r.access ? cycles(r.access) : 0)));
  return (
    <div className="compare" data-testid="compare-view">
      <form className="compare-form" onSubmit={(e) => { e.preventDefault(); onInput?.(draft); }}>
        <label>gva <input value={draft.gva} onChange={(e) => setDraft({ ...draft, gva: e.target.value })} spellCheck={false} /></label>
        <label>maps to gpa <input value={draft.gpa} onChange={(e) => setDraft({ ...draft, gpa: e.target.value })} spellCheck={false} /></label>
        <label>op <select value={draft.op} onChange={(e) => setDraft({ ...draft, op: e.target.value as Op })}>
          <option>read</option><option>write</option><option>fetch</option></select></label>
        <label className="check"><input type="checkbox" checked={draft.user} onChange={(e) => setDraft({ ...draft, user: e.target.checked })} /> user</label>
        <button type="submit">Compare</button>
      </form>
      {problem && <p className="error" role="alert">{problem}</p>}
      <p className="muted">The first access on a cold machine: a 4-level guest, 4 KiB pages everywhere; flat and shadow fill their tables on demand. Cycles = 10 + 40 × references + 1,700 × exits (the cost model of <code>vmsim experiment</code>).</p>
      <div className="table-scroll">
        <table className="comparetable">
          <thead><tr><th>mode</th><th>refs</th><th>guest + nested</th><th>exits</th><th>outcome</th><th>hpa</th><th>cycles</th><th></th></tr></thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.mode} data-mode={r.mode}>
                <th scope="row">{r.mode}</th>
                {r.access ? (
                  <>
                    <td data-field="refs">{r.access.memory_refs}</td>
                    <td>{r.access.guest_refs} + {r.access.nested_refs}</td>
                    <td data-field="exits">{r.access.exits}</td>
                    <td>{outcomeWords(r.access.outcome)}</td>
                    <td><code>{r.access.hpa ?? '–'}</code></td>
                    <td className="barcell">
                      <span className="bar" style={{ width: `${(100 * cycles(r.access)) / max}%` }} />
                      <span className="barlabel">{cycles(r.access).toLocaleString('en')}</span>
                    </td>
                    <td><button type="button" onClick={() => onOpen?.(r.json)}>walk</button></td>
                  </>
                ) : <td colSpan={7} className="error">{r.error}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
