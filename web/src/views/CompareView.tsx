/* One guest mapping, one access, five modes: the scenarios are generated in TS
 * (model/compare.ts), each run through the same engine, the counts set side by side. */
import { useMemo, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import type { AccessResult, Op } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { checkCompareInput, COMPARE_MODES, compareScenario, cycles, type CompareInput } from '../model/compare';
import { outcomeWords } from '../model/decode';
import { Term } from './Term';
import { YourProgram } from '../trace';

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
  const { t, i18n } = useTranslation('views');
  const [draft, setDraft] = useState(input);
  const problem = checkCompareInput(input);
  const rows = useMemo(() => (problem ? [] : runCompare(engine, input)), [engine, input, problem]);
  const max = Math.max(1, ...rows.map((r) => (r.access ? cycles(r.access) : 0)));
  return (
    <div className="compare" data-testid="compare-view">
      <form className="compare-form" onSubmit={(e) => { e.preventDefault(); onInput?.(draft); }}>
        <label><Term id="gva" /> <input value={draft.gva} onChange={(e) => setDraft({ ...draft, gva: e.target.value })} spellCheck={false} /></label>
        <label>{t('compare.mapsTo')} <input value={draft.gpa} onChange={(e) => setDraft({ ...draft, gpa: e.target.value })} spellCheck={false} /></label>
        <label>{t('compare.op')} <select value={draft.op} onChange={(e) => setDraft({ ...draft, op: e.target.value as Op })}>
          {(['read', 'write', 'fetch'] as const).map((o) => <option key={o} value={o}>{t(`op.${o}`)}</option>)}</select></label>
        <label className="check"><input type="checkbox" checked={draft.user} onChange={(e) => setDraft({ ...draft, user: e.target.checked })} /> {t('compare.user')}</label>
        <button type="submit">{t('compare.submit')}</button>
      </form>
      {problem && <p className="error" role="alert">{t(`compare.problem.${problem}`)}</p>}
      <p className="muted"><Trans t={t} i18nKey="compare.note" components={{ 1: <code /> }} /></p>
      <div className="table-scroll">
        <table className="comparetable">
          <thead><tr>{(['mode', 'refs', 'split', 'exits', 'outcome', 'hpa', 'cycles'] as const).map((c) => <th key={c}>{t(`compare.col.${c}`)}</th>)}<th></th></tr></thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.mode} data-mode={r.mode}>
                <th scope="row">{r.mode}</th>
                {r.access ? (
                  <>
                    <td data-field="refs">{r.access.memory_refs}</td>
                    <td>{r.access.guest_refs} + {r.access.nested_refs}</td>
                    <td data-field="exits">{r.access.exits}</td>
                    <td>{outcomeWords(r.access.outcome, t)}</td>
                    <td><code>{r.access.hpa ?? '–'}</code></td>
                    <td className="barcell">
                      <span className="bar" style={{ width: `${(100 * cycles(r.access)) / max}%` }} />
                      <span className="barlabel">{cycles(r.access).toLocaleString(i18n.language)}</span>
                    </td>
                    <td><button type="button" onClick={() => onOpen?.(r.json)}>{t('compare.walk')}</button></td>
                  </>
                ) : <td colSpan={7} className="error">{r.error}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <YourProgram where="compare" />
    </div>
  );
}
