/* The walk of one access: the address split into indices, the grid of references that
 * fills as steps play, the entry read at the current step, the outcome at the end, and
 * every step as a list (the fallback that draws any mode). Takes a trace, draws it. */
import { Fragment, memo, useEffect, useMemo, useRef, type ReactNode } from 'react';
import { useTouch } from './touch';
import { useTranslation } from 'react-i18next';
import type { AccessResult, Result, Step } from '../../../wasm-core/js/types';
import {
  countsLine, entryAfterAd, explainStep, faultDetails, flagWords, forWhat, hexToBig, isShadowStep, isSwitchStep, kindWords, levelName,
  outcomeSentence, resultWords, splitGpa, splitGva, tableOf,
} from '../model/decode';
import { gridModel, key } from '../model/grid';
import { Term, type TermId } from './Term';
import { sizeWords } from './size';

export interface WalkProps {
  result: Result;
  access: AccessResult;
  /** Steps shown so far: 0 = none yet, steps.length = the whole walk. */
  step: number;
  onStep?: (n: number) => void;
  /** The page's main walk carries the ids tests and links use (#entry, #outcome); a walk
   * embedded a second time on a page (lessons) leaves them out, so no id repeats. */
  primary?: boolean;
}

type Field = ReturnType<typeof splitGva>[number];

/* One address and its index fields; the name links to the glossary's definition. */
function SplitRow({ term, value, fields, active, className, hidden }: { term: 'gva' | 'gpa'; value: string; fields: Field[];
  active: number | null; className: string; hidden?: boolean }) {
  const { t } = useTranslation('views');
  return (
    <div className={'split-row' + (hidden ? ' reserved' : '')} aria-hidden={hidden || undefined}>
      <span className="split-name">
        {hidden ? term : <Term id={term} />} {value}
      </span>
      <div className="fields">
        {fields.map((f) => (
          <span key={f.label} className={'field' + (f.level === active && f.level ? ' active' : '') + (f.level ? ` ${className}` : '')}
            title={hidden ? undefined : t('walk.bits', { hi: f.hi, lo: f.lo })}>
            <span className="f-label">{f.level ? f.label : t('walk.offset')}</span>
            <span className="f-bits">{f.hi}:{f.lo}</span>
            <span className="f-value">{f.level ? f.value : '0x' + f.value.toString(16)}</span>
          </span>
        ))}
      </div>
    </div>
  );
}

const EVENT_OPS = new Set(['vmfunc', 'vmcall', 'mov_cr3', 'invlpg', 'pte_write']);

export function AddressSplit({ result, access, step }: WalkProps) {
  const { t } = useTranslation('views');
  const cur: Step | undefined = access.steps[step - 1];
  if (!access.gva || EVENT_OPS.has(access.op)) {
    if (access.op === 'vmfunc' || access.op === 'vmcall') return null;   // the VMFUNC panel tells these
    return <p className="muted">{t('walk.noAddress', { op: t(`op.${access.op}`, { defaultValue: access.op }) })}</p>;
  }
  const fields = splitGva(access.gva, result.guest_paging);
  const activeGuest = cur && cur.dim === 'guest' ? cur.level
    : cur && isShadowStep(cur, result.mode) ? (result.mode === 'agile' ? cur.level : null)
    : cur && cur.dim === 'nested' ? cur.stage : null;
  const nested2d = result.mode === 'ept' || result.mode === 'npt' || result.mode === 'agile';
  const gpaFields = cur && cur.dim === 'nested' && cur.gpa && nested2d ? splitGpa(cur.gpa, result.nested_levels) : null;
  // The gpa row keeps its place when no nested step is on show, so nothing below it moves.
  const reserve = nested2d && !gpaFields ? splitGpa('0x0', result.nested_levels) : null;
  return (
    <div className="split" aria-label={t('walk.split')}>
      <SplitRow term="gva" value={access.gva} fields={fields} active={activeGuest} className="guest" />
      {gpaFields && cur && <SplitRow term="gpa" value={cur.gpa!} fields={gpaFields} active={cur.level} className="nested" />}
      {reserve && <SplitRow term="gpa" value="0x0" fields={reserve} active={null} className="nested" hidden />}
    </div>
  );
}

const cellClass = (s: Step, mode: string) =>
  s.dim === 'guest' ? 'c-guest' : `c-${tableOf(s, mode)}`;

