// @vitest-environment jsdom
/* The sentences under Compare's charts come from the counters of each mode's warm access
 * (references by dimension) and cold one (exits), in every language. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, render, screen } from '@testing-library/react';
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
    expect(flat[1].key).toBe('compare.why.coldExits');
    expect(flat[1].values.exits).toBe(by.flat.cold!.exits);
    const shadow = compareWhy(by.shadow, by.native);
    expect(shadow[0].key).toBe('compare.why.shadow');
    expect(shadow[1]).toEqual({ key: 'compare.why.coldExits', values: { exits: by.shadow.cold!.exits, each: 1700 } });
  });
  it('shows them under the charts in English, Japanese and Chinese', async () => {
    for (const [lng, word] of [['en', 'nested walk'], ['ja', 'ネステッドウォーク'], ['zh', '嵌套遍历']] as const) {
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
});
