/* The walk of one access: the address split into indices, the grid of references that
 * fills as steps play, the entry read at the current step, the outcome at the end, and
 * every step as a list (the fallback that draws any mode). Takes a trace, draws it. */
import { Fragment, memo, useMemo } from 'react';
import type { AccessResult, Result, Step } from '../../../wasm-core/js/types';
import {
  explainStep, faultDetails, flagWords, kindWords, levelName, outcomeWords, splitGpa, splitGva, stageLabel,
} from '../model/decode';
import { gridModel, key } from '../model/grid';
import glossary from '../../../lessons/glossary.json';

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
  return (
    <div className="split-row">
      <span className="split-name">
        <abbr className="term" tabIndex={0} data-term={term} title={glossary.terms[term].en}>{term}</abbr> {value}
      </span>
      <div className="fields">
        {fields.map((f) => (
          <span key={f.label} className={'field' + (f.level === active && f.level ? ' active' : '') + (f.level ? ` ${className}` : '')}
            title={`bits ${f.hi}:${f.lo}`}>
            <span className="f-label">{f.label}</span>
            <span className="f-bits">{f.hi}:{f.lo}</span>
            <span className="f-value">{f.level ? f.value : '0x' + f.value.toString(16)}</span>
          </span>
        ))}
      </div>
    </div>
  );
}

export function AddressSplit({ result, access, step }: WalkProps) {
  const cur: Step | undefined = access.steps[step - 1];
  if (!access.gva) return <p className="muted">This event ({access.op}) has no address to split.</p>;
  const fields = splitGva(access.gva, result.guest_paging);
  const activeGuest = cur && cur.dim === 'guest' ? cur.level : cur && cur.dim === 'nested' && result.mode !== 'shadow' ? cur.stage : null;
  const gpaFields = cur && cur.dim === 'nested' && cur.gpa && (result.mode === 'ept' || result.mode === 'npt')
    ? splitGpa(cur.gpa, result.nested_levels) : null;
  return (
    <div className="split" aria-label="address split">
      <SplitRow term="gva" value={access.gva} fields={fields} active={activeGuest} className="guest" />
      {gpaFields && cur && <SplitRow term="gpa" value={cur.gpa!} fields={gpaFields} active={cur.level} className="nested" />}
    </div>
  );
}

const cellClass = (s: Step) =>
  s.dim === 'guest' ? 'c-guest' : 'c-nested';

