/* Uploading from the Results tab in headless Chromium against the real class server
 * (main.mjs, SQLite): a double click stores one upload, the name the student chose reaches
 * the teacher's table, several files dropped at once each get their outcome, and the
 * charts' labels fit inside their drawings (the pointer-chase legend, the class plot's
 * group names). */
import { type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../browser/chromium';
import { startClassServer } from '../../web/scripts/class-server.mjs';
import { resultWith } from './helpers';

let browser: Browser; let base: string; let server: Awaited<ReturnType<typeof startClassServer>>;
const pageErrors: string[] = [];

beforeAll(async () => {
  server = await startClassServer();
  base = server.url.replace(/\/$/, '');
  browser = await launchChromium();
}, 60_000);
afterAll(async () => { await browser?.close(); await server?.close(); });

const file = (name: string, text: string) => ({ name, mimeType: 'application/json', buffer: Buffer.from(text) });
async function open(path: string): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(base + path);
  await page.waitForSelector('[data-testid=dropzone]');
  return page;
}
const api = async (path: string, init?: RequestInit) => (await fetch(base + path, init)).json();

describe('uploads from the page, in Chromium, to the real class server', () => {
  it('double click: one upload, with the student\'s name for the teacher; every dropped file gets its outcome', async () => {
    const c = await api('/api/classes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"lab"}' });
    const page = await open(`/?view=results&class=${c.code}`);
    const later = resultWith((r) => { r.created_utc = '2026-11-23T09:00:00Z'; });
    await page.setInputFiles('[data-testid=result-file]', [file('broken.json', '{"a":'), file('laptop.json', resultWith()), file('laptop-2.json', later)]);
    const outcomes = page.locator('[data-testid=results-message] [data-testid=file-outcome]');
    await expect.poll(() => outcomes.count()).toBe(3);
    expect(await outcomes.nth(0).textContent()).toMatch(/^broken\.json is not a valid hw-lab result/);
    expect(await outcomes.nth(1).textContent()).toMatch(/^Added laptop\.json/);
    expect(await outcomes.nth(2).textContent()).toMatch(/^Added laptop-2\.json/);

    await page.fill('[data-testid=student-name]', 'Ana María');
    const first = page.locator('[data-testid=class-view] .upload-row button').first();
    await first.dblclick();
    await page.waitForSelector('[data-testid=class-uploads] tbody tr');
    await expect.poll(() => first.isEnabled()).toBe(true);
    await first.click(); // later, once more: the server answers with the same upload
    await expect.poll(() => page.locator('.class-panel [role=status]').textContent()).toMatch(/was already uploaded/);
    expect((await api(`/api/classes/${c.code}`)).uploads).toBe(1);

    // the teacher's view: the name, and the short id for an upload without one
    await fetch(`${base}/api/results`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-vmemlab-class': c.code }, body: later });
    const teacher = await open(`/?view=results&class=${c.code}#teacher=${c.teacher_token}`);
    await expect.poll(() => teacher.locator('[data-testid=class-uploads] td.who').allTextContents()).toEqual(['Ana María', expect.stringMatching(/^#[A-Za-z0-9_-]{6}$/)]);
    expect(pageErrors).toEqual([]);
  });

  it('labels fit their charts: the whole pointer-chase legend, the class plot\'s group names', async () => {
    const c = await api('/api/classes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"fit"}' });
    const full = resultWith((r) => {
      r.mode = 'full';
      r.probe.cpu.model_name = 'Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz';
      for (const b of r.benchmarks) for (const k of (b.cases ?? []) as { params?: Record<string, number> }[]) { if (k.params?.bytes) k.params.bytes *= 16; if (k.params?.working_set_bytes) k.params.working_set_bytes *= 16; }
    });
    for (const body of [resultWith(), full]) await fetch(`${base}/api/results`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-vmemlab-class': c.code }, body });
    const page = await open(`/?view=results&class=${c.code}`);
    await page.setInputFiles('[data-testid=result-file]', [file('a.json', resultWith()), file('b.json', full)]);
    await page.waitForSelector('svg[data-chart=ptrchase] g.legend');
    const inside = (chart: string, sel: string) => page.evaluate(([chart, sel]) => {
      const svg = document.querySelector(`svg[data-chart=${chart}]`) as SVGSVGElement;
      const vb = svg.viewBox.baseVal;
      return [...svg.querySelectorAll(sel)].map((e) => {
        const b = (e as SVGGraphicsElement).getBBox();
        const m = (e as SVGGraphicsElement).getCTM()!; const s = svg.getCTM()!.inverse().multiply(m);
        const x0 = s.a * b.x + s.e; const x1 = s.a * (b.x + b.width) + s.e;
        return { text: e.textContent, fits: x0 >= vb.x - 0.5 && x1 <= vb.x + vb.width + 0.5 };
      });
    }, [chart, sel] as const);
    const legend = await inside('ptrchase', 'g.legend text');
    expect(legend.length).toBe(4);
    expect(legend.filter((l) => !l.fits)).toEqual([]);
    expect(legend.map((l) => l.text)).toContain('Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz · kvm · 2026-11-22 05:07 4 KiB');
    await page.selectOption('select[aria-label="measure"]', 'ptrchase_4k_largest_ns');
    await page.waitForSelector('svg[data-chart=class-strip] .group-axis tspan');
    const groups = await inside('class-strip', '.group-axis .tick text');
    expect(groups.length).toBe(2);
    expect(groups.filter((g) => !g.fits)).toEqual([]);
    expect(await page.locator('[data-testid=size-note]').textContent()).toMatch(/each run size has its own rows and column/);
    expect(pageErrors).toEqual([]);
  });
});
