// @vitest-environment jsdom
/* The sentences under Compare's charts come from the counters of each mode's warm access
 * (references by dimension) and cold one (exits), in every language. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import result from '../../../tests/server/fixtures/result-quick.json';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import { CompareView, compareWhy, runCompare } from './CompareView';
import { DEFAULT_COMPARE } from '../model/compare';
import i18n from '../i18n';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(() => { cleanup(); void i18n.changeLanguage('en'); });

describe('Compare: why each mode is near or far from native', () => {
  it('derives each sentence from the counters', () => {
    const rows = runCompare(engine, DEFAULT_COMPARE);
    const by = Object.fromEntries(rows.map((r) => [r.mode, r]));
    const ept = compareWhy(by.ept, by.native);
    expect(ept[0]).toEqual({ key: 'compare.why.nested', values: { refs: 24, native: 4, g: 4, n: 20, levels: 4 } });
    expect(ept[1].key).toBe('compare.why.coldNone');
    const flat = compareWhy(by.flat, by.native);
    expect(flat[0]).toEqual({ key: 'compare.why.flat', values: { refs: 9, native: 4, g: 4, n: 5, gpas: 5 } });
    // tables built in advance (the default): no mode exits, cold or warm
    expect(flat[1].key).toBe('compare.why.coldNone');
    const shadow = compareWhy(by.shadow, by.native);
    expect(shadow[0].key).toBe('compare.why.shadow');
    expect(shadow[1].key).toBe('compare.why.coldNone');
    const demand = Object.fromEntries(runCompare(engine, { ...DEFAULT_COMPARE, tables: 'on-demand' }).map((r) => [r.mode, r]));
    expect(compareWhy(demand.shadow, demand.native)[1]).toEqual({ key: 'compare.why.coldExits', values: { exits: 1, each: 1700 } });
  });
  it('shows them under the charts in English, Japanese and Chinese', async () => {
    for (const [lng, word] of [['en', 'nested walk'], ['ja', 'ネストウォーク'], ['zh', '嵌套遍历']] as const) {
      await i18n.changeLanguage(lng);
      render(<CompareView engine={engine} input={DEFAULT_COMPARE} />);
      const list = screen.getByTestId('compare-why');
      const items = list.querySelectorAll('li');
      expect([...items].map((li) => li.dataset.mode)).toEqual(['ept', 'npt', 'flat', 'shadow', 'agile']);
      expect(items[0].textContent).toContain(word);
      expect(list.textContent).not.toMatch(/\{\{|compare\.why/);
      cleanup();
    }
  });

  it('starts every mode the same way, said beside each chart', async () => {
    for (const [lng, built, demand] of [['en', 'built in advance', 'filled on demand'], ['ja', '前もって', '必要に応じて'], ['zh', '事先建好', '按需填充']] as const) {
      await i18n.changeLanguage(lng);
      for (const [tables, word] of [['built', built], ['on-demand', demand]] as const) {
        render(<CompareView engine={engine} input={{ ...DEFAULT_COMPARE, tables }} />);
        const captions = [...document.querySelectorAll('.compare-chart figcaption')];
        expect(captions).toHaveLength(2);
        for (const c of captions) expect(c.textContent).toContain(word);
        expect(screen.getByTestId('compare-start').textContent).toContain(word.slice(0, 2));
        cleanup();
      }
    }
  });
});

/* One meaning of cold: built in advance, no mode exits; filled on demand, each mode pays
 * for exactly the pages its first access touches, counted here from the layout (model.md
 * 3: a 4-level guest's one mapping needs a root, a PDPT, a PD and a PT, allocated from
 * guest.table_base 0x100000 in that order; the data page is the input's gpa). */
