/* The Live guest tab in headless Chromium: it loads only when opened, restores the guest
 * from the saved state, the terminal shows a prompt and runs a typed command, and the
 * marked-page program's address is walked through the real guest tables (native and EPT).
 * Needs `make build` (web/dist) and the guest (public/guest, copied to web/dist/guest). */
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preview, type PreviewServer } from 'vite';
import { type Browser, type Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../browser/chromium';

const root = join(__dirname, '..', '..');
const dist = join(root, 'web', 'dist');
const ready = existsSync(join(dist, 'index.html')) && existsSync(join(root, 'public', 'guest', 'state.bin.zst')) && existsSync(CHROMIUM);

let server: PreviewServer;
let browser: Browser;
let page: Page;
const errors: string[] = [];
const requests: string[] = [];

describe.skipIf(!ready)('Live guest tab in Chromium', () => {
  beforeAll(async () => {
    // the guest assets are served next to the app (the top Makefile copies them after vite build)
    for (const d of ['guest', 'guest/pae']) {
      if (existsSync(join(dist, d, 'state.bin.zst')) || !existsSync(join(root, 'public', d, 'state.bin.zst'))) continue;
      mkdirSync(join(dist, d), { recursive: true });
      for (const f of ['bios.bin', 'state.bin.zst', 'vmlinuz', 'initramfs.cpio.gz']) cpSync(join(root, 'public', d, f), join(dist, d, f));
    }
    server = await preview({ configFile: join(root, 'web', 'vite.config.ts'), preview: { port: 0, host: '127.0.0.1', strictPort: false }, logLevel: 'silent' });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => requests.push(r.url()));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((r) => (server ? server.httpServer.close(() => r()) : r()));
  });

  it('loads nothing of the guest until the tab opens, then restores it to a prompt', async () => {
    const url = server.resolvedUrls!.local[0];
    await page.goto(url);
    await page.waitForSelector('#counter, [data-testid="walk-view"]');
    expect(requests.filter((r) => /guest\/|v86|LiveView/.test(r))).toEqual([]);
    await page.getByRole('button', { name: 'Live guest' }).click();
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
    expect(await page.locator('table.steplist td', { hasText: /^vmm_read$/ }).count()).toBe(2);
    expect(await page.locator('table.steplist td', { hasText: /^vmexit$/ }).count()).toBe(1);
    mkdirSync(join(root, 'tests', 'artifacts'), { recursive: true });
    await page.screenshot({ path: join(root, 'tests', 'artifacts', 'live-guest.png'), fullPage: true });
    expect(errors).toEqual([]);
  }, 60_000);

  it.skipIf(!existsSync(join(root, 'public', 'guest/pae', 'state.bin.zst')))('runs the PAE kernel and walks its 3-level tables', async () => {
    const p = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
    p.on('pageerror', (e) => errors.push(e.message));
    await p.goto(server.resolvedUrls!.local[0] + '?view=live&kernel=pae');
    await p.waitForSelector('body[data-live-ready="1"]', { timeout: 30_000 });
    await expect.poll(() => p.locator('#live-paging').innerText(), { timeout: 5_000 }).toContain('PAE');
    await p.click('#live-markpage');
    await expect.poll(() => p.locator('#live-outcome').count(), { timeout: 30_000 }).toBe(1);
    await p.selectOption('#live-mode', 'npt');
    await expect.poll(() => p.locator('#live-outcome').innerText()).toMatch(/ok · gpa 0x[0-9a-f]+ · hpa 0x[0-9a-f]+ · 14 references/);
    await p.screenshot({ path: join(root, 'tests', 'artifacts', 'live-guest-pae.png'), fullPage: true });
    expect(errors).toEqual([]);
  }, 60_000);
});
