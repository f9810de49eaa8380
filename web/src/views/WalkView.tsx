/* The walk of one access: the address split into indices, the grid of references that
 * fills as steps play, the entry read at the current step, the outcome at the end, and
 * every step as a list (the fallback that draws any mode). Takes a trace, draws it. */
import { Fragment, memo, useMemo, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { AccessResult, Result, Step } from '../../../wasm-core/js/types';
import {
  explainStep, faultDetails, flagWords, kindWords, levelName, outcomeWords, resultWords, splitGpa, splitGva, stageLabel, tableOf,
} from '../model/decode';
import { gridModel, key } from '../model/grid';
import { Term, type TermId } from './Term';

export interface WalkProps {
  result: Result;
  access: AccessResult;
  /** Steps shown so far: 0 = none yet, steps.length = the whole walk. */
  step: number;
  onStep?: (n: number) => void;
}

type Field = ReturnType<typeof splitGva>[number];

/* One address and its index fields; the name links to the glossary's definition. */
function SplitRow({ term, value, fields, active, className }: { term: 'gva' | 'gpa'; value: string; fields: Field[];
  active: number | null; className: string }) {
  const { t } = useTranslation('views');
  return (
    <div className="split-row">
      <span className="split-name">
        <Term id={term} /> {value}
      </span>
      <div className="fields">
        {fields.map((f) => (
          <span key={f.label} className={'field' + (f.level === active && f.level ? ' active' : '') + (f.level ? ` ${className}` : '')}
            title={t('walk.bits', { hi: f.hi, lo: f.lo })}>
            <span className="f-label">{f.level ? f.label : t('walk.offset')}</span>
            <span className="f-bits">{f.hi}:{f.lo}</span>
            <span className="f-value">{f.level ? f.value : '0x' + f.value.toString(16)}</span>
          </span>
        ))}
      </div>
    </div>
  );
}

export function AddressSplit({ result, access, step }: WalkProps) {
  const { t } = useTranslation('views');
  const cur: Step | undefined = access.steps[step - 1];
  if (!access.gva) return <p className="muted">{t('walk.noAddress', { op: t(`op.${access.op}`, { defaultValue: access.op }) })}</p>;
  const fields = splitGva(access.gva, result.guest_paging);
  const activeGuest = cur && cur.dim === 'guest' ? cur.level : cur && cur.dim === 'nested' && result.mode !== 'shadow' ? cur.stage : null;
  const gpaFields = cur && cur.dim === 'nested' && cur.gpa && (result.mode === 'ept' || result.mode === 'npt')
    ? splitGpa(cur.gpa, result.nested_levels) : null;
  return (
    <div className="split" aria-label={t('walk.split')}>
      <SplitRow term="gva" value={access.gva} fields={fields} active={activeGuest} className="guest" />
      {gpaFields && cur && <SplitRow term="gpa" value={cur.gpa!} fields={gpaFields} active={cur.level} className="nested" />}
    </div>
  );
}

const cellClass = (s: Step) =>
  s.dim === 'guest' ? 'c-guest' : 'c-nested';

export const WalkGrid = memo(function WalkGrid({ result, access, step, onStep }: WalkProps) {
  const { t } = useTranslation('views');
  const grid = useMemo(() => gridModel(result, access, t), [result, access, t]);
  const curKey = step > 0 ? grid.stepCell[step - 1] : null;
  if (grid.cells.size === 0) return null;
  return (
    <div className="grid-wrap">
      <table className={`grid grid-${grid.kind} mode-${result.mode}`} aria-label={t('walk.grid')}>
        <thead>
          <tr>
            <th scope="col"></th>
            {grid.cols.map((c) => <th scope="col" key={c.key}>{c.label}</th>)}
          </tr>
        </thead>
        <tbody>
          {grid.rows.map((r) => (
            <tr key={r.key}>
              <th scope="row">{r.label}</th>
              {grid.cols.map((c) => {
                const k = key(r.key, c.key);
                const ns = grid.cells.get(k);
                if (!ns) {
                  const isHpa = grid.kind === '2d' && r.key === 0 && c.key === 'G';
                  return <td key={k} className={'cell empty' + (isHpa ? ' hpa' : '')}>{isHpa && step >= access.steps.length && access.hpa ? access.hpa : ''}</td>;
                }
                const shown = ns.filter((n) => n <= step);
                const last = shown.length ? access.steps[shown[shown.length - 1] - 1] : null;
                const current = k === curKey;
                return (
                  <td key={k} data-row={r.key} data-col={c.key}
                    className={['cell', last ? 'filled ' + cellClass(last) : 'pending', last?.cache === 'hit' ? 'hit' : '',
                      last && /not_present|reserved|misconfig|blocked/.test(last.result) ? 'bad' : '', current ? 'current' : ''].join(' ')}
                    aria-current={current ? 'step' : undefined}>
                    <button type="button" tabIndex={-1} onClick={() => onStep?.(ns[0])}
                      title={ns.map((n) => t('walk.cellTitle', { n, kind: kindWords(access.steps[n - 1].kind, t) })).join('\n')}>
                      {shown.map((n) => {
                        const s = access.steps[n - 1];
                        return <span key={n} className="ref">{s.ref ?? (s.kind === 'ad_write' ? s.ad_set : s.kind === 'pwc_hit' || s.kind === 'ntlb_hit' ? t('walk.cell.hit') : s.kind === 'vmm_fill' ? t('walk.cell.fill') : s.kind === 'vmm_read' ? t('walk.cell.sw') : s.kind === 'pdpte' ? t('walk.cell.reg') : '·')}</span>;
                      })}
                    </button>
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
});

export function EntryPanel({ result, access, step }: WalkProps) {
  const { t } = useTranslation('views');
  const s = access.steps[step - 1];
  if (!s) {
    return (
      <section className="entry" id="entry" aria-live="polite">
        <h3>{step === 0 ? t('walk.ready') : t('walk.done')}</h3>
        <p>{step === 0
          ? access.steps.length ? t('walk.readyText', { count: access.steps.length, refs: access.memory_refs }) : t('walk.noSteps')
          : t('walk.ended', { count: access.steps.length, outcome: outcomeWords(access.outcome, t) })}</p>
      </section>
    );
  }
  const bad = /not_present|reserved|misconfig|blocked/.test(s.result);
  return (
    <section className="entry" id="entry" aria-live="polite" data-n={s.n}>
      <h3>
        {t('walk.stepN', { n: s.n })}{s.ref !== null ? <> · {t('walk.reference')} <span data-field="ref">{s.ref}</span></> : null} · {kindWords(s.kind, t)}
      </h3>
      <p className="explain">{explainStep(s, result, t)}</p>
      <dl className="kv">
        <dt>{t('walk.field.dim')}</dt><dd data-field="dim" data-value={tableOf(s, result.mode)}>{t(`dim.${tableOf(s, result.mode)}`)}</dd>
        <dt>{t('walk.field.level')}</dt><dd data-field="level">{s.level}{s.dim === 'guest' ? ` (${levelName(result.guest_paging, s.level)})` : ''}</dd>
        {s.dim === 'nested' && result.mode !== 'shadow' && <><dt>{t('walk.field.locating')}</dt><dd>{stageLabel(s, result.guest_paging, t)}</dd></>}
        {s.gpa && <><dt><Term id="gpa" /></dt><dd data-field="gpa">{s.gpa}</dd></>}
        <dt>{t('walk.field.table')}</dt><dd data-field="table">{s.table}</dd>
        {rootTerm(s, result)}
        <dt>{t('walk.field.index')}</dt><dd data-field="index">{s.index}</dd>
        <dt>{t('walk.field.entry_hpa')}</dt><dd data-field="entry_hpa">{s.entry_hpa}</dd>
        <dt>{t('walk.field.entry')}</dt><dd data-field="entry">{s.entry}</dd>
        <dt>{t('walk.field.result')}</dt><dd data-field="result" data-value={s.result} className={bad ? 'bad-text' : ''}>{resultWords(s.result, t)}</dd>
        {s.ad_set && <><dt>{t('walk.field.ad_set')}</dt><dd>{s.ad_set}</dd></>}
        {s.cache && <><dt>{t('walk.field.cache')}</dt><dd data-field="cache" data-value={s.cache}>{resultWords(s.cache, t)}</dd></>}
      </dl>
      {s.flags.length > 0 && (
        <ul className="flags" aria-label={t('walk.flags')} data-field="flags">
          {s.flags.map((f) => <li key={f} title={flagWords(f, t)}><b>{f}</b> <span>{flagWords(f, t)}</span></li>)}
        </ul>
      )}
    </section>
  );
}

/* The top nested level's table is what the EPTP (Intel) or nCR3 (AMD) points at: show
 * that register beside it, named with the glossary's definition. */
function rootTerm(s: Step, result: Result) {
  if (s.dim !== 'nested' || s.kind !== 'read' || s.level !== result.nested_levels) return null;
  const reg = result.mode === 'ept' ? result.eptp : result.mode === 'npt' ? result.ncr3 : null;
  if (!reg) return null;
  return <><dt><Term id={result.mode === 'ept' ? 'eptp' : 'ncr3'} /></dt><dd data-field="root">{reg}</dd></>;
}

/* Which glossary entry explains an outcome. */
const OUTCOME_TERM: Record<string, TermId | null> = {
  ok: null, guest_page_fault: 'page_fault', ept_violation: 'ept_violation', ept_misconfig: 'ept_misconfig', npt_fault: 'npf',
  flat_fault: 'flat', vmfunc_exit: 'vmfunc', invalid_opcode: 'vmfunc', vmcall_exit: 'vmcall', shadow_unmapped: 'shadow',
};

export function OutcomePanel({ access, step }: WalkProps) {
  const { t } = useTranslation('views');
  const done = step >= access.steps.length;
  const { pairs, bits } = faultDetails(access.fault, t);
  const term = OUTCOME_TERM[access.outcome] ?? null;
  return (
    <section className={'outcome' + (done ? ' done' : '')} id="outcome" aria-label={t('walk.outcome')}>
      <h3>{t('walk.outcome')} {done ? '' : <span className="muted">{t('walk.atEnd')}</span>}</h3>
      {done ? (
        <>
          <p><b className={access.outcome === 'ok' ? 'ok-text' : 'bad-text'} data-field="outcome" data-value={access.outcome}>
            {term ? <Term id={term}>{outcomeWords(access.outcome, t)}</Term> : outcomeWords(access.outcome, t)}</b>
            {access.hpa ? <> {t('walk.toHpa')} <code>{access.hpa}</code></> : null}</p>
          <p className="counts">{t('walk.counts', { refs: access.memory_refs, guest: access.guest_refs, nested: access.nested_refs, ad: access.ad_writes, exits: access.exits })}
            {access.guest_page_size ? ' · ' + t('walk.guestPage', { size: access.guest_page_size / 1024 }) : ''}
            {access.nested_page_size ? ' · ' + t('walk.nestedPage', { size: access.nested_page_size / 1024 }) : ''}
            {access.eptp_index !== null ? ' · ' + t('walk.eptpIndex', { index: access.eptp_index }) : ''}</p>
          {pairs.length > 0 && <dl className="kv">{pairs.map(([k, v]) => <Fragment key={k}><dt>{k}</dt><dd>{v}</dd></Fragment>)}</dl>}
          {bits && (
            <div className="bits">
              <h4>{bits.title}</h4>
              <ul>{bits.bits.map((b) => <li key={b.bit} className={b.set ? 'set' : 'clear'}>{t('walk.bit', { bit: b.bit, value: b.set ? '1' : '0', words: b.words })}</li>)}</ul>
            </div>
          )}
        </>
      ) : <p className="muted">{t('walk.toGo', { count: access.steps.length - step })}</p>}
    </section>
  );
}

export const StepList = memo(function StepList({ result, access, step, onStep }: WalkProps) {
  const { t } = useTranslation('views');
  return (
    <details className="steps" open={access.steps.length <= 40}>
      <summary>{t('walk.allSteps', { count: access.steps.length })}</summary>
      <div className="table-scroll">
        <table className="steplist">
          <thead><tr><th>#</th><th>{t('walk.col_.ref')}</th><th>{t('walk.col_.kind')}</th><th>{t('walk.col_.dim')}</th><th>{t('walk.col_.lvl')}</th><th>{t('walk.col_.stage')}</th><th>{t('walk.col_.entryHpa')}</th><th>{t('walk.col_.entry')}</th><th>{t('walk.col_.flags')}</th><th>{t('walk.col_.result')}</th></tr></thead>
          <tbody>
            {access.steps.map((s) => (
              <tr key={s.n} className={(s.n === step ? 'current ' : '') + (s.n > step ? 'future' : '')} aria-current={s.n === step ? 'step' : undefined}
                onClick={() => onStep?.(s.n)}>
                <td>{s.n}</td><td>{s.ref ?? ''}</td><td title={kindWords(s.kind, t)}>{s.kind}</td>
                <td className={s.dim}>{t(`dim.${result.mode === 'shadow' && s.dim === 'nested' ? 'shadow' : s.dim}`)}</td>
                <td>{s.level}</td><td>{s.dim === 'nested' && result.mode !== 'shadow' ? (s.stage ? t('step.stageShort', { n: s.stage }) : t('walk.final')) : ''}</td>
                <td>{s.entry_hpa}</td><td>{s.entry}</td><td>{s.flags.join(' ')}</td><td>{resultWords(s.result, t)}{s.cache ? ` (${resultWords(s.cache, t)})` : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
});

/** children: panels shown below the step list (the Bochs reference list). */
export function WalkView(props: WalkProps & { children?: ReactNode }) {
  return (
    <div className="walk" data-testid="walk-view">
      <AddressSplit {...props} />
      <div className="walk-main">
        <WalkGrid {...props} />
        <EntryPanel {...props} />
      </div>
      <OutcomePanel {...props} />
      <StepList {...props} />
      {props.children}
    </div>
  );
}
