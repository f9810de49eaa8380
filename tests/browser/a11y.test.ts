/* Accessibility of the built app in Chromium, checked by axe-core (WCAG 2.x A and AA rules,
 * colour contrast included): every tab in English, Japanese and Chinese, and the views
 * with the most colour in the dark theme too. Any serious or critical violation fails,
 * with the rule, the elements and axe's own words; so does an id used twice on a page
 * (axe rates that minor). Also keyboard: after a scenario is
 * chosen with the mouse, → steps the walk; Tab reaches the grid and the step list. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { appInChromium } from './chromium';

const session = appInChromium();
const AXE = readFileSync(join(__dirname, '..', '..', 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

const TABS: [string, string, string][] = [
  ['walk', '?example=ept-violation&access=0&step=5', '#counter'],
  ['start-here', '?', '.start-here'],   // a first bare visit: the "Start here" panel over the walk
  ['walk-vmfunc', '?example=vmfunc-gate&access=2&step=1', '[data-testid="vmfunc-panel"] table.eptp-list'],
  ['walk-shadow-end', '?example=shadow&access=8&step=10', '#outcome.done'],
  ['memory', '?view=memory&example=shadow&access=0&step=3', 'svg.memsvg'],
  ['compare', '?view=compare', '[data-testid="compare-ordering"]'],
  ['playground', '?view=playground&example=ept-4k', '[data-testid="toggles"]'],
  ['results', '?view=results', '.results-page'],
  ['lessons', '?view=lessons&lesson=ept-and-npt', '.prose'],
  ['lesson-vmfunc', '?view=lessons&lesson=vmfunc', 'section.exercise'],
  ['live', '?view=live', 'body[data-live-ready="1"]'],
];

interface Violation { id: string; impact: string | null; help: string; nodes: { target: string[]; failureSummary?: string }[] }

async function axe(page: Page): Promise<Violation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const res = await page.evaluate(() => (window as unknown as { axe: { run: (c: Document, o: object) => Promise<{ violations: unknown[] }> } })
    .axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] }));
  return res.violations as Violation[];
}

const serious = (v: Violation[]) => v.filter((x) => x.impact === 'serious' || x.impact === 'critical');
const report = (v: Violation[]) => v.map((x) => `${x.id} (${x.impact}): ${x.help}\n` + x.nodes.slice(0, 6)
  .map((n) => `   ${n.target.join(' ')}: ${(n.failureSummary ?? '').replace(/\s+/g, ' ').slice(0, 220)}`).join('\n')).join('\n');

async function open(query: string, ready: string, dark = false, width = 1200): Promise<Page> {
  const ctx = await session.browser.newContext({ viewport: { width, height: 900 }, bypassCSP: true });
  if (dark) await ctx.addInitScript(() => localStorage.setItem('vmemlab-theme', 'dark'));
  const page = await ctx.newPage();
  await page.goto(session.url + query);
  await page.waitForSelector(ready, { timeout: ready.includes('live-ready') ? 60_000 : 15_000 });
  if (query.includes('lesson=')) {
    // answer nothing, ask for every answer: the revealed state and the exercise walks are checked too
    const show = page.getByRole('button', { name: /^(Show answer|答えを見る|显示答案)$/ });
    for (let n = await show.count(); n > 0; n = await show.count()) await show.first().click();
    const walk = page.locator('section.exercise button.linklike[aria-expanded="false"]');
    for (let n = await walk.count(); n > 0; n = await walk.count()) await walk.first().click();
  }
  return page;
}

for (const lang of ['en', 'ja', 'zh']) {
  describe(`axe-core, ${lang}`, () => {
    for (const [name, query, ready] of TABS) {
      it(`${name}: no serious or critical violation`, async () => {
        const page = await open(`${query}&lang=${lang}`, ready);
        const v = serious(await axe(page));
        const ids = await page.evaluate(() => [...document.querySelectorAll('[id]')].map((e) => e.id));
        await page.context().close();
        expect(v, report(v)).toEqual([]);
        expect(ids.filter((x, i) => ids.indexOf(x) !== i), 'repeated ids').toEqual([]);
      }, 90_000);
    }
  });
}

describe('axe-core, dark theme', () => {
  for (const [name, query, ready] of TABS.filter(([n]) => ['walk', 'walk-vmfunc', 'memory', 'compare', 'playground', 'lessons', 'results'].includes(n))) {
    it(`${name}: no serious or critical violation`, async () => {
      const page = await open(`${query}&lang=en`, ready, true);
      expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
      const v = serious(await axe(page));
      await page.context().close();
      expect(v, report(v)).toEqual([]);
    }, 60_000);
  }
});

describe('keyboard', () => {
  it('after a scenario is chosen with the mouse, → steps the walk instead of changing the scenario', async () => {
    const page = await open('?example=ept-4k&access=0&step=0', '#counter');
    await page.selectOption('select[aria-label="example scenario"]', 'ept-violation');
    await page.waitForFunction(() => new URL(location.href).searchParams.get('example') === 'ept-violation');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    expect(new URL(page.url()).searchParams.get('example')).toBe('ept-violation');
    expect(await page.textContent('#counter [data-field="step"]')).toBe('2');
    await page.selectOption('select[aria-label="playback speed"]', '2');
    await page.keyboard.press('End');
    const total = await page.evaluate(() => document.querySelector('#counter')!.textContent!.match(/\/\s*(\d+)/)![1]);
    expect(await page.textContent('#counter [data-field="step"]')).toBe(total);
    await page.context().close();
  });

  it('Tab reaches the current grid cell and the step list; → moves focus with the highlight', async () => {
    const page = await open('?example=ept-4k&access=0&step=3', '#counter');
    const focused = () => page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      return { cell: !!el.closest('table.grid'), row: !!el.closest('table.steplist'), label: el.getAttribute('aria-label') ?? el.querySelector('.sr-only')?.textContent ?? null, td: el.closest('td')?.getAttribute('aria-current') ?? null };
    });
    let f = await focused();
    for (let i = 0; i < 40 && !f.cell; i++) { await page.keyboard.press('Tab'); f = await focused(); }
    expect(f.cell).toBe(true);
    expect(f.td).toBe('step');
    expect(f.label).toMatch(/step 3/);
    await page.keyboard.press('ArrowRight');
    f = await focused();
    expect(f.cell).toBe(true);
    expect(f.label).toMatch(/step 4/);
    expect(await page.textContent('#counter [data-field="step"]')).toBe('4');
    for (let i = 0; i < 40 && !f.row; i++) { await page.keyboard.press('Tab'); f = await focused(); }
    expect(f.row).toBe(true);
    expect(f.label).toMatch(/^step 4: /);
    await page.keyboard.press('ArrowRight');
    expect((await focused()).label).toMatch(/^step 5: /);
    await page.context().close();
  });
});
