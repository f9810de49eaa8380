// @vitest-environment jsdom
/* The walk's outcome names page sizes as the lessons and exercises do: a 2 MiB page is
 * "2 MiB", never "2048 KiB", in every language; Sunway's frames are 8 KiB. Rendered from
 * real engine runs of the bundled examples and of a 2 MiB guest page made from one. */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { act, cleanup, render } from '@testing-library/react';
import type { Result, Scenario } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import i18n from '../i18n';
import { EXAMPLES } from '../model/examples';
import { testEngine } from '../test/engine';
import { WalkView } from './WalkView';
import { MemoryView } from './MemoryView';
import { sizeWords } from './size';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(() => cleanup());
afterAll(async () => { await i18n.changeLanguage('en'); });

/** ept-2m with its guest page made 2 MiB too: gva 0x400000 -> gpa 0x200000, both 2 MiB aligned. */
function guest2m(): Scenario {
  const s = structuredClone(EXAMPLES['ept-2m']);
  s.guest.mappings![0].page = '2M';
  return s;
}

function outcomeText(r: Result): string {
  const a = r.accesses[0];
  const { container } = render(<WalkView result={r} access={a} step={a.steps.length} />);
  const text = container.querySelector('#outcome .counts')?.textContent ?? '';
  cleanup();
  return text;
}

const WORDS = {
  en: { guest: 'guest page 2 MiB', nested: 'nested page 2 MiB', flat: 'flat frame 8 KiB' },
  ja: { guest: 'ゲストのページ 2 MiB', nested: 'ネストのページ 2 MiB', flat: 'フラットのフレーム 8 KiB' },
  zh: { guest: '客户机页 2 MiB', nested: '嵌套页 2 MiB', flat: '平坦帧 8 KiB' },
} as const;

it('sizes are said in the largest unit that divides them', () => {
  expect([4096, 8192, 2 << 20, 1 << 30, 3 << 20, 1536].map(sizeWords)).toEqual(['4 KiB', '8 KiB', '2 MiB', '1 GiB', '3 MiB', '1536 B']);
});

for (const lang of ['en', 'ja', 'zh'] as const) {
  describe(`page sizes in ${lang}`, () => {
    beforeAll(async () => { await act(async () => { await i18n.changeLanguage(lang); }); });

    it('a 2 MiB guest page on 2 MiB EPT pages says 2 MiB for both', () => {
      const r = engine.run(guest2m());
      expect(r.accesses[0].outcome).toBe('ok');
      expect(r.accesses[0].guest_page_size).toBe(2 << 20);
      expect(r.accesses[0].nested_page_size).toBe(2 << 20);
      const text = outcomeText(r);
      expect(text).toContain(WORDS[lang].guest);
      expect(text).toContain(WORDS[lang].nested);
      expect(text).not.toMatch(/2048|KiB/);
    });

    it('the 4 KiB guest page of ept-2m says 4 KiB beside the 2 MiB nested page', () => {
      const text = outcomeText(engine.run(EXAMPLES['ept-2m']));
      expect(text).toContain(WORDS[lang].guest.replace('2 MiB', '4 KiB'));
      expect(text).toContain(WORDS[lang].nested);
    });

    it('Sunway\'s flat frames are 8 KiB, and the flat table\'s span is in whole units', () => {
      const r = engine.run(EXAMPLES['flat-sunway']);
      const a = r.accesses[0];
      expect(outcomeText(r)).toContain(WORDS[lang].flat);
      const { container } = render(<MemoryView result={r} access={a} step={a.steps.length} />);
      expect(r.flat_table_bytes).toBeGreaterThan(0);
      expect(container.textContent).toContain(sizeWords(r.flat_table_bytes!));
    });
  });
}
