/* The Results tab's layout in headless Chromium: chart labels are never cut at the chart's
 * edge (a long group name, such as an older hw-lab's fenced cpuid figure, wraps left of the
 * axis), in "Your program" every row's Remove button lines up with the others, on a phone
 * the teacher's uploads table scrolls inside its own box (the page never sideways), and a
 * class deleted by its teacher takes its shared traces out of the teacher's trace list. */
import { readFileSync } from 'node:fs';
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

  const newClass = async (name: string) => (await fetch(`${session.url}api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }) })).json() as Promise<{ code: string; teacher_token: string }>;
  const teacherPage = (c: { code: string; teacher_token: string }) => `${session.url}?view=results&class=${c.code}&lang=en#teacher=${c.teacher_token}`;

  it('390x844: the teacher\'s uploads table scrolls inside its box; the page does not scroll sideways', async () => {
    const c = await newClass('phone lab');
    const result = readFileSync(join(root, 'tests', 'server', 'fixtures', 'result-quick.json'), 'utf8');
    for (const who of ['Ana', 'Bo Martin-Yamada']) {
      const up = await fetch(`${session.url}api/results`, { method: 'POST', body: result, headers: { 'content-type': 'application/json', 'x-vmemlab-class': c.code, 'x-vmemlab-name': encodeURIComponent(who) } });
      expect(up.status, await up.text()).toBe(201);
    }
    const page = await session.browser.newPage({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await page.goto(teacherPage(c));
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="class-uploads"] tbody tr').length === 2, null, { timeout: 30_000 });
    const at = await page.evaluate(() => {
      const table = document.querySelector<HTMLElement>('[data-testid="class-uploads"]')!;
      const box = table.parentElement!;
      const b = box.getBoundingClientRect();
      const before = box.scrollLeft;
      box.scrollLeft = 10_000;
      return {
        page: document.documentElement.scrollWidth, w: innerWidth, overflow: getComputedStyle(box).overflowX,
        box: { left: Math.round(b.left), right: Math.round(b.right), client: box.clientWidth, scroll: box.scrollWidth },
        table: Math.round(table.getBoundingClientRect().width), before, after: box.scrollLeft,
      };
    });
    await page.close();
    const where = JSON.stringify(at);
    // (a mobile viewport widens itself to content wider than the phone: innerWidth tells)
    expect(at.w, `the page is as wide as the phone: ${where}`).toBe(390);
    expect(at.page, `the page does not scroll sideways: ${where}`).toBeLessThanOrEqual(390);
    expect(at.box.left, where).toBeGreaterThanOrEqual(0);
    expect(at.box.right, where).toBeLessThanOrEqual(390);
    expect(at.overflow, where).toBe('auto');
    // wider than the phone: it scrolls, inside its box
    expect(at.box.scroll, where).toBeGreaterThan(at.box.client);
    expect(at.before, where).toBe(0);
    expect(at.after, where).toBeGreaterThan(0);
  }, 90_000);

  it('a class deleted by its teacher takes its shared traces out of the teacher\'s trace list', async () => {
    const c = await newClass('trace lab');
    const page = await session.browser.newPage({ viewport: { width: 1200, height: 900 } });
    await page.goto(teacherPage(c));
    await page.waitForSelector('[data-testid="trace-panel"]');
    await page.setInputFiles('[data-testid="trace-file"]', join(root, 'hw-lab', 'build', 'traces', 'pointer-chase.vmtrace'));
    await page.waitForSelector('[data-testid="trace-charts"] svg rect', { timeout: 60_000 });
    await page.click(`button:has-text("Share with class ${c.code}")`);
    await page.waitForSelector(`text=shared with class ${c.code}`);
    // the teacher's page again: the shared trace comes from the class
    await page.reload();
    await page.waitForSelector('[data-testid="trace-list"] li[data-source="class"]', { timeout: 30_000 });
    await page.click('button:has-text("Delete class…")');
    await page.locator('[data-testid="class-delete-confirm"] button.danger').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="trace-list"] li[data-source="class"]').length === 0, null, { timeout: 30_000 });
    const left = await page.$$eval('[data-testid="trace-list"] li', (lis) => lis.map((li) => li.getAttribute('data-source')));
    await page.close();
    expect(left).not.toContain('class');
    expect((await fetch(`${session.url}api/classes/${c.code}/traces`)).status).toBe(404);
  }, 120_000);
});
