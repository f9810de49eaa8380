/* The published figures as reference marks on the class chart (ClassPanel): for each
 * measure, the figures measured the same way or nearly (wasm-core/data/published-figures.json,
 * which the Published view also draws), each a labelled mark, and the note that says how
 * fair the comparison is and cites the source. A measure that nothing published compares
 * with gets no marks, and a note that says so. */
import figures from '../../../wasm-core/data/published-figures.json';
import type { T } from '../i18n';
import { fmt, type RefMark } from './charts';
import type { MetricKey } from './extract.mjs';
import { metricLabel } from './labels';

export interface References {
  marks: RefMark[];
  /** The note under the chart (results namespace), its values, and the source it cites. */
  note: string; values?: Record<string, unknown>; source?: string;
}

/** A 4 KiB page of the blog's 1 GiB. */
const PAGES_PER_GIB = 262144;

export function referencesFor(metric: MetricKey, t: T, locale?: string): References {
  const mark = (label: string, lo: number, hi: number, unit: string, src: string): RefMark => {
    // Published counts are whole numbers: written as they were published.
    const f = (v: number) => (Number.isInteger(v) ? v.toLocaleString(locale ?? 'en-US') : fmt(v, locale));
    const range = lo === hi ? f(lo) : `${f(lo)}–${f(hi)}`;
    const text = `${label} ${range}`;
    return { lo, hi, label: text, title: t('refs.markTitle', { mark: text, unit, src: t(`refs.src.${src}`) }) };
  };
  if (metric === 'cpuid_published_min_cycles') {
    // Each published set of runs (native, BitVisor, KVM, KVM on BitVisor): the lowest and the
    // highest of its runs' minimums.
    const cp = figures.cpuid_exit_cycles;
    const marks = Object.entries(cp.runs).map(([k, runs]) => {
      const mins = (runs as { min: number }[]).map((r) => r.min);
      const who = t(`published.cpuid.who.${k}`, { defaultValue: k.replace(/_/g, ' ') });
      return mark(t('published.cpuid.min', { who }), Math.min(...mins), Math.max(...mins), t('units.cycles'), 'qiita');
    });
    return { marks, note: 'refs.cpuidNote', source: cp.source };
  }
  if (metric === 'cpuid_exit_cycles') {
    return { marks: [], note: 'refs.fencedNote', values: { measure: metricLabel(t, 'cpuid_published_min_cycles') } };
  }
  if (metric === 'memtouch_4k_first_ns') {
    const e = figures.ept_on_off.touch_1gib_every_4k_page_seconds;
    const perPage = (s: number) => (s * 1e9) / PAGES_PER_GIB;
    return {
      marks: [
        mark(t('published.memtouch.eptOff'), perPage(e.ept_off.real), perPage(e.ept_off.real), t('units.ns'), 'blog'),
        mark(t('published.memtouch.eptOn'), perPage(e.ept_on.real), perPage(e.ept_on.real), t('units.ns'), 'blog'),
      ],
      note: 'refs.memtouchNote', source: figures.ept_on_off.source,
    };
  }
  if (metric === 'vmcall_ns') {
    const v = figures.vmfunc_vs_vmcall.round_trip_ns;
    return {
      marks: [
        mark(t('published.elisa.vmcall'), v.vmcall, v.vmcall, t('units.ns'), 'elisa'),
        mark(t('published.elisa.vmfunc'), v.vmfunc_gate, v.vmfunc_gate, t('units.ns'), 'elisa'),
      ],
      note: 'refs.vmcallNote', source: figures.vmfunc_vs_vmcall.source,
    };
  }
  return { marks: [], note: 'refs.none' };
}
