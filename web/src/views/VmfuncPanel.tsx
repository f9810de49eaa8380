/* EPTP switching as the walk view shows it for a scenario with VMFUNC or VMCALL: the EPTP
 * list (each entry's EPTP as the engine reads it, what that EPT maps, which guest pages it
 * reaches), the active index before and after the current event, the event in words (a
 * VMFUNC is a step of its own: one list read, no exit, no walk; a VMCALL an exit with no
 * walk; a bad index exit 59), and the cost of a gate round trip against a VMCALL, published
 * and in the engine's cost model. Loaded only for such scenarios. */
import { useMemo } from 'react';
import { useTranslation } from 'react-i18next';
import type { AccessResult, NestedMapping, Result, Scenario } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import figures from '../../../wasm-core/data/published-figures.json';
import { COST } from '../model/compare';
import { ratio1, VMFUNC_SPEEDUP } from '../model/figures';
import { hex, hexToBig, outcomeWords } from '../model/decode';
import { Term } from './Term';

export interface VmfuncPanelProps {
  engine: Pick<Vmsim, 'run'>;
  scenarioText: string;
  result: Result;
  accessIndex: number;
  step: number;
}

interface ListEntry { index: number; eptp: string | null; valid: boolean; maps: string; reach: { gva: string; outcome: string }[] }

const SHOWN_ENTRIES = 8;

/* The nested mappings of one EPT as ranges: "gpa 0x0-0x2fffff -> hpa 0x80000000 (rwx)". */
function rangeWords(maps: NestedMapping[], t: (k: string, o?: Record<string, unknown>) => string): string {
  return maps.map((m) => {
    const page: Record<string, bigint> = { '4K': 1n << 12n, '2M': 1n << 21n, '1G': 1n << 30n };
    const size = (page[m.page ?? '4K'] ?? 1n << 12n) * BigInt(m.pages ?? 1);
    const gpa = hexToBig(m.gpa);
    return t('vmfunc.range', { from: m.gpa, to: hex(gpa + size - 1n), hpa: m.hpa, perm: m.perm ?? 'rwx' });
  }).join('; ');
}

/* Each list entry probed with the engine: VMFUNC to it, then a read of every guest mapping. */
function probeList(engine: Pick<Vmsim, 'run'>, s: Scenario, t: (k: string, o?: Record<string, unknown>) => string): ListEntry[] {
  const n = Math.min((s.nested?.eptp_list?.length ?? 0) + 1, SHOWN_ENTRIES);
  const gvas = (s.guest.mappings ?? []).map((m) => m.gva);
  const out: ListEntry[] = [];
  for (let i = 0; i < n; i++) {
    const probe: Scenario = { ...s, caches: undefined, accesses: [{ vmfunc: i }, ...gvas.map((gva) => ({ gva, op: 'read' as const }))] };
    delete probe.caches;
    const r = engine.run(probe);
    const list = r.accesses[0].steps.find((x) => x.kind === 'eptp_list');
    const maps = i === 0 ? s.nested?.mappings ?? [] : s.nested?.eptp_list?.[i - 1]?.mappings ?? [];
    out.push({
      index: i, eptp: list?.entry ?? null, valid: r.accesses[0].outcome === 'ok', maps: rangeWords(maps, t),
      reach: gvas.map((gva, j) => ({ gva, outcome: r.accesses[j + 1].outcome })),
    });
  }
  return out;
}

