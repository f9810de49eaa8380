/* The sentences under the replay's charts come from the report's counters. Fixtures:
 * vmsim replay of the pointer-chase example (8 MiB) with 2 MiB host pages, with 4 KiB
 * host pages, on the Sunway preset (no nested TLB), and with every mode's tables filled
 * on demand; the 256 MiB chase example on 4 KiB host pages. */
import { describe, expect, it } from 'vitest';
import i18n from 'i18next';
import type { ReplayReport } from '../../../wasm-core/js/replay';
import { explainReplay } from './explain';
import fixtures from './explain.fixtures.json';
import en from '../locales/en/trace.json';
import ja from '../locales/ja/trace.json';
import zh from '../locales/zh/trace.json';

const reports = fixtures as unknown as Record<'2m' | '4k' | 'sw' | 'od' | '256m-4k', ReplayReport>;
const byMode = (r: ReplayReport) => Object.fromEntries(explainReplay(r).map((w) => [w.mode, w]));

describe('explainReplay', () => {
  it('says the nested TLB covers an 8 MiB program on 2 MiB host pages', () => {
    const w = byMode(reports['2m']);
    expect(Object.keys(w)).toEqual(['ept', 'npt', 'shadow', 'flat']);
    expect(w.ept.head.key).toBe('why.headSame');
    expect(w.ept.reasons[0].key).toBe('why.ntlbFits');
    expect(w.ept.reasons[0].values.per).toBeGreaterThan(1.9);
    expect(w.ept.reasons[0].values.nrefs).toBeLessThan(20);
    expect(w.ept.reasons[0].values.mib).toBeCloseTo(8.3, 1);
    expect(w.ept.reasons[0].values.entries).toBeLessThanOrEqual(64);
  });
  it('says the walk goes through the nested tables on 4 KiB host pages', () => {
    const w = byMode(reports['4k']);
    expect(w.ept.head.key).toBe('why.headMore');
    expect(w.ept.reasons[0].key).toBe('why.ntlbMisses');
    expect(w.ept.reasons[0].values.nper).toBeGreaterThanOrEqual(1);
    expect(w.ept.reasons[0].values.entries).toBeGreaterThan(64);
  });
  it('says the 256 MiB chase on 4 KiB host pages walks the nested tables: the 2-D walk', () => {
    const r = reports['256m-4k'];
    const w = byMode(r);
    expect(r.trace.pages).toBeGreaterThan(65536);
    expect(w.ept.head.key).toBe('why.headMore');
    expect(w.ept.reasons[0].key).toBe('why.ntlbMisses');
    // about one 4 KiB host page per page touched, against the nested TLB's 64 entries
    expect(w.ept.reasons[0].values.entries).toBeGreaterThan(1000 * r.machine.ntlb_entries);
    expect(w.ept.reasons[0].values.mib).toBeGreaterThan(256);
    const ept = r.modes.find((m) => m.mode === 'ept')!;
    expect(ept.overhead_pct!).toBeGreaterThan(10);
  });
  it('names the first-touch exits of shadow paging when the tables fill on demand, and none when built', () => {
    const w = byMode(reports.od);
    const ex = w.shadow.reasons.find((r) => r.key === 'why.exitsFirstTouch')!;
    expect(ex.values.exits).toBe(reports.od.modes.find((m) => m.mode === 'shadow')!.exits);
    expect(ex.values.pages).toBe(reports.od.trace.pages);
    expect(byMode(reports['2m']).shadow.reasons.map((r) => r.key)).toEqual(['why.shadowLikeNative', 'why.where']);
  });
  it('says where the references found their entries and what they cost', () => {
    const r = reports['256m-4k'];
    const ept = r.modes.find((m) => m.mode === 'ept')!, native = r.modes.find((m) => m.mode === 'native')!;
    const why = byMode(r).ept.reasons.find((x) => x.key === 'why.where')!;
    const v = why.values as Record<string, number>;
    expect(v.l1 + v.l2 + v.llc + v.memory).toBeCloseTo(100, 0);
    expect(v.cycles).toBe(ept.ref_cycles);
    expect(v.native).toBe(native.ref_cycles);
    const w = ept.refs_by_where!;
    expect(v.memory).toBeCloseTo((100 * w.memory) / (w.l1 + w.l2 + w.llc + w.memory), 1);
  });
  it('does not tell of an LLC the machine lacks (the Sunway preset)', () => {
    const keys = Object.values(byMode(reports.sw)).flatMap((w) => w.reasons.map((r) => r.key));
    expect(keys).toContain('why.whereNoLlc');
    expect(keys).not.toContain('why.where');
    expect(Object.values(byMode(reports['2m'])).flatMap((w) => w.reasons.map((r) => r.key))).not.toContain('why.whereNoLlc');
  });
  it('says a flat walk with no nested TLB reads one entry per table and the data page', () => {
    const w = byMode(reports.sw);
    expect(w.flat.reasons[0].key).toBe('why.flatNoNtlb');
  });
  it('has every sentence in every language with the same placeholders', async () => {
    await i18n.init({ lng: 'en', resources: { en: { trace: en }, ja: { trace: ja }, zh: { trace: zh } }, ns: ['trace'], defaultNS: 'trace', interpolation: { escapeValue: false } });
    for (const r of Object.values(reports))
      for (const w of explainReplay(r))
        for (const reason of [w.head, ...w.reasons])
          for (const lng of ['en', 'ja', 'zh']) {
            const text = i18n.t(reason.key, { lng, ...reason.values, kinds: 'K' });
            expect(text, `${lng} ${reason.key}`).not.toMatch(/\{\{|why\./);
          }
    const keys = (o: object) => Object.keys((o as { why: object }).why).sort();
    expect(keys(ja)).toEqual(keys(en));
    expect(keys(zh)).toEqual(keys(en));
    const holes = (s: string) => (s.match(/\{\{\w+\}\}/g) ?? []).sort();
    for (const k of keys(en)) {
      const e = (en as { why: Record<string, string> }).why[k];
      expect(holes((ja as { why: Record<string, string> }).why[k]), k).toEqual(holes(e));
      expect(holes((zh as { why: Record<string, string> }).why[k]), k).toEqual(holes(e));
    }
  });
});
