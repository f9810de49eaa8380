/* What the Results tab shows for the words of extract.mjs's summary (METRICS, GROUPS and
 * the hypervisor / EPT/NPT values), in the page's language. extract.mjs keeps English: the
 * class server stores its summary and writes it to the CSV export, so the page translates
 * those values when it shows them, never the data. */
import { englishFor, type T } from '../i18n';
import { GROUPS, METRICS, TDP_IN_VM, type GroupKey, type MetricKey } from './extract.mjs';

/** English from the results namespace, for code and tests that run without a language. */
export const tEn: T = englishFor('results');

export const metricLabel = (t: T, k: MetricKey) => t(`metrics.${k}`, { defaultValue: METRICS[k].label });
export const metricUnit = (t: T, k: MetricKey) => t(`units.${METRICS[k].unit}`, { defaultValue: METRICS[k].unit });
export const groupLabel = (t: T, k: GroupKey) => t(`groups.${k}`, { defaultValue: GROUPS[k] });

/** The summary's values (extract.mjs) as the page shows them; anything else is data. */
export const showCpu = (t: T, v: string | null | undefined) => (!v || v === 'unknown' ? t('summary.unknown') : v);
export function showHypervisor(t: T, v: string | null | undefined): string {
  if (!v || v === 'unknown') return t('summary.unknown');
  if (v === 'unknown VM') return t('summary.unknownVm');
  if (v === 'none (bare metal)') return t('summary.bareMetal');
  return v;
}
export function showTdp(t: T, v: string | null | undefined): string {
  if (!v || v === 'unknown') return t('summary.unknown');
  if (v === 'not visible') return t('summary.tdpHidden');
  if (v === 'shadow paging (kvm_pvm)') return t('summary.tdpPvm');
  if (v === TDP_IN_VM) return t('summary.tdpInVm');
  const m = /^(EPT|NPT|EPT\/NPT) (on|off)$/.exec(v);
  return m ? t(m[2] === 'on' ? 'summary.tdpOn' : 'summary.tdpOff', { name: m[1] }) : v;
}
/** The EPT/NPT setting with, for a run inside a VM, the KVM backend the probe found in the
 * VM (its own, for guests it would run: not what the measured memory ran under). */
export const showTdpAndBackend = (t: T, v: string | null | undefined, backend: string | null | undefined) =>
  (v === TDP_IN_VM && backend ? `${showTdp(t, v)} · ${t('summary.ownKvm', { backend })}` : showTdp(t, v));
export const showMode = (t: T, v: string | null | undefined) => (v === 'quick' || v === 'full' ? t(`summary.${v}`) : String(v ?? ''));
/** A value of one of the class view's grouping keys. */
export const showGroupValue = (t: T, k: GroupKey, v: string | null | undefined) =>
  k === 'cpu_model' ? showCpu(t, v) : k === 'hypervisor' ? showHypervisor(t, v) : showTdp(t, v);

/** Puts `raw` (a browser's or the server's own words, in English) where {{error}} stands in
 * a translated message; returns the text before and after it. */
const MARK = '\uE000';
export function around(t: T, key: string, values: Record<string, unknown> = {}): [string, string] {
  const s = t(key, { ...values, error: MARK });
  const i = s.indexOf(MARK);
  return i < 0 ? [s, ''] : [s.slice(0, i), s.slice(i + MARK.length)];
}
