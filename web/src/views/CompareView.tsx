/* One guest mapping, one access, five modes, cold and warm: the scenarios are generated
 * in TS (model/compare.ts), each run through the same engine, the counts set side by side,
 * references charted beside cycles, and a sentence that says the ordering the numbers show. */
import { useMemo, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import type { AccessResult, Op } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { checkCompareInput, COLD, COMPARE_MODES, compareScenario, COST, cycles, cyclesOn, DEFAULT_TABLES, ordering, TABLES, WARM, type CompareInput, type Tables } from '../model/compare';
import { exitKinds, exitKindsWords, isShadowStep, outcomeWords, refsSplit } from '../model/decode';
import { Term } from './Term';
import { YourProgram } from '../trace';
import { machineFromResult, type HwResult, type MachineCost } from '../trace/machine';

export interface CompareProps {
  engine: Pick<Vmsim, 'run'>;
  input: CompareInput;
  onInput?: (i: CompareInput) => void;
  /** Opens a mode's scenario in the walk view, at the cold (0) or warm (1) access. */
  onOpen?: (scenarioJson: string, access: number) => void;
}

export interface CompareRow { mode: string; cold: AccessResult | null; warm: AccessResult | null; error: string | null; json: string }

export function runCompare(engine: Pick<Vmsim, 'run'>, input: CompareInput): CompareRow[] {
  return COMPARE_MODES.map((mode) => {
    const s = compareScenario(mode, input);
    const json = JSON.stringify(s, null, 2);
    try {
      const r = engine.run(s);
      return { mode, cold: r.accesses[COLD], warm: r.accesses[WARM], error: null, json };
    } catch (e) {
      return { mode, cold: null, warm: null, error: (e as Error).message, json };
    }
  });
}

type Measure = 'refs' | 'cycles' | 'cycles-mine';
const value = (a: AccessResult, m: Measure, mine?: MachineCost | null) =>
  (m === 'refs' ? a.memory_refs : m === 'cycles-mine' && mine ? cyclesOn(a, mine) : cycles(a));

/* Grouped horizontal bars, cold and warm per mode, each bar labelled with its number. The
 * table above carries the same numbers for screen readers; the chart is one image. */
function BarChart({ rows, measure, title, lang, start, mine }: { rows: CompareRow[]; measure: Measure; title: string; lang: string; start: string; mine?: MachineCost | null }) {
  const { t } = useTranslation('views');
  const ok = rows.filter((r) => r.cold && r.warm);
  const val = (a: AccessResult) => value(a, measure, mine);
  const max = Math.max(1, ...ok.flatMap((r) => [val(r.cold!), val(r.warm!)]));
  const fmt = (n: number) => n.toLocaleString(lang);
  const LABEL = 64, W = 360, BAR = 13, GAP = 4, GROUP = 2 * BAR + GAP + 12, NUM = 58;
  const height = ok.length * GROUP + 26;
  const scale = (v: number) => ((W - LABEL - NUM) * v) / max;
  return (
    <figure className="compare-chart" data-measure={measure}>
      <figcaption>{title} <span className="muted chart-start" data-field="start">({start})</span></figcaption>
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-label={title + ': ' + ok.map((r) => t('compare.chartRow', { mode: t(`compare.mode.${r.mode}`), cold: fmt(val(r.cold!)), warm: fmt(val(r.warm!)) })).join('; ')}>
        {ok.map((r, i) => {
          const y = i * GROUP;
          return (
            <g key={r.mode} data-mode={r.mode}>
              <text x={LABEL - 6} y={y + BAR + 3} textAnchor="end" className="chart-label">{t(`compare.mode.${r.mode}`)}</text>
              {(['cold', 'warm'] as const).map((w, j) => {
                const v = val(r[w]!);
                const by = y + j * (BAR + GAP);
                return (
                  <g key={w} className={`bar-${w}`}>
                    <rect x={LABEL} y={by} width={Math.max(1, scale(v))} height={BAR} rx={2} />
                    <text x={LABEL + scale(v) + 4} y={by + BAR - 3} className="chart-num" data-field={`${measure}-${w}`}>{fmt(v)}</text>
                  </g>
                );
              })}
            </g>
          );
        })}
        <g transform={`translate(${LABEL}, ${ok.length * GROUP + 8})`} className="chart-legend">
          <rect width={12} height={10} className="bar-cold-swatch" /><text x={16} y={9}>{t('compare.cold')}</text>
          <rect x={90} width={12} height={10} className="bar-warm-swatch" /><text x={106} y={9}>{t('compare.warm')}</text>
        </g>
      </svg>
    </figure>
  );
}

/* Under the charts: why each mode is near or far from native, said from the counters of
 * its warm access (the references of each dimension) and its cold one (the exits). */
export function compareWhy(r: CompareRow, native: CompareRow | undefined): { key: string; values: Record<string, number> }[] {
  const w = r.warm!, c = r.cold!;
  const base = { refs: w.memory_refs, native: native?.warm?.memory_refs ?? 0, g: w.guest_refs, n: w.nested_refs };
  const out: { key: string; values: Record<string, number> }[] = [];
  if (r.mode === 'ept' || r.mode === 'npt') {
    const gpas = w.guest_refs + 1;
    out.push({ key: 'compare.why.nested', values: { ...base, levels: Math.round(w.nested_refs / gpas) } });
  } else if (r.mode === 'flat') out.push({ key: 'compare.why.flat', values: { ...base, gpas: w.nested_refs } });
  else if (r.mode === 'shadow') out.push({ key: 'compare.why.shadow', values: base });
  else if (r.mode === 'agile') {
    const shadow = w.steps.filter((s) => s.kind === 'read' && isShadowStep(s, 'agile')).length;
    out.push({ key: 'compare.why.agile', values: { ...base, shadow } });
  }
  out.push(c.exits > 0
    ? { key: 'compare.why.coldExits', values: { exits: c.exits, each: COST.perExit } }
    : { key: 'compare.why.coldNone', values: {} });
  return out;
}

function CompareWhy({ rows, t, fmt }: { rows: CompareRow[]; t: (k: string, v?: Record<string, unknown>) => string; fmt: (n: number) => string }) {
  const native = rows.find((r) => r.mode === 'native');
  return (
    <ul className="compare-why small" data-testid="compare-why">
      {rows.filter((r) => r.mode !== 'native').map((r) => {
        const parts = compareWhy(r, native).map(({ key, values }) => {
          const v: Record<string, unknown> = Object.fromEntries(Object.entries(values).map(([k, x]) => [k, fmt(x)]));
          if (key === 'compare.why.coldExits') v.kinds = exitKindsWords(exitKinds(r.cold!, r.mode), t);
          return t(key, v);
        });
        return <li key={r.mode} data-mode={r.mode}>{t('compare.why.item', { mode: t(`compare.mode.${r.mode}`), text: parts.join(t('compare.why.sep')) })}</li>;
      })}
    </ul>
  );
}

export function CompareView({ engine, input, onInput, onOpen }: CompareProps) {
  const { t, i18n } = useTranslation('views');
  const [draft, setDraft] = useState(input);
  const problem = checkCompareInput(input);
  const rows = useMemo(() => (problem ? [] : runCompare(engine, input)), [engine, input, problem]);
  const ok = rows.filter((r) => r.cold && r.warm);
  const fmt = (n: number) => n.toLocaleString(i18n.language);
  const tables: Tables = input.tables ?? DEFAULT_TABLES;
  const start = t(`compare.tables.${tables}`);
  const [mine, setMine] = useState<MachineCost | null>(null);
  const [mineError, setMineError] = useState<string | null>(null);
  const loadMine = async (f: File | undefined) => {
    if (!f) return;
    try {
      setMine(machineFromResult(JSON.parse(await f.text()) as HwResult));
      setMineError(null);
    } catch (e) {
      setMine(null);
      setMineError((e as Error).message);
    }
  };
  const order = (w: 'cold' | 'warm', m: Measure) =>
    ordering(ok.map((r) => ({ name: t(`compare.mode.${r.mode}`), value: value(r[w]!, m) })), fmt);
  const exitsCell = (a: AccessResult, mode: string, field: string) => {
    const kinds = exitKindsWords(exitKinds(a, mode), t);
    return <td><span data-field={field}>{a.exits}</span>{kinds && <span className="muted" data-field={`${field}-kinds`}> ({kinds})</span>}</td>;
  };
  return (
    <div className="compare" data-testid="compare-view">
      <form className="compare-form" onSubmit={(e) => { e.preventDefault(); onInput?.(draft); }}>
        <label><Term id="gva" /> <input value={draft.gva} onChange={(e) => setDraft({ ...draft, gva: e.target.value })} spellCheck={false} /></label>
        <label>{t('compare.mapsTo')} <input value={draft.gpa} onChange={(e) => setDraft({ ...draft, gpa: e.target.value })} spellCheck={false} /></label>
        <label>{t('compare.op')} <select value={draft.op} onChange={(e) => setDraft({ ...draft, op: e.target.value as Op })}>
          {(['read', 'write', 'fetch'] as const).map((o) => <option key={o} value={o}>{t(`op.${o}`)}</option>)}</select></label>
        <label>{t('compare.tables.label')} <select value={draft.tables ?? DEFAULT_TABLES} data-field="tables" onChange={(e) => setDraft({ ...draft, tables: e.target.value as Tables })}>
          {TABLES.map((x) => <option key={x} value={x}>{t(`compare.tables.${x}`)}</option>)}</select></label>
        <label className="check"><input type="checkbox" checked={draft.user} onChange={(e) => setDraft({ ...draft, user: e.target.checked })} /> {t('compare.user')}</label>
        <button type="submit">{t('compare.submit')}</button>
      </form>
      {problem && <p className="error" role="alert">{t(`compare.problem.${problem}`)}</p>}
      <p className="muted"><Trans t={t} i18nKey="compare.note" components={{ 1: <code /> }} /> <span data-testid="compare-start">{t(`compare.tables.about.${tables}`)}</span></p>
      <div className="table-scroll" tabIndex={0} role="region" aria-label={t('compare.tableLabel')}>
        <table className="comparetable">
          <thead>
            <tr>
              <th rowSpan={2} scope="col">{t('compare.col.mode')}</th>
              <th colSpan={3} scope="colgroup">{t('compare.col.refs')}</th>
              <th colSpan={2} scope="colgroup">{t('compare.col.exits')}</th>
              <th rowSpan={2} scope="col">{t('compare.col.outcome')}</th>
              <th rowSpan={2} scope="col">{t('compare.col.hpa')}</th>
              <th rowSpan={2} scope="col">{t('compare.col.walk')}</th>
            </tr>
            <tr>
              <th scope="col">{t('compare.cold')}</th><th scope="col">{t('compare.warm')}</th><th scope="col">{t('compare.col.split')}</th>
              <th scope="col">{t('compare.cold')}</th><th scope="col">{t('compare.warm')}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.mode} data-mode={r.mode}>
                <th scope="row">{t(`compare.mode.${r.mode}`)}</th>
                {r.cold && r.warm ? (
                  <>
                    <td data-field="refs">{r.cold.memory_refs}</td>
                    <td data-field="refs-warm"><b>{r.warm.memory_refs}</b></td>
                    <td data-field="split">{refsSplit(r.warm, r.mode, t)}</td>
                    {exitsCell(r.cold, r.mode, 'exits')}
                    {exitsCell(r.warm, r.mode, 'exits-warm')}
                    <td>{outcomeWords(r.warm.outcome, t)}</td>
                    <td><code>{r.warm.hpa ?? '–'}</code></td>
                    <td className="walk-buttons">
                      <button type="button" onClick={() => onOpen?.(r.json, COLD)} aria-label={t('compare.walkOf', { mode: t(`compare.mode.${r.mode}`), which: t('compare.cold') })}>{t('compare.cold')}</button>{' '}
                      <button type="button" onClick={() => onOpen?.(r.json, WARM)} aria-label={t('compare.walkOf', { mode: t(`compare.mode.${r.mode}`), which: t('compare.warm') })}>{t('compare.warm')}</button>
                    </td>
                  </>
                ) : <td colSpan={8} className="error">{r.error}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {ok.length > 0 && (
        <>
          <p className="fair" data-testid="compare-fair">{t('compare.fair')}</p>
          <div className="compare-charts">
            <BarChart rows={rows} measure="refs" title={t('compare.chart.refs')} lang={i18n.language} start={start} />
            <BarChart rows={rows} measure="cycles" title={t('compare.chart.cycles')} lang={i18n.language} start={start} />
            {mine && <BarChart rows={rows} measure="cycles-mine" lang={i18n.language} start={start} mine={mine}
              title={t('compare.mine.chart', { cpu: mine.cpu || t('compare.mine.yours'), exit: (mine.exit ?? COST.perExit).toLocaleString(i18n.language), ref: (mine.ref ?? COST.perRef).toLocaleString(i18n.language) })} />}
          </div>
          <p className="small" data-testid="compare-mine">
            <label className="filebtn">{t('compare.mine.load')} <input type="file" accept=".json,application/json" data-testid="compare-mine-file"
              onChange={(e) => { void loadMine(e.target.files?.[0]); e.target.value = ''; }} /></label>{' '}
            {mine && <span data-testid="compare-mine-costs">{t('compare.mine.costs', {
              exit: mine.exit === null ? t('compare.mine.noExit', { n: COST.perExit.toLocaleString(i18n.language) }) : t('compare.mine.exit', { n: mine.exit.toLocaleString(i18n.language), from: mine.exitFrom }),
              ref: mine.ref === null ? t('compare.mine.noRef', { n: COST.perRef }) : t('compare.mine.ref', { n: mine.ref.toLocaleString(i18n.language), from: mine.refFrom }),
            })}</span>}
            {mineError && <span className="error" role="alert">{t('compare.mine.refused', { error: mineError })}</span>}
          </p>
          <p className="ordering" data-testid="compare-ordering">
            {t('compare.orderRefs', { warm: order('warm', 'refs'), cold: order('cold', 'refs') })}{' '}
            {t('compare.orderCycles', { warm: order('warm', 'cycles'), cold: order('cold', 'cycles') })}
          </p>
          <CompareWhy rows={ok} t={t} fmt={fmt} />
        </>
      )}
      <YourProgram where="compare" />
    </div>
  );
}

export default CompareView;
