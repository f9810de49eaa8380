/* The learner's results against the published figures (wasm-core/data/published-figures.json):
 * cpuid exits, memtouch vs the EPT on/off blog, the pointer-chase curve, ELISA VMFUNC vs
 * VMCALL and the swFNPT SPEC tables. */
import { useEffect, useRef } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import figures from '../../../wasm-core/data/published-figures.json';
import type { T } from '../i18n';
import { VMFUNC_SPEEDUP } from '../model/figures';
import { curveChart, dotChart, groupedBars, type DotRow } from './charts';
import { cpuidExitEstimates, fencedCpuidCycles, ptrchaseCurve, publishedCpuidCycles, summarize, thpFirstPassPerGiB } from './extract.mjs';
import type { Stored } from './store';

function Svg({ draw, id }: { draw: (el: SVGSVGElement) => void; id: string }) {
  const ref = useRef<SVGSVGElement>(null);
  useEffect(() => { if (ref.current) draw(ref.current); });
  return <svg ref={ref} className="chart" data-chart={id} />;
}

/* The titles of the published works, as published (they are not translated; the rest of
 * each citation is, from sources.<key> in the results namespace). A source whose text no
 * longer contains its title is shown as the figures file gives it. */
const TITLES: Record<string, string> = {
  'qiita-bitvisor-cpuid-2019': 'Estimating VMM<->VM switch time on BitVisor',
  'ept-kvm-blog-2018': 'KVM (5) ~EPT (Extended Page Tables)~',
  'lkml-kvm-paravirt-2007': 'Re: [announce] [patch] KVM paravirtualization for Linux',
  'elisa-asplos-2023': 'ELISA: Exit-Less, Isolated, and Shared Access',
  'swfnpt-jcrd-2022': 'Software-Based Flat Nested Page Table in Sunway Architecture',
};

/** One citation: the work's title (lang="en") in a translated reference (also under the
 * class chart's reference marks). */
export function Source({ k, t }: { k: string; t: T }) {
  const { i18n } = useTranslation('results');
  const text = (figures.sources as Record<string, string>)[k] ?? k;
  const title = TITLES[k];
  if (!title || !text.includes(title) || !i18n.exists(`sources.${k}`, { ns: 'results' })) return <span lang="en">{text}</span>;
  return <Trans t={t} i18nKey={`sources.${k}`} components={{ title: <cite lang="en">{title}</cite> }} />;
}

