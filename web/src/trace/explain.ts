/* Why each mode of a replay is near or far from native, said from the report's own
 * counters: the references a walk adds, what the nested TLB answered and how much of the
 * program's memory its entries cover with the host pages chosen, and the exits with
 * what they cost. Each sentence is a translation key with its values (locales'
 * trace.json, "why"), so the page says it in every language. */
import type { ReplayModeResult, ReplayReport } from '../../../wasm-core/js/replay';

export interface Reason {
  key: string;
  values: Record<string, string | number>;
}
export interface ModeWhy {
  mode: ReplayModeResult['mode'];
  /** The opening: references per access against native's. */
  head: Reason;
  /** What explains it, in order. */
  reasons: Reason[];
}

const MIB = 1024 * 1024;

const round = (n: number, digits: number) => Number(n.toFixed(digits));

export function explainReplay(report: ReplayReport): ModeWhy[] {
  const native = report.modes.find((m) => m.mode === 'native');
  const m = report.machine;
  const pages = m.guest_4k_pages + 512 * m.guest_2m_pages;
  const mib = round((pages * 4096) / MIB, 1);
  const hostPage = m.host_pages === '2m' ? 2 * MIB : 4096;
  // host pages the touched memory and the guest's tables lie on (at least)
  const hostEntries = Math.ceil((pages * 4096) / hostPage) + (m.host_pages === '2m' ? 1 : m.guest_table_frames);
  const out: ModeWhy[] = [];
  for (const r of report.modes) {
    if (r.mode === 'native') continue;
    const reasons: Reason[] = [];
    const nativeRefs = native ? native.refs_per_access : null;
    const head: Reason = nativeRefs === null
      ? { key: 'why.headAlone', values: { refs: r.refs_per_access.toFixed(3) } }
      : {
          key: Math.abs(r.refs_per_access - nativeRefs) < 0.0005 ? 'why.headSame' : 'why.headMore',
          values: {
            refs: r.refs_per_access.toFixed(3),
            native: nativeRefs.toFixed(3),
            extra: round((r.refs - (native?.refs ?? 0)) / Math.max(1, r.walks), 2),
          },
        };
    if (r.mode === 'ept' || r.mode === 'npt' || r.mode === 'flat') {
      const walks = Math.max(1, r.walks);
      const nper = r.nested_refs / walks;
      if (m.ntlb_entries > 0 && r.ntlb_hits > 0) {
        // the nested TLB "covers" the program when almost no walk reads the nested tables
        const covered = nper < 0.05;
        reasons.push({
          key: r.mode === 'flat' ? (covered ? 'why.flatNtlbFits' : 'why.flatNtlbMisses') : covered ? 'why.ntlbFits' : 'why.ntlbMisses',
          values: {
            hits: r.ntlb_hits, per: round(r.ntlb_hits / walks, 2), nrefs: r.nested_refs, nper: round(nper, 2),
            // a flat table maps 4 KiB frames whatever the host pages (replay.md, "The machine")
            mib, entries: r.mode === 'flat' ? pages + m.guest_table_frames : hostEntries, size: m.ntlb_entries,
            host: m.host_pages === '2m' && r.mode !== 'flat' ? '2 MiB' : '4 KiB',
          },
        });
      } else if (r.nested_refs > 0) {
        reasons.push({ key: r.mode === 'flat' ? 'why.flatNoNtlb' : 'why.noNtlb', values: { per: round(nper, 2) } });
      }
    }
    if (r.mode === 'shadow' && r.exits === 0) reasons.push({ key: 'why.shadowLikeNative', values: {} });
    // where its references found their entries, and what they cost against native's
    const w = r.refs_by_where;
    const inCaches = w ? w.l1 + w.l2 + w.llc + w.memory : 0;
    if (w && inCaches > 0 && r.ref_cycles !== undefined && native?.ref_cycles !== undefined) {
      const pct = (n: number) => round((100 * n) / inCaches, 1);
      // a machine without an LLC (the Sunway preset) is not told "0 % in the LLC"
      const byWhere = report.cost_model.ref_cycles_by_where;
      const noLlc = !!byWhere && byWhere.llc === undefined && w.llc === 0;
      reasons.push({
        key: noLlc ? 'why.whereNoLlc' : 'why.where',
        values: { l1: pct(w.l1), l2: pct(w.l2), llc: pct(w.llc), memory: pct(w.memory), cycles: r.ref_cycles, native: native.ref_cycles },
      });
    }
    if (r.exits > 0) {
      const exitCycles = r.exits * report.cost_model.cycles_per_exit;
      const kinds = Object.entries(r.exits_by_kind).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
      const [kind, n] = kinds[0];
      reasons.push({
        key: r.mode === 'shadow' && kind === 'hidden_page_fault' && n >= pages * 0.9 && report.machine.start === 'cold' && report.machine.tables === 'on-demand'
          ? 'why.exitsFirstTouch' : 'why.exits',
        values: {
          exits: r.exits, kind, n, pages,
          each: report.cost_model.cycles_per_exit,
          share: round((100 * exitCycles) / Math.max(1, r.cycles), 1),
        },
      });
    }
    out.push({ mode: r.mode, head, reasons });
  }
  return out;
}