describe('Compare: tables built in advance or filled on demand', () => {
  const GUEST_TABLES = [0x100000, 0x101000, 0x102000, 0x103000];
  for (const op of ['read', 'write', 'fetch'] as const) {
    for (const gpa of ['0x200000', '0x3ff000', '0x305000']) {
      it(`${op} of gpa ${gpa}`, () => {
        const input = { ...DEFAULT_COMPARE, op, gpa };
        const built = runCompare(engine, { ...input, tables: 'built' });
        for (const r of built) expect([r.mode, r.cold!.exits, r.warm!.exits]).toEqual([r.mode, 0, 0]);
        const demand = Object.fromEntries(runCompare(engine, { ...input, tables: 'on-demand' }).map((r) => [r.mode, r]));
        const frames = new Set([...GUEST_TABLES, Number(gpa)].map((g) => Math.floor(g / 4096)));
        // one EPT violation / NPT fault per 4 KiB nested page first touched, one flat fill per frame
        for (const mode of ['ept', 'npt', 'flat']) {
          expect([mode, demand[mode].cold!.exits]).toEqual([mode, frames.size]);
          expect(demand[mode].cold!.outcome).toBe('ok');
          expect(demand[mode].warm!.exits).toBe(0);
        }
        // shadow: one hidden page fault for the one page; native has nothing to fill
        expect(demand.shadow.cold!.exits).toBe(1);
        expect(demand.native.cold!.exits).toBe(0);
        // the retried walk reads again: references of the failed walks come on top
        expect(demand.ept.cold!.memory_refs).toBeGreaterThan(built.find((r) => r.mode === 'ept')!.cold!.memory_refs);
      });
    }
  }
});

/* Your machine in Compare: a hw-lab result's exit and reference price the same counts in a
 * third chart, beside the default's; its numbers rebuilt here from the result's fields. */
describe('Compare: your machine', () => {
  const r = result as unknown as { benchmarks: { name: string; cases: { name: string; metrics: { name: string; min?: number; median?: number }[] }[] }[] };
  const c = (b: string, n: string) => r.benchmarks.find((x) => x.name === b)!.cases.find((x) => x.name === n)!;
  const m = (b: string, n: string, metric: string, f: 'min' | 'median') => c(b, n).metrics.find((x) => x.name === metric)![f]!;
  const exit = m('cpuid_exit', 'cpuid_leaf0', 'cycles', 'min') - m('cpuid_exit', 'timer_overhead', 'cycles', 'min');
  const ref = Math.round((m('ptrchase', '4k_64MiB', 'access', 'median') - m('ptrchase', 'thp_64MiB', 'access', 'median')) * 10) / 10;
  it('draws the cycles on the loaded machine beside the default', async () => {
    const { container } = render(<CompareView engine={engine} input={{ ...DEFAULT_COMPARE, tables: 'on-demand' }} />);
    expect(container.querySelector('figure[data-measure="cycles-mine"]')).toBeNull();
    const file = new File([JSON.stringify(result)], 'result.json', { type: 'application/json' });
    fireEvent.change(screen.getByTestId('compare-mine-file'), { target: { files: [file] } });
    await waitFor(() => expect(container.querySelector('figure[data-measure="cycles-mine"]')).not.toBeNull());
    const rows = Object.fromEntries(runCompare(engine, { ...DEFAULT_COMPARE, tables: 'on-demand' }).map((x) => [x.mode, x]));
    for (const mode of ['native', 'ept', 'shadow']) {
      for (const w of ['cold', 'warm'] as const) {
        const a = rows[mode][w]!;
        const want = 10 + a.memory_refs * ref + a.exits * exit;
        expect(container.querySelector(`figure[data-measure="cycles-mine"] g[data-mode="${mode}"] [data-field="cycles-mine-${w}"]`)!.textContent)
          .toBe(want.toLocaleString('en'));
      }
    }
    expect(screen.getByTestId('compare-mine-costs').textContent).toContain(`${exit.toLocaleString('en')} cycles per exit`);
    expect(container.querySelector('figure[data-measure="cycles-mine"] figcaption')!.textContent).toContain('filled on demand');
  });
  it('refuses a file that is not a result, and says so', async () => {
    render(<CompareView engine={engine} input={DEFAULT_COMPARE} />);
    fireEvent.change(screen.getByTestId('compare-mine-file'), { target: { files: [new File(['{"x":1}'], 'x.json')] } });
    await waitFor(() => expect(screen.getByRole('alert').textContent).toMatch(/not a hw-lab result/));
    expect(document.querySelector('figure[data-measure="cycles-mine"]')).toBeNull();
  });
});
