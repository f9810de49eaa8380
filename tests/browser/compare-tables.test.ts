/* Compare in Chromium: the tables' start comes from the address and goes back into it, and
 * every mode's exits follow it (filled on demand: the EPT pays one violation for each of the
 * four guest table pages and the data page; built in advance: none). */
import { describe, expect, it } from 'vitest';
import { appInChromium } from './chromium';

const session = appInChromium();

describe('Compare: tables built in advance or filled on demand', () => {
  it('reads the start from the address, says it beside the charts and writes it back', async () => {
    const page = await session.browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(`${session.url}?view=compare&tables=on-demand&lang=en`);
    await page.waitForSelector('[data-testid="compare-ordering"]');
    const exits = (mode: string) => page.textContent(`tr[data-mode="${mode}"] [data-field="exits"]`);
    expect(await exits('ept')).toBe('5');
    expect(await exits('shadow')).toBe('1');
    expect(await page.textContent('figure[data-measure="refs"] figcaption')).toContain('filled on demand');
    await page.selectOption('select[data-field="tables"]', 'built');
    await page.click('form.compare-form button[type="submit"]');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('tables') === 'built');
    await page.waitForFunction(() => document.querySelector('tr[data-mode="ept"] [data-field="exits"]')?.textContent === '0');
    expect(await exits('shadow')).toBe('0');
    expect(await page.textContent('figure[data-measure="cycles"] figcaption')).toContain('built in advance');
    await page.close();
  }, 60_000);
});
