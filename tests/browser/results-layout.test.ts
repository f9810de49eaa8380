/* The Results tab's layout in headless Chromium: chart labels are never cut at the chart's
 * edge (a long group name, such as an older hw-lab's fenced cpuid figure, wraps left of the
 * axis), and in "Your program" every row's Remove button lines up with the others. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appInChromium } from './chromium';

const session = appInChromium();
const root = join(__dirname, '..', '..');

describe('Results tab layout', () => {
  for (const [lang, width] of [['en', 1200], ['ja', 1200], ['en', 390]] as const) {
    it(`${lang} at ${width} px: every axis label lies inside its chart`, async () => {
      const page = await session.browser.newPage({ viewport: { width, height: 900 } });
      await page.goto(`${session.url}?view=results&lang=${lang}`);
      await page.waitForSelector('.results-page svg.chart');
      // an older hw-lab result: its fenced cpuid figure is the longest group name
      await page.getByTestId('result-file').setInputFiles(join(root, 'tests', 'server', 'fixtures', 'result-quick.json'));
      await page.waitForSelector('svg[data-chart=cpuid] path.mine');
      const out = await page.evaluate(() => {
        const bad: string[] = [];
        let n = 0;
        for (const svg of document.querySelectorAll<SVGSVGElement>('.results-page svg')) {
          const box = svg.getBoundingClientRect();
          for (const text of svg.querySelectorAll<SVGTextElement>('.axis .tick text')) {
            const r = text.getBoundingClientRect();
            if (!r.width) continue;
            n++;
            if (r.left < box.left - 1 || r.right > box.right + 1) bad.push(`${svg.dataset.chart}: "${text.textContent}" ${Math.round(r.left - box.left)}..${Math.round(r.right - box.left)} of ${Math.round(box.width)}`);
          }
        }
        return { bad, n };
      });
      await page.close();
      expect(out.n).toBeGreaterThan(20);
      expect(out.bad).toEqual([]);
    }, 60_000);
  }

  it('Your program: the Remove buttons of two rows line up', async () => {
    const page = await session.browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(`${session.url}?view=results&lang=en`);
    await page.waitForSelector('[data-testid="trace-panel"] button[data-example]');
    for (const b of await page.$$('[data-testid="trace-panel"] button[data-example]')) await b.click();
    await page.waitForFunction(() => document.querySelectorAll('.trace-list li').length >= 2, null, { timeout: 60_000 });
    await page.waitForSelector('[data-testid="trace-table"]', { timeout: 60_000 });
    const boxes = await page.$$eval('.trace-list li', (lis) => lis.map((li) => {
      const b = [...li.querySelectorAll('button')].find((x) => x.textContent === 'Remove')!.getBoundingClientRect();
      return { left: Math.round(b.left), right: Math.round(b.right) };
    }));
    await page.close();
    expect(boxes.length).toBeGreaterThanOrEqual(2);
    for (const b of boxes.slice(1)) expect(b).toEqual(boxes[0]);
  }, 90_000);
});