/* A cell's content: the reference numbers read there so far, or what stood in for a read. */
function cellText(s: Step, t: (k: string) => string): string {
  if (s.ref !== null) return String(s.ref);
  if (s.kind === 'ad_write') return s.ad_set;
  if (s.kind === 'pwc_hit' || s.kind === 'ntlb_hit') return t('walk.cell.hit');
  if (s.kind === 'vmm_fill') return t('walk.cell.fill');
  if (s.kind === 'vmm_read') return t('walk.cell.sw');
  if (s.kind === 'pdpte') return t('walk.cell.reg');
  return '·';
}

/* A cell's tooltip line for one step: the reference number (what the cell shows) and the
 * step it is, each named, never a bare number of either. */
function stepTitle(s: Step, t: (k: string, o?: Record<string, unknown>) => string): string {
  const kind = kindWords(s.kind, t);
  return s.ref !== null ? t('walk.cellTitleRef', { ref: s.ref, n: s.n, kind }) : t('walk.cellTitle', { n: s.n, kind });
}

/* When focus is inside a list of step targets (grid cells, step rows), it follows the
 * current step, so ← → keep the focused element and the highlight together. */
function useFocusFollows(ref: React.RefObject<HTMLElement | null>, step: number) {
  useEffect(() => {
    const root = ref.current;
    if (!root || !root.contains(document.activeElement) || document.activeElement === root) return;
    const target = root.querySelector<HTMLElement>('[tabindex="0"][data-step-target]');
    if (target && target !== document.activeElement) target.focus({ preventScroll: false });
  }, [ref, step]);
}

export const WalkGrid = memo(function WalkGrid({ result, access, step, onStep }: WalkProps) {
  const { t } = useTranslation('views');
  const grid = useMemo(() => gridModel(result, access, t), [result, access, t]);
  const wrap = useRef<HTMLDivElement>(null);
  useFocusFollows(wrap, step);
  const curKey = step > 0 ? grid.stepCell[step - 1] : null;
  if (grid.cells.size === 0) return null;
  // One tab stop for the grid (roving tabindex): the current cell, or the first one.
  const tabKey = curKey ?? grid.cells.keys().next().value;
  const done = step >= access.steps.length;
  // agile paging: the shadow entry whose switch bit hands the walk to the guest's own tables
  const switchStep = access.steps.find((st) => isSwitchStep(st, result.mode) && st.kind === 'read');
  const rowLabel = new Map(grid.rows.map((r) => [r.key, r.label]));
  const colLabel = new Map(grid.cols.map((c) => [c.key, c.label]));
  return (
    <div className="grid-wrap" ref={wrap}>
      <table className={`grid grid-${grid.kind} mode-${result.mode}`} aria-label={t('walk.grid')}>
        <thead>
          <tr>
            <th scope="col"><span className="sr-only">{t('walk.rowsCols')}</span></th>
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
                  const hpa = isHpa && done && access.hpa;
                  return <td key={k} className={'cell empty' + (hpa ? ' hpa' : '')}>{hpa ? <span className="hpa-label" title={access.hpa!}>{t('walk.hpaCell')}</span> : ''}</td>;
                }
                const shown = ns.filter((n) => n <= step);
                const last = shown.length ? access.steps[shown[shown.length - 1] - 1] : null;
                const current = k === curKey;
                const label = t('walk.cellLabel', {
                  row: rowLabel.get(r.key), col: colLabel.get(c.key),
                  steps: ns.map((n) => stepTitle(access.steps[n - 1], t)).join(', '),
                  state: shown.length ? t('walk.cellDone', { text: shown.map((n) => { const x = access.steps[n - 1]; return x.ref !== null ? t('walk.refN', { ref: x.ref }) : cellText(x, t); }).join(' · ') }) : t('walk.cellPending'),
                });
                return (
                  <td key={k} data-row={r.key} data-col={c.key}
                    className={['cell', last ? 'filled ' + cellClass(last, result.mode) : 'pending', last?.cache === 'hit' ? 'hit' : '',
                      last && isSwitchStep(last, result.mode) ? 'switch' : '',
                      last && /not_present|reserved|misconfig|blocked/.test(last.result) ? 'bad' : '', current ? 'current' : ''].join(' ')}
                    aria-current={current ? 'step' : undefined}>
                    <button type="button" tabIndex={k === tabKey ? 0 : -1} data-step-target="" onClick={() => onStep?.(ns[0])}
                      title={ns.map((n) => stepTitle(access.steps[n - 1], t)).join('\n')}>
                      {shown.map((n) => <span key={n} className="ref">{cellText(access.steps[n - 1], t)}</span>)}
                      <span className="sr-only">{label}</span>
                    </button>
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
        {grid.kind === '2d' && done && access.hpa && (
          <caption className="grid-hpa">
            <span className="hpa-name">{t('walk.finalHpa')}</span> <code data-field="final-hpa">{access.hpa}</code>
          </caption>
        )}
      </table>
      <p className="grid-note muted">{t('walk.gridNote')}</p>
      {switchStep && (
        <p className="muted small" data-testid="switch-note">{t('walk.switchNote', { level: switchStep.level, below: switchStep.level - 1 })}</p>
      )}
    </div>
  );
});