export function Published({ mine }: { mine: Stored[] }) {
  const { t, i18n } = useTranslation('results');
  const words = { t, locale: i18n.language };
  const src = (k: string) => <Source k={k} t={t} />;

  const cp = figures.cpuid_exit_cycles;
  const cpuidRows: DotRow[] = [];
  for (const [k, runs] of Object.entries(cp.runs)) {
    const who = t(`published.cpuid.who.${k}`, { defaultValue: k.replace(/_/g, ' ') });
    for (const r of runs as { min: number; avg: number }[]) {
      cpuidRows.push({ group: t('published.cpuid.avg', { who }), label: t('published.cpuid.run'), value: r.avg });
      cpuidRows.push({ group: t('published.cpuid.min', { who }), label: t('published.cpuid.run'), value: r.min });
    }
  }
  // Yours, measured the published way (unfenced): its min and mean sit beside the published
  // min and avg. A result from hw-lab before that method has only the fenced figure, which
  // reads higher by the fences' cost: it is shown apart, never in the published rows.
  mine.forEach((m, i) => {
    const pub = publishedCpuidCycles(m.result);
    if (pub) {
      cpuidRows.push({ group: t('published.cpuid.yoursPublishedAvg'), label: m.label, value: pub.mean, mine: true, series: i });
      cpuidRows.push({ group: t('published.cpuid.yoursPublishedMin'), label: m.label, value: pub.min, mine: true, series: i });
      return;
    }
    const fenced = fencedCpuidCycles(m.result);
    if (fenced) cpuidRows.push({ group: t('published.cpuid.yoursFencedMin'), label: m.label, value: fenced.min, mine: true, series: i });
  });
  // Exit + entry: the article subtracts its native min from each VM min; so does the page when
  // a bare-metal result and a VM result on the same CPU model are both selected.
  const estimates = cpuidExitEstimates(mine.map((m) => ({ label: m.label, result: m.result })));
  const estRows: DotRow[] = Object.entries(cp.estimated_switch_cycles as Record<string, number>).map(([k, v]) => ({
    group: t('published.cpuid.estPublished'), label: t(`published.cpuid.who.${k}`, { defaultValue: k.replace(/_/g, ' ') }), value: v,
  }));
  estimates.forEach((e, i) => estRows.push({ group: t('published.cpuid.estYours'), label: t('published.cpuid.estPair', { vm: e.vm, host: e.host }), value: e.cycles, mine: true, series: i }));

  const ept = figures.ept_on_off.touch_1gib_every_4k_page_seconds;
  const memRows: DotRow[] = [
    { group: t('published.memtouch.eptOff'), label: t('published.memtouch.guest'), value: ept.ept_off.real },
    { group: t('published.memtouch.eptOn'), label: t('published.memtouch.guest'), value: ept.ept_on.real },
  ];
  mine.forEach((m, i) => {
    const s = summarize(m.result).metrics;
    const perGiB = (ns: number | null) => (ns === null ? null : (ns * 262144) / 1e9);
    const add = (g: string, v: number | null) => { if (v !== null) memRows.push({ group: g, label: m.label, value: v, mine: true, series: i }); };
    add(t('published.memtouch.first4k'), perGiB(s.memtouch_4k_first_ns));
    add(t('published.memtouch.second4k'), perGiB(s.memtouch_4k_second_ns));
    add(t('published.memtouch.thpFirst'), thpFirstPassPerGiB(m.result));
  });

  const curves = mine.flatMap((m, i) => {
    const pts = ptrchaseCurve(m.result);
    return [...new Set(pts.map((q) => q.pages))].map((p) => ({ name: `${m.label} ${p === 'thp' ? 'THP' : `${p.slice(0, -1)} KiB`}`, series: i, dashed: p === 'thp', points: pts.filter((q) => q.pages === p).map((q) => ({ x: q.mib, y: q.ns })) })).filter((l) => l.points.length);
  });

  const vf = figures.vmfunc_vs_vmcall;
  const vmRows: DotRow[] = [
    { group: t('published.elisa.vmcall'), label: t('published.elisa.published'), value: vf.round_trip_ns.vmcall },
    { group: t('published.elisa.vmfunc'), label: t('published.elisa.published'), value: vf.round_trip_ns.vmfunc_gate },
  ];
  mine.forEach((m, i) => { const v = summarize(m.result).metrics.vmcall_ns; if (v !== null) vmRows.push({ group: t('published.elisa.yours'), label: m.label, value: v, mine: true, series: i }); });

  const fn = figures.flat_nested;
  const spec = (table: { rows: (string | number)[][]; columns: string[] }) => {
    const cols = table.columns.filter((c) => ['x86_sp', 'x86_ept', 'swfnpt'].includes(c));
    const name = (c: string) => t(`published.spec.series.${c}`);
    return table.rows.map((r) => ({
      label: String(r[0]),
      values: cols.map((c) => {
        const v = r[table.columns.indexOf(c)];
        return typeof v === 'number' ? { series: name(c), value: v } : { series: name(c), value: Number(String(v).replace(/[^0-9.]/g, '')) || 0, text: String(v) };
      }),
    }));
  };

  return (
    <section className="published" aria-label={t('published.aria')}>
      <h3>{t('published.cpuid.heading')}</h3>
      <p className="muted"><Trans t={t} i18nKey="published.cpuid.note" values={{ cpu: cp.cpu }} components={{ src: src(cp.source), code: <code /> }} /></p>
      <Svg id="cpuid" draw={(el) => dotChart(el, cpuidRows, { title: t('published.cpuid.title'), unit: t('published.cpuid.unit'), ...words })} />
      <p className="muted" data-testid="cpuid-estimate">{estimates.length ? t('published.cpuid.estNote') : t('published.cpuid.estHint')}</p>
      <Svg id="cpuid-estimate" draw={(el) => dotChart(el, estRows, { title: t('published.cpuid.estTitle'), unit: t('published.cpuid.unit'), ...words })} />
      <h3>{t('published.memtouch.heading')}</h3>
      <p className="muted"><Trans t={t} i18nKey="published.memtouch.note" components={{ src: src(figures.ept_on_off.source) }} /></p>
      <Svg id="memtouch" draw={(el) => dotChart(el, memRows, { title: t('published.memtouch.title'), unit: t('published.memtouch.unit'), ...words })} />
      <h3>{t('published.ptrchase.heading')}</h3>
      {curves.length ? <Svg id="ptrchase" draw={(el) => curveChart(el, curves, { title: t('published.ptrchase.title'), ...words })} /> : <p className="muted">{t('published.ptrchase.none')}</p>}
      <h3>{t('published.elisa.heading')}</h3>
      <p className="muted"><Trans t={t} i18nKey="published.elisa.note" values={{ speedup: VMFUNC_SPEEDUP.toLocaleString(i18n.language, { minimumFractionDigits: 1 }) }} components={{ src: src(vf.source), code: <code /> }} /></p>
      <Svg id="elisa" draw={(el) => dotChart(el, vmRows, { title: t('published.elisa.title'), unit: 'ns', ...words })} />
      <h3>{t('published.spec.heading')}</h3>
      <p className="muted"><Trans t={t} i18nKey="published.spec.note" components={{ src: src(fn.source), lt1: <span>{'<1'}</span> }} /></p>
      <Svg id="spec2006" draw={(el) => groupedBars(el, spec(fn.spec2006_overhead_pct), { title: t('published.spec.title2006'), unit: t('published.spec.unit'), ...words })} />
      <Svg id="spec2017" draw={(el) => groupedBars(el, spec(fn.spec2017_overhead_pct), { title: t('published.spec.title2017'), unit: t('published.spec.unit'), ...words })} />
    </section>
  );
}
