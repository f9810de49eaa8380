/* Edit a scenario: a form for the common fields, the JSON itself (CodeMirror, loaded
 * lazily; a plain textarea until then), schema errors with their path, file load and
 * save, and a run that hands the scenario to the walk view. Nothing here can take the
 * page down: every failure becomes a message. */
import { lazy, Suspense, useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { Scenario } from '../../../wasm-core/js/types';
import { ScenarioError, type Vmsim } from '../../../wasm-core/js/vmsim';
import type { Problem } from '../model/validate';
import { EntryToggles } from './EntryToggles';

const JsonEditor = lazy(() => import('./JsonEditor'));
type Validate = typeof import('../model/validate');

export interface PlaygroundProps {
  engine: Pick<Vmsim, 'run'>;
  text: string;
  onText: (t: string) => void;
  onRun: (json: string) => void;
  /** An entry toggled: the edited scenario, for the address bar (a shared link shows it). */
  onShare?: (json: string) => void;
  /** The access whose entries the toggles show, and where a new choice goes (the URL). */
  access?: number;
  onAccess?: (i: number) => void;
  /** Injected by tests so the editor is a textarea (jsdom has no layout for CodeMirror). */
  plainEditor?: boolean;
}

const NESTED_DEFAULT = { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }] };

function withMode(s: Scenario, mode: Scenario['mode']): Scenario {
  const out: Scenario = { ...s, mode };
  delete out.nested; delete out.flat; delete out.shadow; delete out.agile;
  if (mode === 'ept' || mode === 'npt' || mode === 'agile') out.nested = s.nested ?? NESTED_DEFAULT;
  if (mode === 'agile') out.agile = s.agile ?? { switch_level: 2 };
  if (mode === 'flat') out.flat = { guest_ram: '0x40000000', mappings: NESTED_DEFAULT.mappings };
  if (mode === 'shadow') out.shadow = { mappings: NESTED_DEFAULT.mappings };
  // Keys that belong to one nested format are errors in the other.
  if (out.nested && mode === 'npt') { const { ad, memory_type, execute_only, vmfunc, eptp_list, ...rest } = out.nested; void ad; void memory_type; void execute_only; void vmfunc; void eptp_list; out.nested = rest; }
  if (out.nested && mode === 'ept') { const { host_nxe, host_smep, ...rest } = out.nested; void host_nxe; void host_smep; out.nested = rest; }
  // agile paging runs over one EPT: no NPT keys, no VM functions
  if (out.nested && mode === 'agile') { const { host_nxe, host_smep, vmfunc, eptp_list, ...rest } = out.nested; void host_nxe; void host_smep; void vmfunc; void eptp_list; out.nested = rest; }
  return out;
}