/* An EPTP as the CPU reads it from the list: root, walk length, memory type, A/D enable. */
function eptpWords(value: string, t: (k: string, o?: Record<string, unknown>) => string): string {
  const v = hexToBig(value);
  const mt = Number(v & 7n);
  return t('walk.eptpDecoded', {
    root: '0x' + (v & ~0xfffn & ((1n << 52n) - 1n)).toString(16), levels: Number((v >> 3n) & 7n) + 1, mt,
    mtName: t(['0', '1', '4', '5', '6'].includes(String(mt)) ? `flag.mt.${mt}` : 'flag.mt.other'),
    ad: t((v >> 6n) & 1n ? 'walk.adOn' : 'walk.adOff'),
  });
}

export function EntryPanel({ result, access, step, primary = true }: WalkProps) {
  const touch = useTouch();
  const { t } = useTranslation('views');
  const s = access.steps[step - 1];
  const id = primary ? 'entry' : undefined;
  if (!s) {
    return (
      <section className="entry" id={id} aria-live="polite" tabIndex={0} aria-label={t('walk.current')}>
        <h3>{step === 0 ? t('walk.ready') : t('walk.done')}</h3>
        <p className="explain">{step === 0
          ? access.steps.length ? t(touch ? 'walk.readyTextTouch' : 'walk.readyText', { count: access.steps.length, refs: t('count.refsPlain', { count: access.memory_refs }) }) : t(noWalkKey(access))
          : t('walk.ended', { count: access.steps.length, outcome: outcomeSentence(access, t) })}</p>
      </section>
    );
  }
  const bad = /not_present|reserved|misconfig|blocked/.test(s.result);
  const eptp = s.kind === 'eptp_list';
  const table = eptp ? 'eptp' : tableOf(s, result.mode);
  const second = s.dim === 'nested' && !isShadowStep(s, result.mode) && !eptp;
  // at an A/D step the entry is shown as read and as the walk leaves it
  const after = entryAfterAd(s, result.mode);
  return (
    <section className="entry" id={id} aria-live="polite" data-n={s.n} tabIndex={0} aria-label={t('walk.current')}>
      <h3>
        {t('walk.stepN', { n: s.n })}{s.ref !== null ? <> · {t('walk.reference')} <span data-field="ref">{s.ref}</span></> : null} · {kindWords(s.kind, t)}
      </h3>
      <p className="explain">{explainStep(s, result, t)}</p>
      <dl className="kv">
        <dt>{t('walk.field.dim')}</dt><dd data-field="dim" data-value={table}>{t(`dim.${table}`)}</dd>
        {!eptp && result.mode !== 'flat' || s.dim === 'guest' ? <><dt>{t('walk.field.level')}</dt><dd data-field="level">{s.level}{s.dim === 'guest' || isShadowStep(s, result.mode) ? ` (${levelName(result.guest_paging, s.level)})` : ''}</dd></> : null}
        {second && <><dt>{t('walk.field.locating')}</dt><dd>{forWhat(s, result, t)}</dd></>}
        {s.gpa && <><dt><Term id="gpa" /></dt><dd data-field="gpa">{s.gpa}</dd></>}
        <dt>{t(eptp ? 'walk.field.list' : s.dim === 'nested' ? 'walk.field.tableHpa' : result.mode === 'native' ? 'walk.field.tablePa' : 'walk.field.tableGpa')}</dt><dd data-field="table">{s.table}</dd>
        {rootTerm(s, result)}
        <dt>{t(result.mode === 'flat' && s.dim === 'nested' ? 'walk.field.gfn' : 'walk.field.index')}</dt><dd data-field="index">{s.index}</dd>
        <dt>{t('walk.field.entry_hpa')}</dt><dd data-field="entry_hpa">{s.entry_hpa}</dd>
        <dt>{t(eptp ? 'walk.field.eptp' : after ? 'walk.field.entryRead' : 'walk.field.entry')}</dt><dd data-field="entry">{s.entry}</dd>
        {after && <><dt>{t('walk.field.entryAfter', { bits: s.ad_set })}</dt><dd data-field="entry-after">{after}</dd></>}
        {eptp && <><dt>{t('walk.field.decoded')}</dt><dd>{eptpWords(s.entry, t)}</dd></>}
        <dt>{t('walk.field.result')}</dt><dd data-field="result" data-value={s.result} className={bad ? 'bad-text' : ''}>{eptp ? t(s.result === 'page' ? 'walk.eptpValid' : 'walk.eptpInvalid') : resultWords(s.result, t)}</dd>
        {s.ad_set && <><dt>{t('walk.field.ad_set')}</dt><dd data-field="ad_set">{s.result === 'blocked' ? t('walk.field.adBlocked', { bits: s.ad_set })
          : s.dim === 'nested' && s.kind !== 'ad_write' ? t('walk.field.adNested', { bits: s.ad_set }) : s.ad_set}</dd></>}
        {s.cache && <><dt>{t('walk.field.cache')}</dt><dd data-field="cache" data-value={s.cache}>{resultWords(s.cache, t)}</dd></>}
      </dl>
      {s.flags.length > 0 && !eptp && (
        <ul className="flags" aria-label={t('walk.flags')} data-field="flags">
          {s.flags.map((f) => <li key={f} title={flagWords(f, t)}><b>{f}</b> <span>{flagWords(f, t)}</span></li>)}
        </ul>
      )}
    </section>
  );
}

