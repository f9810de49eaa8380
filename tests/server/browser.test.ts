/* The Results tab in headless Chromium, served by the real class server (main.mjs in a
 * child process, SQLite in a temp folder, with its CSP and compression): a broken
 * file is refused with a message, a valid one is kept across a reload, a CPU model that
 * contains HTML is shown as text (no element, no dialog), and the class view draws its plots
 * with the student's own point marked. */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../browser/chromium';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClassServer } from '../../web/scripts/class-server.mjs';
import { resultWith, root } from './helpers';

const XSS = '<img src=x onerror=alert(1)>';
let server: Awaited<ReturnType<typeof startClassServer>>; let browser: Browser; let base: string;
const pageErrors: string[] = []; const dialogs: string[] = [];

beforeAll(async () => {
  expect(existsSync(join(root, 'web', 'dist', 'index.html')), 'build the app first: make build').toBe(true);
  server = await startClassServer({ env: { VMEMLAB_RATE_MAX: '0', VMEMLAB_UPLOAD_RATE: '0', VMEMLAB_CREATE_RATE: '0' } });
  base = server.url.replace(/\/$/, '');
  browser = await launchChromium();
}, 60_000);
afterAll(async () => { await browser?.close(); await server?.close(); });

/** A request to the server over HTTP, as a client makes it. */
async function api(method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(base + url, {
    method, headers: payload === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: payload === undefined ? undefined : typeof payload === 'string' ? payload : JSON.stringify(payload),
  });
  const text = await r.text();
  return { statusCode: r.status, json: () => JSON.parse(text) };
}
/** How many uploads the class holds, as its teacher sees them. */
async function countResults(code: string, teacherToken: string) {
  const r = await api('GET', `/api/classes/${code}/results`, undefined, { authorization: `Bearer ${teacherToken}` });
  expect(r.statusCode).toBe(200);
  const body = r.json();
  return (Array.isArray(body) ? body : body.results).length as number;
}

async function open(ctx: Awaited<ReturnType<Browser['newContext']>>, path: string): Promise<Page> {
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('dialog', (d) => { dialogs.push(d.message()); void d.dismiss(); });
  await page.goto(base + path);
  await page.waitForSelector('[data-testid=dropzone]');
  return page;
}
const file = (name: string, text: string) => ({ name, mimeType: 'application/json', buffer: Buffer.from(text) });