export const WalkGrid = memo(function WalkGrid({ result, access, step, onStep }: WalkProps) {
  const grid = useMemo(() => gridModel(result, access), [result, access]);
  const curKey = step > 0 ? grid.stepCell[step - 1] : null;
  if (grid.cells.size === 0) return null;
  return (
    <div className="grid-wrap">
      <table className={`grid grid-${grid.kind} mode-${result.mode}`} aria-label="walk grid">
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
                      title={ns.map((n) => { const s = access.steps[n - 1]; return `step ${n}: ${kindWords(s.kind)}`; }).join('\n')}>
                      {shown.map((n) => {
                        const s = access.steps[n - 1];
                        return <span key={n} className="ref">{s.ref ?? (s.kind === 'ad_write' ? s.ad_set : s.kind === 'pwc_hit' || s.kind === 'ntlb_hit' ? 'hit' : s.kind === 'vmm_fill' ? 'fill' : s.kind === 'vmm_read' ? 'sw' : s.kind === 'pdpte' ? 'reg' : '·')}</span>;
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
  const s = access.steps[step - 1];
  if (!s) {
    return (
      <section className="entry" id="entry" aria-live="polite">
        <h3>{step === 0 ? 'Ready' : 'Done'}</h3>
        <p>{step === 0
          ? access.steps.length ? `Press → or Play to read the first entry. This access takes ${access.steps.length} steps, ${access.memory_refs} memory references.` : 'This event has no walk steps.'
          : `The walk ended after ${access.steps.length} steps: ${outcomeWords(access.outcome)}.`}</p>
      </section>
    );
  }
  return (
    <section className="entry" id="entry" aria-live="polite" data-n={s.n}>
      <h3>
        Step {s.n}{s.ref !== null ? <> · reference <span data-field="ref">{s.ref}</span></> : null} · {kindWords(s.kind)}
      </h3>
      <p className="explain">{explainStep(s, result)}</p>
      <dl className="kv">
        <dt>dimension</dt><dd data-field="dim">{result.mode === 'shadow' && s.dim === 'nested' ? 'shadow' : result.mode === 'flat' && s.dim === 'nested' ? 'flat' : s.dim}</dd>
        <dt>level</dt><dd data-field="level">{s.level}{s.dim === 'guest' ? ` (${levelName(result.guest_paging, s.level)})` : ''}</dd>
        {s.dim === 'nested' && result.mode !== 'shadow' && <><dt>locating</dt><dd>{stageLabel(s, result.guest_paging)}</dd></>}
        {s.gpa && <><dt>gpa</dt><dd data-field="gpa">{s.gpa}</dd></>}
        <dt>table</dt><dd data-field="table">{s.table}</dd>
        <dt>index</dt><dd data-field="index">{s.index}</dd>
        <dt>entry hpa</dt><dd data-field="entry_hpa">{s.entry_hpa}</dd>
        <dt>entry</dt><dd data-field="entry">{s.entry}</dd>
        <dt>result</dt><dd data-field="result" className={/not_present|reserved|misconfig|blocked/.test(s.result) ? 'bad-text' : ''}>{s.result.replace(/_/g, ' ')}</dd>
        {s.ad_set && <><dt>A/D set</dt><dd>{s.ad_set}</dd></>}
        {s.cache && <><dt>cache</dt><dd data-field="cache">{s.cache}</dd></>}
      </dl>
      {s.flags.length > 0 && (
        <ul className="flags" aria-label="flags" data-field="flags">
          {s.flags.map((f) => <li key={f} title={flagWords(f)}><b>{f}</b> <span>{flagWords(f)}</span></li>)}
        </ul>
      )}
    </section>
  );
}

export function OutcomePanel({ access, step }: WalkProps) {
  const done = step >= access.steps.length;
  const { pairs, bits } = faultDetails(access.fault);
  return (
    <section className={'outcome' + (done ? ' done' : '')} id="outcome" aria-label="outcome">
      <h3>Outcome {done ? '' : <span className="muted">(at the end of the walk)</span>}</h3>
      {done ? (
        <>
          <p><b className={access.outcome === 'ok' ? 'ok-text' : 'bad-text'} data-field="outcome">{outcomeWords(access.outcome)}</b>
            {access.hpa ? <> → hpa <code>{access.hpa}</code></> : null}</p>
          <p className="counts">{access.memory_refs} memory references ({access.guest_refs} guest + {access.nested_refs} nested)
            · {access.ad_writes} A/D writes · {access.exits} exits
            {access.guest_page_size ? ` · guest page ${access.guest_page_size / 1024} KiB` : ''}
            {access.nested_page_size ? ` · nested page ${access.nested_page_size / 1024} KiB` : ''}
            {access.eptp_index !== null ? ` · EPTP index ${access.eptp_index}` : ''}</p>
          {pairs.length > 0 && <dl className="kv">{pairs.map(([k, v]) => <Fragment key={k}><dt>{k}</dt><dd>{v}</dd></Fragment>)}</dl>}
          {bits && (
            <div className="bits">
              <h4>{bits.title}</h4>
              <ul>{bits.bits.map((b) => <li key={b.bit} className={b.set ? 'set' : 'clear'}>bit {b.bit} {b.set ? '1' : '0'}: {b.words}</li>)}</ul>
            </div>
          )}
        </>
      ) : <p className="muted">{access.steps.length - step} steps to go.</p>}
    </section>
  );
}

export const StepList = memo(function StepList({ result, access, step, onStep }: WalkProps) {
  return (
    <details className="steps" open={access.steps.length <= 40}>
      <summary>All {access.steps.length} steps</summary>
      <div className="table-scroll">
        <table className="steplist">
          <thead><tr><th>#</th><th>ref</th><th>kind</th><th>dim</th><th>lvl</th><th>stage</th><th>entry hpa</th><th>entry</th><th>flags</th><th>result</th></tr></thead>
          <tbody>
            {access.steps.map((s) => (
              <tr key={s.n} className={(s.n === step ? 'current ' : '') + (s.n > step ? 'future' : '')} aria-current={s.n === step ? 'step' : undefined}
                onClick={() => onStep?.(s.n)}>
                <td>{s.n}</td><td>{s.ref ?? ''}</td><td>{s.kind}</td>
                <td className={s.dim}>{result.mode === 'shadow' && s.dim === 'nested' ? 'shadow' : s.dim}</td>
                <td>{s.level}</td><td>{s.dim === 'nested' && result.mode !== 'shadow' ? (s.stage ? 'g' + s.stage : 'final') : ''}</td>
                <td>{s.entry_hpa}</td><td>{s.entry}</td><td>{s.flags.join(' ')}</td><td>{s.result}{s.cache ? ` (${s.cache})` : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
});

export function WalkView(props: WalkProps) {
  return (
    <div className="walk" data-testid="walk-view">
      <AddressSplit {...props} />
      <div className="walk-main">
        <WalkGrid {...props} />
        <EntryPanel {...props} />
      </div>
      <OutcomePanel {...props} />
      <StepList {...props} />
    </div>
  );
}
