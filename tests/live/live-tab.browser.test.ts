/* The Live guest tab in headless Chromium: it loads only when opened, restores the guest
 * from the saved state, the terminal shows a prompt and runs a typed command, and the
 * marked-page program's address is walked through the real guest tables (native and EPT).
 * Needs `make build` (web/dist and public/guest); served by the real class server, which
 * serves public/guest at /guest/. */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type Page } from 'playwright-core';
import { CHROMIUM, launchChromium, serveApp } from '../browser/chromium';

const root = join(__dirname, '..', '..');
const dist = join(root, 'web', 'dist');
const ready = existsSync(join(dist, 'index.html')) && existsSync(join(root, 'public', 'guest', 'state.bin.zst')) && existsSync(CHROMIUM);

let server: Awaited<ReturnType<typeof serveApp>>;
let browser: Browser;
let page: Page;
const errors: string[] = [];
const requests: string[] = [];

describe.skipIf(!ready)('Live guest tab in Chromium', () => {
  beforeAll(async () => {
    server = await serveApp();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => requests.push(r.url()));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('loads nothing of the guest until the tab opens, then restores it to a prompt', async () => {
    const url = server.url;
    await page.goto(url);
    await page.waitForSelector('#counter, [data-testid="walk-view"]');
    expect(requests.filter((r) => /guest\/|v86|LiveView/.test(r))).toEqual([]);
    // pointing at the tab fetches its code (not the guest), so the click finds it ready
    const tab = page.getByRole('button', { name: 'Live guest' });
    await tab.hover();
    await expect.poll(() => requests.some((r) => /LiveView-[\w-]+\.js$/.test(r)), { timeout: 10_000 }).toBe(true);
    expect(requests.filter((r) => /guest\/|\.wasm$/.test(r) && !/vmsim/.test(r))).toEqual([]);
    await tab.click();
    await page.waitForSelector('body[data-live-ready="1"]', { timeout: 30_000 });
    expect(requests.some((r) => r.endsWith('guest/state.bin.zst'))).toBe(true);
    expect(requests.some((r) => r.endsWith('guest/vmlinuz'))).toBe(false);
    const term = page.getByTestId('live-terminal');
    await expect.poll(() => term.innerText(), { timeout: 10_000 }).toContain('vmemlab#');
    await term.click();
    await page.keyboard.type('echo live-$((6*7))\n');
    await expect.poll(() => term.innerText(), { timeout: 15_000 }).toMatch(/^live-42$/m);
    await expect.poll(() => page.locator('#live-paging').innerText(), { timeout: 5_000 }).toContain('32-bit');
  }, 60_000);

  it('walks the marked page through the real guest tables, natively and under EPT', async () => {
    await page.click('#live-markpage');
    await expect.poll(() => page.locator('#live-outcome').count(), { timeout: 30_000 }).toBe(1);
    const gva = await page.locator('#live-gva').inputValue();
    expect(gva).toMatch(/^0x[0-9a-f]{8}$/);
    await expect.poll(() => page.locator('#live-outcome').innerText()).toMatch(/ok · gpa 0x[0-9a-f]+ · 2 references/);
    await expect(page.getByTestId('walk-view').count()).resolves.toBe(1);
    await page.selectOption('#live-mode', 'ept');
    await expect.poll(() => page.locator('#live-outcome').innerText()).toMatch(/ok · gpa 0x[0-9a-f]+ · hpa 0x[0-9a-f]+ · 14 references/);
    await page.selectOption('#live-mode', 'shadow');
    await expect.poll(() => page.locator('#live-shadow').innerText()).toMatch(/write-protects \d+ guest page-table pages/);
    // the engine's shadow mode on the real tables: the first touch exits, the VMM reads the
    // guest's 2 entries in software, and the retried walk of the PAE-format shadow reads 2
    await expect.poll(() => page.locator('#live-outcome').innerText()).toMatch(/ok · gpa 0x[0-9a-f]+ · hpa 0x[0-9a-f]+ · 2 references/);
    expect(await page.locator('table.steplist td', { hasText: /^VMM read$/ }).count()).toBe(2);
    expect(await page.locator('table.steplist td', { hasText: /^VM exit$/ }).count()).toBe(1);
    mkdirSync(join(root, 'tests', 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(root, 'tests', 'artifacts', 'live-guest.png'), fullPage: true });
    expect(errors).toEqual([]);
  }, 60_000);

  it.skipIf(!existsSync(join(root, 'public', 'guest/pae', 'state.bin.zst')))('runs the PAE kernel and walks its 3-level tables', async () => {
    const p = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(server.url + '?view=live&kernel=pae');
    await p.waitForSelector('body[data-live-ready="1"]', { timeout: 30_000 });
    await expect.poll(() => p.locator('#live-paging').innerText(), { timeout: 5_000 }).toContain('PAE');
    await p.click('#live-markpage');
    await expect.poll(() => p.locator('#live-outcome').count(), { timeout: 30_000 }).toBe(1);
    // Intel EPT keeps the PDPTEs in registers (14 references); AMD NPT reads the PDPTE
    // through the nested walk every time (19)
    await p.selectOption('#live-mode', 'ept');
    await expect.poll(() => p.locator('#live-outcome').innerText()).toMatch(/ok · gpa 0x[0-9a-f]+ · hpa 0x[0-9a-f]+ · 14 references/);
    await p.selectOption('#live-mode', 'npt');
    await expect.poll(() => p.locator('#live-outcome').innerText()).toMatch(/ok · gpa 0x[0-9a-f]+ · hpa 0x[0-9a-f]+ · 19 references/);
    expect(await p.locator("#live-pdpte").innerText()).toContain("no PDPTE registers");
    await p.screenshot({ path: join(root, 'tests', 'artifacts', 'live-guest-pae.png'), fullPage: true });
    expect(errors).toEqual([]);
  }, 60_000);

  it('a cold boot shows the kernel booting, with the seconds so far and the measured figure', async () => {
    const p = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(server.url + '?view=live&boot=cold');
    const progress = p.locator('.live-progress[role="status"]');
    await expect.poll(() => progress.innerText(), { timeout: 20_000 }).toMatch(/^Cold boot: \d+ s so far.*Measured: \d+ s to the prompt in Chromium/);
    // the kernel's own messages scroll in the console while it boots, long before the prompt
    // (its timestamped lines: on a loaded machine "Linux version" may have scrolled out of
    // the visible rows by the time the page is looked at)
    const term = p.getByTestId('live-terminal');
    await expect.poll(() => term.innerText(), { timeout: 30_000 }).toMatch(/Linux version 6\.1\.|^\[\s*\d+\.\d{6}\] /m);
    expect(await p.evaluate(() => document.body.dataset.liveReady)).toBeUndefined();
    const first = Number((await progress.innerText()).match(/(\d+) s so far/)![1]);
    await p.waitForTimeout(1600);
    if (await progress.count()) expect(Number((await progress.innerText()).match(/(\d+) s so far/)![1])).toBeGreaterThan(first);
    await p.waitForSelector('body[data-live-ready="1"]', { timeout: 120_000 });
    // the page is ready once the serial line has shown the prompt; the terminal draws it in
    // its own next frame (later still on a loaded machine)
    await expect.poll(() => term.innerText(), { timeout: 10_000 }).toContain('vmemlab#');
    await p.close();
    expect(errors).toEqual([]);
  }, 180_000);
});
