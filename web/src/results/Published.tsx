/* The learner's results against the published figures (wasm-core/data/published-figures.json):
 * cpuid exits, memtouch vs the EPT on/off blog, the pointer-chase curve, ELISA VMFUNC vs
 * VMCALL and the swFNPT SPEC tables. */
import { useEffect, useRef } from 'react';
import figures from '../../../wasm-core/data/published-figures.json';
import { curveChart, dotChart, groupedBars, type DotRow } from './charts';
import { ptrchaseCurve, summarize } from './extract.mjs';
import type { Stored } from './store';

function Svg({ draw, id }: { draw: (el: SVGSVGElement) => void; id: string }) {
  const ref = useRef<SVGSVGElement>(null);
  useEffect(() => { if (ref.current) draw(ref.current); });
  return <svg ref={ref} className="chart" data-chart={id} />;
}

const src = (k: string) => (figures.sources as Record<string, string>)[k];

export function Published({ mine }: { mine: Stored[] }) {
  const cp = figures.cpuid_exit_cycles;
  const cpuidRows: DotRow[] = [];
  for (const [k, runs] of Object.entries(cp.runs)) {
    for (const r of runs as { min: number; avg: number }[]) {
      cpuidRows.push({ group: `${k.replace(/_/g, ' ')} (avg)`, label: 'a published run', value: r.avg });
      cpuidRows.push({ group: `${k.replace(/_/g, ' ')} (min)`, label: 'a published run', value: r.min });
    }
  }
  mine.forEach((m, i) => {
    const b = (m.result.benchmarks ?? []).find((x: { name: string }) => x.name === 'cpuid_exit');
    const c = b?.cases?.find((x: { name: string }) => x.name === 'cpuid_leaf0');
    const met = c?.metrics?.[0];
    if (met && met.unit === 'tsc_cycles') {
      cpuidRows.push({ group: `yours: median`, label: m.label, value: met.median, mine: true, series: i });
      cpuidRows.push({ group: `yours: min`, label: m.label, value: met.min, mine: true, series: i });
    }
  });

  const ept = figures.ept_on_off.touch_1gib_every_4k_page_seconds;
  const memRows: DotRow[] = [
    { group: 'blog: EPT off (real)', label: 'Xeon E5-2686 v4 guest', value: ept.ept_off.real },
    { group: 'blog: EPT on (real)', label: 'Xeon E5-2686 v4 guest', value: ept.ept_on.real },
  ];
  mine.forEach((m, i) => {
    const s = summarize(m.result).metrics;
    const perGiB = (ns: number | null) => (ns === null ? null : (ns * 262144) / 1e9);
    const add = (g: string, v: number | null) => { if (v !== null) memRows.push({ group: g, label: m.label, value: v, mine: true, series: i }); };
    add('yours: 4 KiB first touch', perGiB(s.memtouch_4k_first_ns));
    add('yours: 4 KiB second touch', perGiB(s.memtouch_4k_second_ns));
    add('yours: THP first touch', perGiB(s.memtouch_thp_first_ns));
  });

  const curves = mine.flatMap((m, i) => {
    const pts = ptrchaseCurve(m.result);
    return (['4k', 'thp'] as const).map((p) => ({ name: `${m.label} ${p === '4k' ? '4 KiB' : 'THP'}`, series: i, dashed: p === 'thp', points: pts.filter((q) => q.pages === p).map((q) => ({ x: q.mib, y: q.ns })) })).filter((l) => l.points.length);
  });

  const vf = figures.vmfunc_vs_vmcall;
  const vmRows: DotRow[] = [
    { group: 'ELISA: VMCALL round trip', label: 'published', value: vf.round_trip_ns.vmcall },
    { group: 'ELISA: VMFUNC gate', label: 'published', value: vf.round_trip_ns.vmfunc_gate },
  ];
  mine.forEach((m, i) => { const v = summarize(m.result).metrics.vmcall_ns; if (v !== null) vmRows.push({ group: 'yours: vmcall_bench', label: m.label, value: v, mine: true, series: i }); });

  const fn = figures.flat_nested;
  const spec = (t: { rows: (string | number)[][]; columns: string[] }) => {
    const cols = t.columns.filter((c) => ['x86_sp', 'x86_ept', 'swfnpt'].includes(c));
    const names: Record<string, string> = { x86_sp: 'x86 shadow paging', x86_ept: 'x86 EPT', swfnpt: 'Sunway swFNPT' };
    return t.rows.map((r) => ({
      label: String(r[0]),
      values: cols.map((c) => {
        const v = r[t.columns.indexOf(c)];
        return typeof v === 'number' ? { series: names[c], value: v } : { series: names[c], value: Number(String(v).replace(/[^0-9.]/g, '')) || 0, text: String(v) };
      }),
    }));
  };

  return (
    <section className="published" aria-label="compared with published figures">
      <h3>cpuid exit cost</h3>
      <p className="muted">Grey circles: published runs ({cp.cpu}; {src(cp.source)}). Coloured diamonds: yours (cycles of <code>rdtsc; cpuid; rdtsc</code>).</p>
      <Svg id="cpuid" draw={(el) => dotChart(el, cpuidRows, { title: 'cpuid exit cycles: native, BitVisor, KVM, nested vs yours', unit: 'TSC cycles' })} />
      <h3>Touching 1 GiB, one write per 4 KiB page</h3>
      <p className="muted">The blog's whole-run times with EPT off and on ({src(figures.ept_on_off.source)}); yours scaled from the median per-page cost to 1 GiB. Second touch pays no fault; THP faults once per 2 MiB.</p>
      <Svg id="memtouch" draw={(el) => dotChart(el, memRows, { title: 'seconds to touch 1 GiB: EPT off/on blog vs yours', unit: 's per GiB' })} />
      <h3>Pointer chase: cost of a dependent load as the working set grows</h3>
      {curves.length ? <Svg id="ptrchase" draw={(el) => curveChart(el, curves, { title: 'pointer-chase curve' })} /> : <p className="muted">None of the selected results has a pointer-chase run.</p>}
      <h3>VMFUNC vs VMCALL (ELISA)</h3>
      <p className="muted">{src(vf.source)}: a VMFUNC EPTP switch is {vf.speedup}× faster than a VMCALL round trip. Yours appears when hw-lab ran with the vmcall_bench module.</p>
      <Svg id="elisa" draw={(el) => dotChart(el, vmRows, { title: 'hypercall round trip, ns', unit: 'ns' })} />
      <h3>swFNPT: SPEC CPU overhead in a VM</h3>
      <p className="muted">{src(fn.source)}. Overhead % against native; "&lt;1" as published.</p>
      <Svg id="spec2006" draw={(el) => groupedBars(el, spec(fn.spec2006_overhead_pct), { title: 'SPEC CPU2006 overhead %', unit: '% overhead' })} />
      <Svg id="spec2017" draw={(el) => groupedBars(el, spec(fn.spec2017_overhead_pct), { title: 'SPEC CPU2017 overhead %', unit: '% overhead' })} />
    </section>
  );
}
