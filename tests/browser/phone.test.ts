/* On a phone (390x844 and 360x740), in headless Chromium and Firefox ESR: no tab scrolls
 * sideways (a data table may, inside its own box; an element inside a box that scrolls or
 * clips is that box's), the live terminal fits its box rather than being cut by it, and on load,
 * with no scrolling, the walk's grid (or the memory map) and the current step's explanation are
 * both on screen. */
import { describe, expect, it } from 'vitest';
import { appIn, BROWSERS } from './browsers';

const TABS: [string, string, string][] = [
  ['walk', '?example=ept-4k&access=0&step=7', '#counter'],
  ['walk, VMFUNC', '?example=vmfunc-gate&access=2&step=1', '[data-testid="vmfunc-panel"] table.eptp-list'],
  ['memory', '?view=memory&example=shadow&access=0&step=3', 'svg.memsvg'],
  ['compare', '?view=compare', '[data-testid="compare-ordering"]'],
  ['playground', '?view=playground&example=ept-4k', '[data-testid="toggles"]'],
  ['results', '?view=results', '.results-page'],
  ['lessons', '?view=lessons&lesson=ept-and-npt', '.prose'],
  ['lesson 1', '?view=lessons&lesson=four-address-spaces', '.prose'],
  ['live', '?view=live', 'body[data-live-ready="1"]'],
];

const WALKS: [string, string][] = [
  ['EPT 4-level, a nested step', '?example=ept-4k&access=0&step=7'],
  ['EPT 4-level, the final gpa', '?example=ept-4k&access=0&step=24'],
  ['NPT, an A/D step', '?example=npt-4k&access=0&step=21'],
  ['native', '?example=native-4k&access=0&step=2'],
  ['shadow', '?example=shadow&access=0&step=3'],
  // a tall grid: the last cell of a 5-level walk would sit under the sticky explanation
  ['EPT 5-level, the last step', '?example=ept-5level&access=0&step=35'],
];
const TALL = new Set(['EPT 5-level, the last step']);

