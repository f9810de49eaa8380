// @vitest-environment jsdom
/* The views in Japanese and Chinese: every example's every access at every step, the
 * compare table, the playground's errors and the app shell, rendered with real engine
 * traces, must show no English prose (englishRuns), and the step words must say the
 * same thing as the English ones (same numbers, same entry values). */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { Result } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import i18n from '../i18n';
import { EXAMPLES, EXAMPLE_NAMES } from '../model/examples';
import { explainStep } from '../model/decode';
import { exampleRuns } from '../test/engine';
import { englishRuns, translatedText } from '../test/english';
import { WalkView } from './WalkView';
import { MemoryView } from './MemoryView';
import { CachePanel } from './CachePanel';
import { CompareView } from './CompareView';
import { Playground } from './Playground';
import { Controls } from './Controls';
import { App } from '../App';
import { DEFAULT_COMPARE } from '../model/compare';

let engine: Vmsim;
let runs: Record<string, Result> = {};
beforeAll(async () => { ({ engine, runs } = await exampleRuns()); });
afterEach(() => cleanup());
afterAll(async () => { await i18n.changeLanguage('en'); });

const numbers = (s: string) => (s.match(/0x[0-9a-f]+|\d+/gi) ?? []).sort();

for (const lang of ['ja', 'zh'] as const) {
  describe(`views in ${lang}`, () => {
    beforeAll(async () => { await act(async () => { await i18n.changeLanguage(lang); }); });

    it('walk, memory, caches and controls: no English left at any step of any example', () => {
      let checked = 0;
      for (const name of EXAMPLE_NAMES) {
        const r = runs[name];
        r.accesses.forEach((a, i) => {
          const { container, rerender } = render(<>
            <Controls step={0} total={a.steps.length} refOf={0} refs={a.memory_refs} playing={false} speed={1} onStep={() => {}} onPlay={() => {}} onSpeed={() => {}} />
            <WalkView result={r} access={a} step={0} />
            <MemoryView result={r} access={a} step={0} />
            <CachePanel result={r} accessIndex={i} />
          </>);
          for (let s = 0; s <= a.steps.length; s++) {
            rerender(<>
              <Controls step={s} total={a.steps.length} refOf={0} refs={a.memory_refs} playing={s % 2 === 0} speed={1} onStep={() => {}} onPlay={() => {}} onSpeed={() => {}} />
              <WalkView result={r} access={a} step={s} />
              <MemoryView result={r} access={a} step={s} />
              <CachePanel result={r} accessIndex={i} />
            </>);
            const attrs = [...container.querySelectorAll('[title],[aria-label]')].map((e) => `${e.getAttribute('title') ?? ''} ${e.getAttribute('aria-label') ?? ''}`).join(' | ');
            expect(englishRuns(container.textContent ?? ''), `${name} #${i} step ${s}`).toEqual([]);
            expect(englishRuns(attrs, [/^(?:Home|End|Space)$/]), `${name} #${i} step ${s} (titles, labels)`).toEqual([]);
            checked++;
          }
          cleanup();
        });
      }
      expect(checked).toBeGreaterThan(200);
    });

    it('explains each step with the numbers the English explanation has', () => {
      const t = i18n.getFixedT(lang, 'views');
      for (const name of EXAMPLE_NAMES) for (const a of runs[name].accesses) for (const s of a.steps) {
        const en = explainStep(s, runs[name]);
        const other = explainStep(s, runs[name], t);
        expect(other).not.toBe(en);
        expect(numbers(other), `${name} step ${s.n}: ${en} / ${other}`).toEqual(numbers(en));
      }
    });

    it('compare table and its input problem', () => {
      const { container, unmount } = render(<CompareView engine={engine} input={DEFAULT_COMPARE} />);
      expect(container.querySelectorAll('tr[data-mode]')).toHaveLength(6);
      expect(englishRuns(container.textContent ?? '')).toEqual([]);
      unmount();
      render(<CompareView engine={engine} input={{ ...DEFAULT_COMPARE, gva: 'zz' }} />);
      expect(englishRuns(screen.getByRole('alert').textContent ?? '')).toEqual([]);
    });

    it('playground: JSON and schema problems in the language', async () => {
      const { unmount } = render(<Playground engine={engine} text={'{\n  "name": "x",\n  "mode": }'} onText={() => {}} onRun={() => {}} plainEditor />);
      await waitFor(() => expect(screen.getByTestId('problems')).toBeTruthy());
      fireEvent.click(screen.getByTestId('run'));
      expect(screen.getByTestId('problems').querySelector('[lang="en"]')?.textContent, 'the browser\'s own words').toBeTruthy();
      expect(englishRuns(translatedText(document.body))).toEqual([]);
      unmount();
      const s = structuredClone(EXAMPLES['ept-4k']) as unknown as Record<string, any>;
      s.guest.mappings[0].gva = 'nothex';
      delete s.mode;
      s.bogus = 1;
      render(<Playground engine={engine} text={JSON.stringify(s)} onText={() => {}} onRun={() => {}} plainEditor />);
      await waitFor(() => expect(screen.getByTestId('problems')).toBeTruthy());
      const text = screen.getByTestId('problems').textContent!;
      expect(text).toContain('/guest/mappings/0/gva');
      expect(text).toContain('bogus');
      expect(englishRuns(translatedText(screen.getByTestId('problems')))).toEqual([]);
    });

    it('the app shell with each example and its description', async () => {
      for (const name of EXAMPLE_NAMES) {
        history.replaceState(null, '', `?example=${name}&lang=${lang}`);
        const { container, unmount } = render(<App engine={engine} />);
        await waitFor(() => expect(container.querySelector('[data-testid="walk-view"]')).toBeTruthy());
        expect(container.querySelector('.desc')?.textContent).toBe(i18n.getFixedT(lang, 'examples')(name));
        expect(englishRuns(container.textContent ?? ''), name).toEqual([]);
        unmount();
      }
    });
  });
}