export function Playground({ engine, text, onText, onRun, onShare, access, onAccess, plainEditor }: PlaygroundProps) {
  const { t, i18n } = useTranslation('views');
  const [val, setVal] = useState<Validate | null>(null);
  const [message, setMessage] = useState<{ kind: 'error' | 'ok'; text: string; detail?: string } | null>(null);

  useEffect(() => { import('../model/validate').then(setVal, (e) => setMessage({ kind: 'error', text: t('playground.validatorFailed'), detail: e.message })); }, [t]);

  const checked = useMemo(() => (val ? val.checkScenarioText(text, t, i18n.language) : null), [val, text, t, i18n.language]);
  const problems: Problem[] = checked?.problems ?? [];
  const scenario = checked && checked.value && typeof checked.value === 'object' ? (checked.value as Scenario) : null;

  const edit = (f: (s: Scenario) => Scenario) => {
    if (!scenario) return;
    try { onText(JSON.stringify(f(structuredClone(scenario)), null, 2)); } catch (e) { setMessage({ kind: 'error', text: (e as Error).message }); }
  };
  const m0 = scenario?.guest?.mappings?.[0];
  const a0 = scenario?.accesses?.[0] as { gva?: string; op?: string; user?: boolean } | undefined;

  const run = () => {
    if (problems.length) { setMessage({ kind: 'error', text: t('playground.fixFirst', { count: problems.length }) }); return; }
    try {
      const r = engine.run(text);
      setMessage({ kind: 'ok', text: t('playground.ran', {
        accesses: t('playground.accesses', { count: r.accesses.length }), refs: t('count.refsPlain', { count: r.totals.memory_refs }), exits: t('count.exits', { count: r.totals.exits }),
      }) });
      onRun(text);
    } catch (e) {
      setMessage({ kind: 'error', text: e instanceof ScenarioError ? t('playground.rejected') : t('playground.failed'), detail: (e as Error).message });
    }
  };

  const load = async (file: File | undefined) => {
    if (!file) return;
    try {
      const content = await file.text();
      onText(content);
      const c = val?.checkScenarioText(content, t, i18n.language);
      setMessage(c && c.problems.length
        ? { kind: 'error', text: t('playground.fileProblem', { file: file.name, problem: (c.problems[0].path ? c.problems[0].path + ': ' : '') + c.problems[0].message }), detail: c.problems[0].detail }
        : { kind: 'ok', text: t('playground.loaded', { file: file.name }) });
    } catch (e) {
      setMessage({ kind: 'error', text: t('playground.unreadable', { file: file.name }), detail: (e as Error).message });
    }
  };

  const save = () => {
    const name = (scenario?.name || 'scenario').replace(/[^\w.-]+/g, '_');
    const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
    const a = document.createElement('a');
    a.href = url; a.download = `${name}.json`; a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  return (
    <div className="playground" data-testid="playground">
      <fieldset className="form" disabled={!scenario}>
        <legend>{t('playground.basics')} {scenario ? '' : <span className="muted">{t('playground.fixJson')}</span>}</legend>
        <label>{t('playground.name')} <input value={scenario?.name ?? ''} onChange={(e) => edit((s) => ({ ...s, name: e.target.value }))} /></label>
        <label>{t('playground.mode')} <select value={scenario?.mode ?? 'ept'} onChange={(e) => edit((s) => withMode(s, e.target.value as Scenario['mode']))}>
          {['native', 'ept', 'npt', 'flat', 'shadow', 'agile'].map((m) => <option key={m} value={m}>{t(`words.mode.${m}`)}</option>)}</select></label>
        <label>{t('playground.paging')} <select value={scenario?.guest?.paging ?? '4level'} onChange={(e) => edit((s) => ({ ...s, guest: { ...s.guest, paging: e.target.value as Scenario['guest']['paging'] } }))}>
          {['4level', '5level', 'pae', '32bit', 'sunway'].map((m) => <option key={m} value={m}>{t(`words.paging.${m}`)}</option>)}</select></label>
        <label>{t('playground.mappingGva')} <input value={m0?.gva ?? ''} spellCheck={false} onChange={(e) => edit((s) => { s.guest.mappings![0] = { ...s.guest.mappings![0], gva: e.target.value }; return s; })} disabled={!m0} /></label>
        <label>{t('playground.toGpa')} <input value={m0?.gpa ?? ''} spellCheck={false} onChange={(e) => edit((s) => { s.guest.mappings![0] = { ...s.guest.mappings![0], gpa: e.target.value }; return s; })} disabled={!m0} /></label>
        <label>{t('playground.accessGva')} <input value={a0?.gva ?? ''} spellCheck={false} onChange={(e) => edit((s) => { s.accesses[0] = { ...(s.accesses[0] as object), gva: e.target.value } as Scenario['accesses'][0]; return s; })} disabled={!a0?.gva} /></label>
        <label>{t('playground.op')} <select value={a0?.op ?? 'read'} disabled={!a0?.op} onChange={(e) => edit((s) => { s.accesses[0] = { ...(s.accesses[0] as object), op: e.target.value } as Scenario['accesses'][0]; return s; })}>
          {(['read', 'write', 'fetch'] as const).map((o) => <option key={o} value={o}>{t(`op.${o}`)}</option>)}</select></label>
      </fieldset>

      <div className="filebar">
        <label className="filebtn">{t('playground.load')} <input type="file" accept=".json,application/json" data-testid="file-input" onChange={(e) => { void load(e.target.files?.[0]); e.target.value = ''; }} /></label>
        <button type="button" onClick={save}>{t('playground.save')}</button>
        <button type="button" className="primary" onClick={run} data-testid="run">{t('playground.run')}</button>
      </div>
      {message && <p className={message.kind === 'error' ? 'error' : 'okmsg'} role={message.kind === 'error' ? 'alert' : 'status'} data-testid="pg-message">{message.text}{message.detail && <> <span lang="en">{message.detail}</span></>}</p>}

      {problems.length > 0 && (
        <ul className="problems" aria-label={t('playground.problems')} data-testid="problems">
          {problems.map((p, i) => <li key={i}><code>{p.path || t('playground.document')}</code> {p.message}{p.detail && <> <span lang="en">{p.detail}</span></>}</li>)}
        </ul>
      )}
      {scenario && problems.length === 0 && (
        <EntryToggles engine={engine} scenario={scenario} access={access} onAccess={onAccess}
          onScenario={(s) => { setMessage(null); const json = JSON.stringify(s, null, 2); onText(json); onShare?.(json); }} />
      )}
      {plainEditor ? (
        <textarea className="plain-editor" value={text} onChange={(e) => onText(e.target.value)} aria-label={t('playground.editor')} spellCheck={false} />
      ) : (
        <Suspense fallback={<textarea className="plain-editor" value={text} onChange={(e) => onText(e.target.value)} aria-label={t('playground.editor')} spellCheck={false} />}>
          <JsonEditor value={text} onChange={onText} label={t('playground.editor')} />
        </Suspense>
      )}
    </div>
  );
}

export default Playground;