for (const browser of BROWSERS) {
  describe(`phone, ${browser}`, () => {
    const app = appIn(browser);
    for (const [w, h] of [[390, 844], [360, 740]]) {
      for (const [name, query, ready] of TABS) {
        it(`${w}x${h} ${name}: nothing scrolls sideways but a data table in its own box`, async () => {
          const page = await app.open({ width: w, height: h, phone: true });
          await page.goto(`${app.url}${query}&lang=en`);
          await page.waitFor(ready, ready.includes('live-ready') ? 60_000 : 15_000);
          expect(await page.evaluate(() => innerWidth), 'the page is as wide as the phone').toBe(w);
          const wide = await page.evaluate(() => {
            const out: string[] = [];
            if (document.documentElement.scrollWidth > innerWidth + 1) out.push(`page ${document.documentElement.scrollWidth} > ${innerWidth}`);
            for (const el of document.querySelectorAll<HTMLElement>('body *')) {
              const r = el.getBoundingClientRect();
              if (r.width === 0 || r.right <= innerWidth + 1 || el.closest('.table-scroll, [data-scroll]')) continue;
              let p = el.parentElement, clipped = false;
              for (; p; p = p.parentElement) { const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') { clipped = true; break; } }
              if (!clipped) out.push(`${el.tagName.toLowerCase()}.${String(el.className).slice(0, 30)} right ${Math.round(r.right)}`);
            }
            return out.slice(0, 8);
          });
          // the live terminal fits its box (a smaller font, fewer columns)
          const term = await page.evaluate(() => {
            const box = document.querySelector<HTMLElement>('.live-term');
            const screen = box?.querySelector('.xterm-screen');
            return box && screen ? { screen: Math.round(screen.getBoundingClientRect().width), box: box.clientWidth } : null;
          });
          const problems = page.problems;
          await page.close();
          expect(wide).toEqual([]);
          if (name === 'live') expect(term && term.screen <= term.box, JSON.stringify(term)).toBe(true);
          expect(problems).toEqual([]);
        }, 90_000);
      }
    }

    for (const [w, h] of [[390, 844], [360, 740]]) {
      for (const [name, query] of WALKS) {
        it(`${w}x${h} ${name}: the grid and the step's explanation both on screen on load`, async () => {
          const page = await app.open({ width: w, height: h, phone: true });
          await page.goto(`${app.url}${query}&lang=en`);
          await page.waitFor('#entry .explain');
          await new Promise((r) => setTimeout(r, 200));
          const at = await page.evaluate(() => {
            const r = (sel: string) => { const el = document.querySelector(sel); if (!el) return null; const b = el.getBoundingClientRect(); return { top: Math.round(b.top), bottom: Math.round(b.bottom) }; };
            return { grid: r('table.grid'), cell: r('td[aria-current="step"]'), bar: r('.controls'), entry: r('#entry'), explain: r('#entry .explain'), h: innerHeight, scrollY };
          });
          await page.close();
          const where = JSON.stringify(at);
          if (TALL.has(name)) {
            // the page scrolls the current cell clear of the sticky controls and explanation
            expect(at.cell!.top, `the current cell below the step controls: ${where}`).toBeGreaterThanOrEqual(at.bar!.bottom - 1);
            expect(at.cell!.bottom, `the current cell above the explanation: ${where}`).toBeLessThanOrEqual(at.entry!.top + 1);
            expect(at.explain!.bottom, where).toBeLessThanOrEqual(at.h);
            return;
          }
          expect(at.scrollY, where).toBe(0);
          expect(at.grid!.top, `the grid starts below the step controls: ${where}`).toBeGreaterThanOrEqual(at.bar!.bottom - 1);
          expect(at.grid!.bottom, `the whole grid is clear of the explanation: ${where}`).toBeLessThanOrEqual(at.entry!.top + 1);
          if (at.cell) expect(at.cell.bottom, where).toBeLessThanOrEqual(at.entry!.top + 1);
          expect(at.explain!.top, where).toBeGreaterThanOrEqual(at.entry!.top);
          expect(at.explain!.bottom, `the explanation is on screen: ${where}`).toBeLessThanOrEqual(at.h);
        }, 60_000);
      }
      it(`${w}x${h} touch words: tap, not hover or press →; the pause sign drawn, not a font's glyph`, async () => {
        const page = await app.open({ width: w, height: h, phone: true });
        await page.goto(`${app.url}?example=ept-4k&access=0&step=0&lang=en`);
        await page.waitFor('#entry .explain');
        const walk = await page.evaluate(() => ({ entry: document.querySelector('#entry')!.textContent!, foot: document.querySelector('.foot')!.textContent! }));
        await page.click('#play');
        await page.waitFor('#play svg.pause-icon');
        const play = await page.evaluate(() => document.querySelector('#play')!.textContent!);
        await page.goto(`${app.url}?view=lessons&lesson=four-address-spaces&lang=en`);
        await page.waitFor('.prose');
        const lesson = await page.evaluate(() => document.querySelector('.prose')!.textContent!);
        // a tapped term shows its definition
        const shown = await page.evaluate(() => {
          const term = document.querySelector<HTMLElement>('.prose abbr.term')!;
          term.focus();
          return getComputedStyle(term, '::after').content;
        });
        await page.close();
        expect(walk.entry).toContain('Tap ▶ to read the first entry');
        expect(walk.entry).not.toContain('Press →');
        expect(walk.foot).not.toContain('←');
        expect(play).not.toContain('\u23f8');
        expect(lesson).toContain('or tap it');
        expect(shown.length, shown).toBeGreaterThan(10);
      }, 60_000);

      it(`${w}x${h} memory: the map and the step's explanation both on screen on load`, async () => {
        const page = await app.open({ width: w, height: h, phone: true });
        await page.goto(`${app.url}?view=memory&example=ept-4k&access=0&step=7&lang=en`);
        await page.waitFor('#entry .explain');
        await new Promise((r) => setTimeout(r, 200));
        const at = await page.evaluate(() => {
          const r = (sel: string) => { const b = document.querySelector(sel)!.getBoundingClientRect(); return { top: Math.round(b.top), bottom: Math.round(b.bottom) }; };
          return { map: r('svg.memsvg'), bar: r('.controls'), explain: r('#entry .explain'), h: innerHeight };
        });
        await page.close();
        const where = JSON.stringify(at);
        expect(at.map.top, where).toBeGreaterThanOrEqual(at.bar.bottom - 1);
        expect(at.map.bottom, where).toBeLessThanOrEqual(at.explain.top);
        expect(at.explain.bottom, where).toBeLessThanOrEqual(at.h);
      }, 60_000);
    }
  });
}
