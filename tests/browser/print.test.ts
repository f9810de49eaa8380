/* Printing, in headless Chromium: a lesson, Compare and the Results tab's charts, each in
 * the dark theme, printed to PDF (Chromium's own print path) and checked under the print
 * media the PDF uses: no tabs, pickers or buttons; the charts kept; every piece of text at
 * least 4.5:1 against what lies behind it (the light palette whatever the theme). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appInChromium, ARTIFACTS } from './chromium';
import { firstPageTextReach, pdfPagesText } from './pdf-text';

const session = appInChromium();

const PAGES: [string, string, string, string][] = [
  ['lesson', '?view=lessons&lesson=ept-and-npt&lang=en', '.prose', 'figure.embedded-walk'],
  ['compare', '?view=compare', '[data-testid="compare-ordering"]', 'figure.compare-chart svg'],
  ['results', '?view=results', '.results-page svg.chart', '.results-page svg.chart'],
];

/** Text elements whose contrast against the background behind them is under 4.5:1. */
function lowContrast(): string[] {
  const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
  const lum = ([r, g, b]: number[]) => {
    const f = (v: number) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const behind = (el: Element | null): number[] => {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];   // paper
  };
  const bad: string[] = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement!;
    if (!n.textContent!.trim() || el.closest('svg, .katex, script, style')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || getComputedStyle(el).visibility === 'hidden') continue;
    const fg = lum(rgb(getComputedStyle(el).color).slice(0, 3)), bg = lum(behind(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) bad.push(`${el.tagName.toLowerCase()}.${el.className} "${n.textContent!.trim().slice(0, 40)}": ${ratio.toFixed(2)}`);
  }
  return bad;
}

describe('print', () => {
  for (const [name, query, ready, chart] of PAGES) {
    it(`${name}, dark theme: prints to PDF with the light palette, no controls, the chart kept`, async () => {
      const ctx = await session.browser.newContext({ viewport: { width: 1100, height: 900 }, colorScheme: 'dark' });
      await ctx.addInitScript(() => localStorage.setItem('vmemlab-theme', 'dark'));
      const page = await ctx.newPage();
      await page.goto(session.url + query);
      await page.waitForSelector(ready, { timeout: 20_000 });
      // on screen it is dark
      expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).not.toBe('rgb(255, 255, 255)');
      const pdf = await page.pdf({ format: 'A4', printBackground: true });
      writeFileSync(join(ARTIFACTS, `print-${name}.pdf`), pdf);
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
      expect(pdf.length).toBeGreaterThan(10_000);
      if (name === 'lesson') {
        // page 1 is not left mostly blank by a figure too tall for what remains of it
        const first = firstPageTextReach(pdf);
        expect(first.runs).toBeGreaterThan(20);
        expect(first.bottom / first.height, JSON.stringify(first)).toBeGreaterThan(0.7);
      }
      await page.emulateMedia({ media: 'print', colorScheme: 'dark' });
      expect(await page.evaluate(() => getComputedStyle(document.body).backgroundColor)).toBe('rgb(255, 255, 255)');
      // no tabs, pickers or buttons (a lesson's links stay, as words)
      for (const sel of ['header.top', 'nav.tabs', 'footer.foot', 'button:not(.lesson button.linklike)', 'select', 'input'])
        expect(await page.locator(sel).evaluateAll((els) => els.filter((e) => (e as HTMLElement).offsetParent !== null).length), sel).toBe(0);
      // the chart (or the lesson's walk figure) is kept
      const box = await page.locator(chart).first().boundingBox();
      expect(box && box.width > 100 && box.height > 40, chart).toBe(true);
      expect(await page.evaluate(lowContrast)).toEqual([]);
      if (name === 'lesson') {
        // the step table whole: its step numbers printed, no column past the page's edge
        const steps = await page.evaluate(() => {
          const table = document.querySelector<HTMLElement>('figure.embedded-walk table.steplist')!;
          const first = table.querySelector('tbody td[data-n]')!;
          const page = table.closest('figure')!.getBoundingClientRect();
          return { n: getComputedStyle(first, '::before').content, right: Math.round(table.getBoundingClientRect().right), edge: Math.round(page.right),
            cut: [...table.querySelectorAll('th, td')].filter((c) => c.getBoundingClientRect().right > page.right + 1).length };
        });
        expect(steps.n).toBe('"1"');
        expect(steps.cut, JSON.stringify(steps)).toBe(0);
        // a choice exercise prints its choices (the on-screen picker's, in order) and a line
        // to write the answer on, where the form, which does not print, was
        const choice = await page.evaluate(() => {
          const ex = [...document.querySelectorAll('section.exercise')].find((e) => e.querySelector('select'))!;
          const printed = ex.querySelector<HTMLElement>('.print-answer');
          return { options: [...ex.querySelectorAll('select option')].filter((o) => (o as HTMLOptionElement).value).map((o) => o.textContent!),
            listed: [...ex.querySelectorAll('.print-choices li')].map((li) => li.textContent!),
            line: printed?.querySelector('.print-line')?.textContent ?? '', shown: !!printed && printed.offsetParent !== null };
        });
        expect(choice.options.length).toBeGreaterThan(1);
        expect(choice.listed).toEqual(choice.options);
        expect(choice.shown).toBe(true);
        // the choices one after another, then the answer line, as the PDF's text has them
        const squash = (t: string) => t.normalize('NFKC').replace(/\s+/g, '');
        const text = squash(pdfPagesText(pdf).join('\n'));
        expect(text).toContain(squash(choice.options.join('') + choice.line));
        // a walk grid prints a blank for each of its references (the pickers' count) and a
        // line for each address asked, under the tables a reference may read
        const grid = await page.evaluate(() => {
          const ex = document.querySelector<HTMLElement>('section.exercise[data-kind="walk-grid"]')!;
          return { refs: ex.querySelectorAll('.grid-refs select').length, addresses: ex.querySelectorAll('.grid-address input').length,
            blanks: [...ex.querySelectorAll('.print-grid-refs li')].map((li) => li.textContent!),
            lines: [...ex.querySelectorAll('.print-grid .print-line')].map((p) => p.textContent!),
            tables: ex.querySelector('.print-grid-options')?.textContent ?? '' };
        });
        expect(grid.refs).toBeGreaterThan(4);
        expect(grid.blanks).toHaveLength(grid.refs);
        expect(grid.lines).toHaveLength(grid.addresses);
        expect(text).toContain(squash(grid.tables));
        expect(text).toContain(squash(grid.blanks.slice(0, 3).join('')));
        for (const l of grid.lines) expect(text).toContain(squash(l));
      }
      await ctx.close();
    }, 90_000);
  }
});
