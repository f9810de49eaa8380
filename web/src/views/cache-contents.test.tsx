// @vitest-environment jsdom
/* What the caches hold, as the Walk tab shows it: the rows are the engine's lines, the
 * marked row is the one the walk's hit step names, and the words are in every language. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { act, cleanup, render } from '@testing-library/react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import i18n from '../i18n';
import { EXAMPLES, EXAMPLE_NAMES } from '../model/examples';
import { testEngine } from '../test/engine';
import { englishRuns } from '../test/english';
import { CacheContents, runWithContents, sizeWords } from './CacheContents';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(() => cleanup());
afterAll(async () => { await i18n.changeLanguage('en'); });

const text = (name: string) => JSON.stringify(EXAMPLES[name]);
const rows = (c: HTMLElement, which: string) => [...c.querySelectorAll(`[data-cache="${which}"] tbody tr`)];
const cells = (tr: Element) => [...tr.querySelectorAll('td')].map((td) => td.textContent);

describe('what the caches hold', () => {
  it('says sizes in units', () => {
    expect([4096, 2 << 20, 1 << 30, 512 * 2 ** 30].map(sizeWords)).toEqual(['4 KiB', '2 MiB', '1 GiB', '512 GiB']);
  });

  it('caches-ept, access 2: the guest PD entry and a nested TLB line served it; its page is the newest TLB line', () => {
    const { container } = render(<CacheContents engine={engine} scenarioText={text('caches-ept')} accessIndex={2} />);
    expect(container.querySelector('h3')!.textContent).toBe('What the caches hold after access 2');
    // the walk of 0x401000 found the PD entry cached by access 0 (same 2 MiB region)
    const served = rows(container, 'guest_pwc').filter((r) => r.hasAttribute('data-served'));
    expect(served.map(cells)).toEqual([['L2 (PD)', '0x400000', '2 MiB', '0x103000', '1', 'served this access']]);
    // its TLB line is new and first in its set
    const tlb = rows(container, 'tlb');
    expect(cells(tlb[0]).slice(0, 4)).toEqual(['0x401000', '4 KiB', '0x80201000', '0x201000']);
    expect(tlb[0].getAttribute('data-filled')).toBe('true');
    expect(cells(tlb[0]).at(-1)).toBe('filled by this access');
    expect(rows(container, 'ntlb').filter((r) => r.hasAttribute('data-served')).map((r) => cells(r)[0])).toEqual(['0x103000']);
  });

  it('marks, in every access of every example with caches, exactly the lines its hit steps name', () => {
    let checked = 0;
    for (const name of EXAMPLE_NAMES) {
      const r = runWithContents(engine, text(name));
      if (!r) { expect(EXAMPLES[name].caches).toBeUndefined(); continue; }
      r.accesses.forEach((a, i) => {
        const { container } = render(<CacheContents engine={engine} scenarioText={text(name)} accessIndex={i} />);
        const marked = (w: string) => rows(container, w).filter((tr) => tr.hasAttribute('data-served')).length;
        expect(marked('tlb'), `${name} #${i}`).toBe(a.cache?.tlb === 'hit' ? 1 : 0);
        expect(marked('guest_pwc'), `${name} #${i}`).toBe(a.steps.filter((s) => s.kind === 'pwc_hit' && (s.dim === 'guest' || s.gpa === null)).length);
        expect(marked('ntlb'), `${name} #${i}`).toBe(new Set(a.steps.filter((s) => s.kind === 'ntlb_hit').map((s) => s.entry)).size);
        checked++;
        cleanup();
      });
    }
    expect(checked).toBeGreaterThan(15);
  });

  it('shows nothing for a scenario without caches', () => {
    expect(render(<CacheContents engine={engine} scenarioText={text('ept-4k')} accessIndex={0} />).container.innerHTML).toBe('');
  });

  for (const lang of ['ja', 'zh'] as const)
    it(`in ${lang}: no English left`, async () => {
      await act(async () => { await i18n.changeLanguage(lang); });
      for (const name of ['caches-ept', 'context-switch', 'vmfunc-tlb']) {
        const { container } = render(<CacheContents engine={engine} scenarioText={text(name)} accessIndex={2} />);
        expect(container.textContent!.length).toBeGreaterThan(100);
        expect(englishRuns(container.textContent ?? ''), name).toEqual([]);
        cleanup();
      }
      await act(async () => { await i18n.changeLanguage('en'); });
    });
});