/* What to say for an event that reads no table. */
function noWalkKey(a: AccessResult): string {
  if (a.op === 'vmcall') return 'walk.noWalk.vmcall';
  if (a.op === 'vmfunc') return a.outcome === 'invalid_opcode' ? 'walk.noWalk.ud' : 'walk.noWalk.vmfunc';
  if (a.op === 'mov_cr3') return a.exits ? 'walk.noWalk.cr3Exit' : 'walk.noWalk.cr3';
  if (a.op === 'invlpg') return 'walk.noWalk.invlpg';
  if (a.op === 'pte_write') return 'walk.noWalk.pteWrite';
  return 'walk.noSteps';
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

/* The 2-D walk's count in words, when every reference went to memory (no cache answered):
 * g guest references, and g + 1 nested walks of `levels` references each. */
function why2d(a: AccessResult, r: Result): Record<string, number> | null {
  if ((r.mode !== 'ept' && r.mode !== 'npt') || a.outcome !== 'ok' || !r.nested_levels || a.steps.some((s) => s.cache === 'hit')) return null;
  const g = a.guest_refs, levels = r.nested_levels, walks = g + 1;
  return g > 0 && a.nested_refs === walks * levels ? { refs: a.memory_refs, g, walks, levels } : null;
}

export function OutcomePanel({ result, access, step, primary = true }: WalkProps) {
  const { t } = useTranslation('views');
  const done = step >= access.steps.length;
  const { pairs, bits } = faultDetails(access.fault, t, result);
  const term = OUTCOME_TERM[access.outcome] ?? null;
  const words = outcomeSentence(access, t);
  return (
    <section className={'outcome' + (done ? ' done' : '')} id={primary ? 'outcome' : undefined} aria-label={t('walk.outcome')}>
      <h3>{t('walk.outcome')} {done ? '' : <span className="muted">{t('walk.atEnd')}</span>}</h3>
      {done ? (
        <>
          <p><b className={access.outcome === 'ok' ? 'ok-text' : 'bad-text'} data-field="outcome" data-value={access.outcome}>
            {term ? <Term id={term}>{words}</Term> : words}</b>
            {access.hpa ? <> {t('walk.toHpa')} <code>{access.hpa}</code></> : null}</p>
          <p className="counts">{countsLine(access, result.mode, t)}
            {access.guest_page_size ? ' · ' + t('walk.guestPage', { size: sizeWords(access.guest_page_size) }) : ''}
            {access.nested_page_size ? ' · ' + t(`walk.${result.mode === 'flat' ? 'flatPage' : 'nestedPage'}`, { size: sizeWords(access.nested_page_size) }) : ''}
            {access.eptp_index !== null ? ' · ' + t('walk.eptpIndex', { index: access.eptp_index }) : ''}</p>
          {why2d(access, result) && <p className="why2d" data-field="why">{t('walk.why2d', why2d(access, result)!)}</p>}
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
  const body = useRef<HTMLTableSectionElement>(null);
  useFocusFollows(body, step);
  if (access.steps.length === 0) return null;
  const tabN = Math.max(1, step);
  return (
    <details className="steps" open={access.steps.length <= 40}>
      <summary>{t('walk.allSteps', { count: access.steps.length })}</summary>
      <div className="table-scroll" tabIndex={0} role="region" aria-label={t('walk.allSteps', { count: access.steps.length })}>
        <table className="steplist">
          <thead><tr><th>{t('walk.col_.step')}</th><th>{t('walk.col_.ref')}</th><th>{t('walk.col_.kind')}</th><th>{t('walk.col_.dim')}</th><th>{t('walk.col_.lvl')}</th><th>{t('walk.col_.stage')}</th><th>{t('walk.col_.entryHpa')}</th><th>{t('walk.col_.entry')}</th><th>{t('walk.col_.flags')}</th><th>{t('walk.col_.result')}</th></tr></thead>
          <tbody ref={body}>
            {access.steps.map((s) => {
              const table = s.kind === 'eptp_list' ? 'eptp' : tableOf(s, result.mode);
              return (
                <tr key={s.n} className={(s.n === step ? 'current ' : '') + (s.n > step ? 'future' : '')} aria-current={s.n === step ? 'step' : undefined}
                  onClick={() => onStep?.(s.n)}>
                  <td data-n={s.n}><button type="button" className="rowbtn" tabIndex={s.n === tabN ? 0 : -1} data-step-target=""
                    aria-label={t('walk.stepRow', { n: s.n, what: explainStep(s, result, t) })} onClick={(e) => { e.stopPropagation(); onStep?.(s.n); }}>{s.n}</button></td>
                  <td>{s.ref ?? ''}</td><td title={kindWords(s.kind, t)}>{t(`walk.kindShort.${s.kind}`, { defaultValue: kindWords(s.kind, t) })}</td>
                  <td className={`d-${table}`}>{t(`dim.${table}`)}</td>
                  <td>{s.level}</td><td>{s.dim === 'nested' && !isShadowStep(s, result.mode) && s.kind !== 'eptp_list' ? (s.stage ? t('walk.translatingGuest', { n: s.stage }) : t('walk.translatingFinal')) : ''}</td>
                  <td>{s.entry_hpa}</td><td data-field="entry">{s.entry}{entryAfterAd(s, result.mode) ? ` → ${entryAfterAd(s, result.mode)}` : ''}</td><td>{s.flags.join(' ')}</td><td>{s.kind === 'eptp_list' ? t(s.result === 'page' ? 'walk.eptpValid' : 'walk.eptpInvalid') : resultWords(s.result, t)}{s.cache ? ` (${resultWords(s.cache, t)})` : ''}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </details>
  );
});

/** children: panels shown below the step list (the Bochs reference list). */
/* On a narrow screen the explanation sticks to the bottom of the viewport and the step
 * controls to the top: a tall grid (a 5-level walk) can put the current cell under either.
 * After each step the page scrolls just enough to show the cell between them. */
function useCellClear(ref: React.RefObject<HTMLElement | null>, step: number, on: boolean) {
  useEffect(() => {
    // the Walk tab's walk only (a lesson's page never jumps), and only where the explanation
    // sticks (style.css: max-width 820px); layout is read after that test, not on every render
    const narrow = typeof matchMedia === 'function' && matchMedia('(max-width: 820px)').matches;
    const main = on && narrow ? ref.current : null;
    const cell = main?.querySelector('td[aria-current="step"]');
    const entry = main?.querySelector('.entry');
    if (!cell || !entry || getComputedStyle(entry).position !== 'sticky') return;
    const c = cell.getBoundingClientRect();
    const below = c.bottom - entry.getBoundingClientRect().top;
    const bar = document.querySelector('.controls');
    const above = (bar ? bar.getBoundingClientRect().bottom : 0) - c.top;
    if (below > 0) scrollBy(0, below + 4);
    else if (above > 0) scrollBy(0, -(above + 4));
  }, [ref, step, on]);
}

export function WalkView(props: WalkProps & { children?: ReactNode }) {
  const main = useRef<HTMLDivElement>(null);
  useCellClear(main, props.step, props.primary !== false);
  return (
    <div className="walk" data-testid="walk-view">
      <AddressSplit {...props} />
      <div className="walk-main" ref={main}>
        <WalkGrid {...props} />
        <EntryPanel {...props} />
      </div>
      <OutcomePanel {...props} />
      <StepList {...props} />
      {props.children}
    </div>
  );
}
