// @vitest-environment jsdom
/* Agile paging in the views, on the engine's own traces: the walk grid puts the shadow
 * part on the rows above the switch and the 2-D part below it, marks the switching
 * entry, and says so in every language; Compare and the replay panel carry the mode. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, render } from '@testing-library/react';
import type { Result } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { exampleRuns } from '../test/engine';
import { gridModel, key } from '../model/grid';
import { explainStep, isShadowStep, isSwitchStep, tableOf } from '../model/decode';
import { DEFAULT_COMPARE } from '../model/compare';
import { compareWhy, runCompare } from './CompareView';
import { WalkView } from './WalkView';
import { replayOptions } from '../trace/TracePanel';
import i18n from '../i18n';

let engine: Vmsim;
let runs: Record<string, Result>;
beforeAll(async () => { ({ engine, runs } = await exampleRuns()); });
afterEach(() => { cleanup(); void i18n.changeLanguage('en'); });

describe('agile paging in the walk grid', () => {
  it('lays the warm walk out as shadow rows above the switch and 2-D rows below, for every example level', () => {
    for (const s of [1, 2, 3]) {
      const r = runs[`agile-switch-l${s}`];
      const warm = r.accesses[1];
      expect(warm.memory_refs).toBe((4 - s) + s * 5 + 4);
      const g = gridModel(r, warm);
      expect(g.kind).toBe('2d');
      expect(g.cols.map((c) => c.key)).toEqual(['S', 'V', 'N4', 'N3', 'N2', 'N1', 'G']);
      // one shadow cell on each level above the switch, none below
      for (let l = 4; l >= 1; l--) expect(g.cells.has(key(l, 'S'))).toBe(l > s);
      // the guest's own entries at and below the switch, each with its nested walk
      for (let l = s; l >= 1; l--) {
        expect(g.cells.has(key(l, 'G'))).toBe(true);
        for (const n of [4, 3, 2, 1]) expect(g.cells.has(key(l, `N${n}`))).toBe(true);
      }
      for (const n of [4, 3, 2, 1]) expect(g.cells.has(key(0, `N${n}`))).toBe(true);   // the final gpa
      for (let l = 4; l > s; l--) expect(g.cells.has(key(l, 'G'))).toBe(false);
      // exactly one shadow entry switches: the one at level s + 1
      const switching = warm.steps.filter((st) => isSwitchStep(st, 'agile'));
      expect(switching.map((st) => st.level)).toEqual([s + 1]);
      expect(warm.steps.filter((st) => isShadowStep(st, 'agile')).map((st) => tableOf(st, 'agile'))).toEqual(Array(4 - s).fill('shadow'));
    }
  });

  it('marks the switching cell and explains it in English, Japanese and Chinese', async () => {
    const r = runs['agile-switch-l2'];
    const warm = r.accesses[1];
    const sw = warm.steps.find((st) => isSwitchStep(st, 'agile'))!;
    for (const [lng, word] of [['en', 'switch bit'], ['ja', '切り替えビット'], ['zh', '切换位']] as const) {
      await i18n.changeLanguage(lng);
      const { container } = render(<WalkView result={r} access={warm} step={warm.steps.length} primary={false} />);
      const cell = container.querySelector('td.cell.switch');
      expect(cell).not.toBeNull();
      expect(cell!.getAttribute('data-row')).toBe('3');
      expect(cell!.getAttribute('data-col')).toBe('S');
      expect(container.querySelectorAll('td.cell.switch')).toHaveLength(1);
      const note = container.querySelector('[data-testid="switch-note"]')!.textContent!;
      expect(note).toMatch(/3/);
      expect(note).not.toMatch(/\{\{|walk\.switchNote/);
      const text = explainStep(sw, r, i18n.getFixedT(lng, 'views'));
      expect(text).toContain(word);
      expect(text).not.toMatch(/\{\{|step\./);
      cleanup();
    }
  });

  it('draws an all-shadow walk with no 2-D cell and the policy example moving to a switch and back', () => {
    const r = runs['agile-policy'];
    const first = gridModel(r, r.accesses[1 - 1]);
    expect([...first.cells.keys()].every((k) => /:(S|V)$/.test(k))).toBe(true);
    const nested = r.accesses[5];                  // after the move: switch at L2, 12 references
    expect(nested.memory_refs).toBe(12);
    expect(nested.steps.filter((st) => isSwitchStep(st, 'agile')).map((st) => st.level)).toEqual([2]);
    const back = r.accesses[10];                   // back to shadow: no switching entry
    expect(back.steps.some((st) => isSwitchStep(st, 'agile'))).toBe(false);
  });
});

describe('agile paging in Compare and the replay panel', () => {
  it('compares agile switched at L2: 16 warm references, 2 of them shadow, no exit cold with tables built, a shadow fill on demand', () => {
    const rows = runCompare(engine, DEFAULT_COMPARE);
    const by = Object.fromEntries(rows.map((r) => [r.mode, r]));
    expect(by.agile.error).toBeNull();
    expect(by.agile.warm!.memory_refs).toBe(2 + 2 * 5 + 4);
    expect(by.agile.cold!.exits).toBe(0);
    const demand = Object.fromEntries(runCompare(engine, { ...DEFAULT_COMPARE, tables: 'on-demand' }).map((r) => [r.mode, r]));
    const fill = demand.agile.cold!.steps.filter((st) => st.kind === 'vmexit' && st.result === 'hidden_page_fault');
    expect(fill).toHaveLength(1);
    const why = compareWhy(by.agile, by.native);
    expect(why[0]).toEqual({ key: 'compare.why.agile', values: { refs: 16, native: 4, g: 2, n: 14, shadow: 2 } });
  });

  it('asks the replay for the sixth mode only when a level is chosen', () => {
    const base = { preset: 'x86-server', start: 'cold', guest_pages: '4k', host_pages: '2m', tables: 'built' } as const;
    expect(replayOptions({ ...base, agile: null })).toEqual(base);
    expect(replayOptions({ ...base, agile: 3 })).toEqual({
      ...base, modes: ['native', 'ept', 'npt', 'shadow', 'flat', 'agile'], agile_switch_level: 3,
    });
  });
});
