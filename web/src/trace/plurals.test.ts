/* The replay panel's exit counts take the plural the language asks for: "1 hidden page
 * fault", "2 hidden page faults"; Japanese and Chinese have one form, and no key falls
 * back to English. */
import { describe, expect, it } from 'vitest';
import i18next from '../i18n';

const KINDS = ['hidden_page_fault', 'pt_write', 'cr3_write', 'reflected_page_fault', 'ept_violation', 'ept_misconfig', 'npt_fault', 'flat_fill'];

describe('exit counts in words', () => {
  it('says one exit and many exits in English', () => {
    const t = i18next.getFixedT('en', 'trace');
    expect(t('exit.hidden_page_fault', { count: 1, n: '1' })).toBe('1 hidden page fault');
    expect(t('exit.hidden_page_fault', { count: 1676, n: '1,676' })).toBe('1,676 hidden page faults');
    for (const k of KINDS) {
      const one = t(`exit.${k}`, { count: 1, n: '1' }), many = t(`exit.${k}`, { count: 2, n: '2' });
      expect(one, k).not.toBe(many);
      expect(one.startsWith('1 ') && many.startsWith('2 '), k).toBe(true);
    }
  });

  it('has every kind in Japanese and Chinese, never the English words', () => {
    for (const lang of ['ja', 'zh']) {
      const t = i18next.getFixedT(lang, 'trace'), en = i18next.getFixedT('en', 'trace');
      for (const k of KINDS) for (const count of [1, 3]) {
        const s = t(`exit.${k}`, { count, n: String(count) });
        expect(s, `${lang} ${k}`).toContain(String(count));
        expect(s, `${lang} ${k}`).not.toBe(en(`exit.${k}`, { count, n: String(count) }));
      }
    }
  });
});