describe('Results tab in Chromium', () => {
  it('refuses a broken file with a message, keeps a good one across reloads, charts it', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const page = await open(ctx, '/?view=results');
    await page.setInputFiles('[data-testid=result-file]', file('broken.json', '{"format": "vmemlab-hw-lab-result", '));
    const msg = page.locator('[data-testid=results-message]');
    await expect.poll(() => msg.textContent()).toMatch(/broken\.json is not a valid hw-lab result.*not valid JSON \(line 1, column 37\)/);
    expect(await msg.getAttribute('role')).toBe('alert');
    await page.setInputFiles('[data-testid=result-file]', file('bad-field.json', resultWith((r) => { r.timer.freq_hz = 'fast' as never; })));
    await expect.poll(() => msg.textContent()).toMatch(/\/timer\/freq_hz: must be number/);
    expect(await page.locator('[data-testid=my-results] tbody tr').count()).toBe(0);

    await page.setInputFiles('[data-testid=result-file]', file('laptop.json', resultWith()));
    await expect.poll(() => msg.textContent()).toMatch(/Added laptop\.json/);
    await page.reload();
    await page.waitForSelector('[data-testid=my-results] tbody tr');
    expect(await page.locator('[data-testid=my-results] tbody tr').count()).toBe(1);
    // the fixture is a fenced-only result (hw-lab before the published method): one diamond, its fenced min
    expect(await page.locator('svg[data-chart=cpuid] path.mine').count()).toBe(1);
    expect(await page.locator('svg[data-chart=ptrchase] path').count()).toBeGreaterThan(2);
    expect(await page.locator('svg[data-chart=spec2006] rect').count()).toBeGreaterThan(60);
    mkdirSync(join(root, 'tests', 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(root, 'tests', 'artifacts', 'results-published.png'), fullPage: true });
    await ctx.close();
  });

  it('shows an HTML-laden CPU model as text and draws the class plots with my point', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const c = (await api('POST', '/api/classes', { name: `Lab ${XSS}` })).json();
    for (const cpu of ['Intel Core i7', 'Intel Core i7', 'AMD EPYC']) {
      const r = await api('POST', '/api/results', resultWith((x) => { x.probe.cpu.model_name = cpu; }), { 'x-vmemlab-class': c.code });
      expect(r.statusCode).toBe(201);
    }
    const mine = (await api('POST', '/api/results', resultWith((x) => { x.probe.cpu.model_name = XSS; }), { 'x-vmemlab-class': c.code })).json();
    const page = await open(ctx, `/?view=results&class=${c.code}&mine=${mine.id}#teacher=${c.teacher_token}`);
    // the fixture is a fenced-only result: the chart opens on the published method's minimum,
    // which it does not have
    await page.selectOption('select[aria-label="measure"]', 'cpuid_exit_cycles');
    await page.waitForSelector('[data-testid=class-view] svg[data-chart=class-strip] circle.point');
    // the chart opens grouped by hypervisor (as the teacher guide reads it); by CPU model here
    await page.selectOption('select[aria-label="group by"]', 'cpu_model');
    const cell = page.locator(`[data-testid=class-uploads] tr[data-id="${mine.id}"] td.cpu`);
    expect(await cell.textContent()).toBe(XSS);
    expect(await page.locator('[data-testid=class-view] img').count()).toBe(0);
    expect(await page.locator('img[src=x]').count()).toBe(0);
    expect(await page.locator('[data-testid=class-view] h3').textContent()).toContain(`Lab ${XSS}`);
    expect(await page.locator('svg[data-chart=class-strip] circle.point').count()).toBe(4);
    expect(await page.locator('svg[data-chart=class-strip] circle.mine').count()).toBe(1);
    expect(await page.locator('svg[data-chart=class-strip] g.box').count()).toBe(3);
    expect(await page.locator('svg[data-chart=class-strip] .group-axis text', { hasText: XSS }).count()).toBe(1);
    await page.selectOption('select[aria-label="group by"]', 'hypervisor');
    expect(await page.locator('svg[data-chart=class-strip] g.box').count()).toBe(1);
    // the teacher link stays in the address bar (a bookmark is the way back to the class);
    // the teacher can export and delete, and sees how students join: the link and its QR code
    expect(page.url()).toContain(`#teacher=${c.teacher_token}`);
    expect(await page.locator('[data-testid=join-link] input').inputValue()).toBe(`${base}/?view=results&class=${c.code}`);
    expect(await page.locator('[data-testid=join-qr] path').getAttribute('d')).toMatch(/^M4 4h7/);
    expect(await page.locator('[data-testid=join-loopback]').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Export CSV' }).count()).toBe(1);
    await page.screenshot({ path: join(root, 'tests', 'artifacts', 'results-class.png'), fullPage: true });
    await page.locator(`[data-testid=class-uploads] tr[data-id="${mine.id}"] button`).click();
    await expect.poll(() => page.locator('svg[data-chart=class-strip] circle.point').count()).toBe(3);
    expect(await countResults(c.code, c.teacher_token)).toBe(3);
    await ctx.close();
  });

  it('page upload to a class with the join code; no dialog or page error anywhere', async () => {
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    const c = (await api('POST', '/api/classes', { name: 'upload' })).json();
    const page = await open(ctx, '/?view=results');
    await page.setInputFiles('[data-testid=result-file]', file('vm.json', resultWith()));
    await expect.poll(() => page.locator('[data-testid=results-message]').textContent()).toMatch(/Added vm\.json/);
    await page.fill('[data-testid=join-code]', c.code.toLowerCase());
    await page.click('text=Open class');
    await page.waitForSelector('[data-testid=class-view]');
    await page.locator('[data-testid=class-view] .upload-row button').first().click();
    // the fixture is a fenced-only result: its point is on the fenced measure
    await page.selectOption('select[aria-label="measure"]', 'cpuid_exit_cycles');
    await page.waitForSelector('svg[data-chart=class-strip] circle.mine');
    expect(await countResults(c.code, c.teacher_token)).toBe(1);
    await ctx.close();
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
