/* The playground's "change an entry" panel: the entries one access's walk read, each with
 * checkboxes for its present and permission bits; a click edits the scenario (an override,
 * or the given table's entry), the engine runs it again, and the outcome below says what
 * the change did. Faults made with clicks instead of JSON. */
import { Fragment, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { Result, Scenario, Step } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { countsLine, forWhat, levelName, outcomeSentence } from '../model/decode';
import { bitOn, entryBits, flipBit, toggleableSteps } from '../model/toggles';

export interface EntryTogglesProps {
  engine: Pick<Vmsim, 'run'>;
  scenario: Scenario;
  onScenario: (s: Scenario) => void;
  /** The access shown first (from the URL), and where a new choice is reported. */
  access?: number;
  onAccess?: (i: number) => void;
}

function entryName(s: Step, result: Result, t: (k: string, o?: Record<string, unknown>) => string): string {
  if (s.dim === 'guest') return t('toggles.guestEntry', { level: levelName(result.guest_paging, s.level), index: s.index });
  return t('toggles.nestedEntry', { table: result.mode.toUpperCase(), level: s.level, index: s.index, stage: forWhat(s, result, t) });
}

export function EntryToggles({ engine, scenario, onScenario, access: initialAccess = 0, onAccess }: EntryTogglesProps) {
  const { t } = useTranslation('views');
  const run = useMemo((): { result: Result | null; error: string | null } => {
    try { return { result: engine.run(scenario), error: null }; } catch (e) { return { result: null, error: (e as Error).message }; }
  }, [engine, scenario]);
  const memory = run.result ? run.result.accesses.map((a, i) => ({ a, i })).filter(({ a }) => a.gva && ['read', 'write', 'fetch'].includes(a.op)) : [];
  const [chosen, setChosen] = useState(initialAccess);
  const [problem, setProblem] = useState<string | null>(null);
  const pick = memory.find((m) => m.i === chosen) ?? memory[0];
  if (run.error) return <section className="toggles" aria-label={t('toggles.title')}><h3>{t('toggles.title')}</h3><p className="error">{t('toggles.cannotRun')} <span lang="en">{run.error}</span></p></section>;
  if (!run.result || !pick) return null;
  const result = run.result;
  const access = pick.a;
  const steps = toggleableSteps(access, result, scenario);
  // an EPT entry the walk read that allows writing but not reading (bit 1 without bit 0)
  const wWithoutR = result.mode === 'ept' ? access.steps.find((st) => st.dim === 'nested' && st.kind === 'read' && (BigInt(st.entry) & 3n) === 2n) : undefined;
  const flip = (st: Step, b: ReturnType<typeof entryBits>[number]) => {
    try { setProblem(null); onScenario(flipBit(scenario, st, b, access.gva!)); } catch (e) { setProblem((e as Error).message); }
  };
  return (
    <section className="toggles" aria-label={t('toggles.title')} data-testid="toggles">
      <h3>{t('toggles.title')}</h3>
      <p className="muted">{t('toggles.intro')}</p>
      {memory.length > 1 && (
        <label>{t('toggles.access')}{' '}
          <select value={pick.i} onChange={(e) => { setChosen(Number(e.target.value)); onAccess?.(Number(e.target.value)); }}>
            {memory.map(({ a, i }) => <option key={i} value={i}>{`#${i} ${t(`op.${a.op}`)} ${a.gva}`}</option>)}
          </select>
        </label>
      )}
      <p className="toggles-outcome" role="status" data-testid="toggles-outcome" data-value={access.outcome}>
        <b className={access.outcome === 'ok' ? 'ok-text' : 'bad-text'}>{outcomeSentence(access, t)}</b>{access.hpa ? <> → hpa <code>{access.hpa}</code></> : null}
        {' · '}{countsLine(access, result.mode, t)}
      </p>
      {result.mode === 'ept' && <p className="muted" data-testid="ept-rule">{wWithoutR && access.outcome === 'ept_misconfig'
        ? t('toggles.eptMisconfig', { entry: entryName(wWithoutR, result, t) }) : t('toggles.eptRule')}</p>}
      {problem && <p className="error" role="alert">{t('toggles.cannotChange')} <span lang="en">{problem}</span></p>}
      {steps.length === 0 ? <p className="muted">{t('toggles.none')}</p> : (
        <div className="table-scroll" tabIndex={0} role="region" aria-label={t('toggles.title')}>
          <table className="toggletable">
            <thead><tr><th scope="col">{t('toggles.entry')}</th><th scope="col">{t('toggles.value')}</th><th scope="col">{t('toggles.bits')}</th></tr></thead>
            <tbody>
              {steps.map((st) => {
                const name = entryName(st, result, t);
                return (
                  <tr key={`${st.dim}:${st.entry_hpa}`} data-dim={st.dim} data-level={st.level}>
                    <th scope="row" className={`d-${st.dim}`}>{name}</th>
                    <td><code>{st.entry}</code></td>
                    <td className="bitboxes">
                      {entryBits(st, result, scenario).map((b) => (
                        <Fragment key={b.name}>
                          <label title={t(`toggles.bit.${b.name}`)}>
                            <input type="checkbox" checked={bitOn(st, b)} onChange={() => flip(st, b)}
                              aria-label={t('toggles.bitOf', { bit: t(`toggles.bit.${b.name}`), entry: name })} data-bit={b.name} />
                            {b.name}
                          </label>{' '}
                        </Fragment>
                      ))}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