/* The current event in words, from the engine's result and the scenario's request. */
function eventWords(a: AccessResult, req: Record<string, unknown> | undefined, before: number, s: Scenario | null,
  t: (k: string, o?: Record<string, unknown>) => string): string | null {
  if (a.op === 'vmcall') return t('vmfunc.event.vmcall');
  if (a.op !== 'vmfunc') return null;
  const n = typeof req?.vmfunc === 'number' ? req.vmfunc : a.steps[0]?.index ?? 0;
  const fn = typeof req?.function === 'number' ? req.function : 0;
  const reason = (a.fault as { reason?: string } | null)?.reason;
  if (a.outcome === 'ok') {
    const flush = s?.caches?.flush_on_eptp_switch ? ' ' + t('vmfunc.event.flush') : '';
    return t('vmfunc.event.ok', { n, eptp: a.steps[0]?.entry ?? '', before }) + flush;
  }
  if (a.outcome === 'invalid_opcode') return t('vmfunc.event.ud');
  if (reason === 'function_disabled') return t('vmfunc.event.function', { fn, index: before });
  if (reason === 'index_out_of_range') return t('vmfunc.event.range', { n, index: before });
  const entry = a.steps[0]?.entry ?? '0x0';
  return t('vmfunc.event.invalid', { n, entry, checks: eptpChecks(entry, s?.nested?.levels ?? 4, s?.machine?.maxphyaddr ?? 46, t), index: before });
}

/* An EPTP against the rules the CPU checks (the engine's eptp_valid: memory type 0 or 6, walk
 * length = the machine's levels, bits 11:7 and those above MAXPHYADDR clear), each with the
 * value it holds: what makes this one invalid, in words. */
export function eptpChecks(value: string, levels: number, maxphyaddr: number, t: (k: string, o?: Record<string, unknown>) => string): string {
  const v = hexToBig(value);
  const mt = Number(v & 7n);
  const len = Number((v >> 3n) & 7n) + 1;
  const reserved = v & ((0x1fn << 7n) | (((1n << 64n) - 1n) ^ ((1n << BigInt(maxphyaddr)) - 1n)));
  const bits: number[] = [];
  for (let b = 0; b < 64; b++) if ((reserved >> BigInt(b)) & 1n) bits.push(b);
  const name = t(['0', '1', '4', '5', '6'].includes(String(mt)) ? `flag.mt.${mt}` : 'flag.mt.other');
  return [
    t(mt === 0 || mt === 6 ? 'vmfunc.event.check.mtOk' : 'vmfunc.event.check.mtBad', { mt, name }),
    t(len === levels ? 'vmfunc.event.check.lenOk' : 'vmfunc.event.check.lenBad', { len, levels }),
    bits.length ? t('vmfunc.event.check.resBad', { bits: bits.join(', ') }) : t('vmfunc.event.check.resOk'),
  ].join(t('vmfunc.event.check.sep'));
}

export function VmfuncPanel({ engine, scenarioText, result, accessIndex, step }: VmfuncPanelProps) {
  const { t, i18n } = useTranslation('views');
  const scenario = useMemo((): Scenario | null => { try { return JSON.parse(scenarioText) as Scenario; } catch { return null; } }, [scenarioText]);
  const enabled = result.mode === 'ept' && !!scenario?.nested?.vmfunc;
  const list = useMemo(() => {
    if (!enabled || !scenario) return { entries: [] as ListEntry[], error: null as string | null };
    try { return { entries: probeList(engine, scenario, t), error: null }; } catch (e) { return { entries: [], error: (e as Error).message }; }
  }, [engine, scenario, enabled, t]);
  const a = result.accesses[accessIndex];
  const before = accessIndex > 0 ? result.accesses[accessIndex - 1].eptp_index ?? 0 : 0;
  const done = step >= a.steps.length;
  const after = a.eptp_index ?? 0;
  const current = done ? after : before;
  const words = eventWords(a, scenario?.accesses[accessIndex] as Record<string, unknown> | undefined, before, scenario, t);
  const pub = figures.vmfunc_vs_vmcall.round_trip_ns;
  const model = { gate: 2 * COST.perVmfunc, vmcall: COST.perExit };
  const fmt = (n: number, d = 0) => n.toLocaleString(i18n.language, { maximumFractionDigits: d, minimumFractionDigits: d });
  const gvas = list.entries[0]?.reach.map((r) => r.gva) ?? [];
  const listed = (scenario?.nested?.eptp_list?.length ?? 0) + 1;
  return (
    <section className="vmfunc" aria-label={t('vmfunc.title')} data-testid="vmfunc-panel">
      <h3><Term id="vmfunc" /> · {t('vmfunc.title')}</h3>
      {words && <p className="vmfunc-event" data-field="event" data-op={a.op}>{words}</p>}
      {!enabled && <p className="muted">{t(result.mode === 'ept' ? 'vmfunc.disabled' : 'vmfunc.notEpt')}</p>}
      {enabled && (
        <>
          <p data-field="current">{t('vmfunc.current', { index: current })}
            {before !== after ? ' ' + t(done ? 'vmfunc.switched' : 'vmfunc.willSwitch', { from: before, to: after }) : ''}</p>
          {list.error && <p className="error">{t('vmfunc.probeFailed')} <span lang="en">{list.error}</span></p>}
          <div className="table-scroll" tabIndex={0} role="region" aria-label={t('vmfunc.list')}>
            <table className="eptp-list">
              <caption>{t('vmfunc.list')}</caption>
              <thead>
                <tr>
                  <th scope="col">{t('vmfunc.col.index')}</th><th scope="col"><Term id="eptp" /></th><th scope="col">{t('vmfunc.col.maps')}</th>
                  {gvas.map((g) => <th scope="col" key={g}>{t('vmfunc.col.reads', { gva: g })}</th>)}
                </tr>
              </thead>
              <tbody>
                {list.entries.map((e) => (
                  <tr key={e.index} className={e.index === current ? 'current' : ''} aria-current={e.index === current ? 'true' : undefined} data-index={e.index}>
                    <th scope="row">{e.index}{e.index === current ? <> <span className="badge-current">{t('vmfunc.active')}</span></> : null}</th>
                    <td><code>{e.eptp}</code>{e.valid ? '' : <> {t('vmfunc.invalid')}</>}</td>
                    <td>{e.maps}</td>
                    {e.reach.map((r) => <td key={r.gva} data-field="reach" data-value={r.outcome} className={r.outcome === 'ok' ? 'ok-text' : 'bad-text'}>{r.outcome === 'ok' ? t('vmfunc.reachOk') : outcomeWords(r.outcome, t)}</td>)}
                  </tr>
                ))}
                {listed < 512 && (
                  <tr className="empty-entries"><th scope="row">{listed}–511</th><td colSpan={2 + gvas.length}>{t('vmfunc.empty')}</td></tr>
                )}
              </tbody>
            </table>
          </div>
          <p className="muted">{t('vmfunc.tags')}</p>
        </>
      )}
      <div className="table-scroll" tabIndex={0} role="region" aria-label={t('vmfunc.cost.title')}>
        <table className="vmfunc-cost" data-testid="vmfunc-cost">
          <caption>{t('vmfunc.cost.title')}</caption>
          <thead>
            <tr><th scope="col">{t('vmfunc.cost.path')}</th><th scope="col">{t('vmfunc.cost.published')}</th><th scope="col">{t('vmfunc.cost.model')}</th></tr>
          </thead>
          <tbody>
            <tr data-path="gate"><th scope="row">{t('vmfunc.cost.gate')}</th><td data-field="published">{t('vmfunc.cost.ns', { n: fmt(pub.vmfunc_gate) })}</td>
              <td data-field="model">{t('vmfunc.cost.cyclesGate', { n: fmt(model.gate), each: fmt(COST.perVmfunc, 1) })}</td></tr>
            <tr data-path="vmcall"><th scope="row">{t('vmfunc.cost.vmcall')}</th><td data-field="published">{t('vmfunc.cost.ns', { n: fmt(pub.vmcall) })}</td>
              <td data-field="model">{t('vmfunc.cost.cyclesExit', { n: fmt(model.vmcall) })}</td></tr>
            <tr data-path="ratio"><th scope="row">{t('vmfunc.cost.ratio')}</th><td data-field="published">{fmt(VMFUNC_SPEEDUP, 1)}×</td>
              <td data-field="model">{fmt(ratio1(model.vmcall, model.gate), 1)}×</td></tr>
          </tbody>
        </table>
      </div>
      <p className="fair">{t('vmfunc.cost.fair')}</p>
    </section>
  );
}

export default VmfuncPanel;
