/* The built page in real headless Chromium: the WebAssembly engine loads over HTTP and
 * the walk it shows matches what the native CLI computes for the same example. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preview, type PreviewServer } from 'vite';
import { chromium, type Browser, type Page } from 'playwright-core';

const root = join(__dirname, '..', '..');
const artifacts = join(root, 'tests', 'artifacts');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

let server: PreviewServer;
let browser: Browser;
let page: Page;
let url: string;

function nativeRefs(example: string): number {
  const p = spawnSync(join(root, 'wasm-core', 'build', 'vmsim'), ['run', join(root, 'wasm-core', 'examples', example)], {
    encoding: 'utf8',
  });
  return JSON.parse(p.stdout).accesses[0].memory_refs;
}

beforeAll(async () => {
  expect(existsSync(join(root, 'web', 'dist', 'index.html')), 'build the page first: make build').toBe(true);
  expect(existsSync(CHROMIUM), 'install Debian chromium (make setup does)').toBe(true);
  server = await preview({
    configFile: join(root, 'web', 'vite.config.ts'),
    preview: { port: 0, host: '127.0.0.1', strictPort: false },
    logLevel: 'silent',
  });
  url = server.resolvedUrls!.local[0];
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext();
  page = await context.newPage();
  mkdirSync(artifacts, { recursive: true });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((r) => (server ? server.httpServer.close(() => r()) : r()));
});

describe('first page in Chromium', () => {
  it('loads the WASM engine and shows the 24-reference EPT walk', async () => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url);
    await page.waitForSelector('#refs');
    expect(await page.textContent('#status')).toMatch(/^vmsim \d/);
    expect(Number(await page.textContent('#refs'))).toBe(nativeRefs('ept-4k.json'));
    expect(await page.locator('tbody tr').count()).toBe(28); // 24 reads + 4 guest A/D writes
    await page.screenshot({ path: join(artifacts, 'first-page-ept-4k.png'), fullPage: true });
    expect(errors).toEqual([]);
  });

  it('switching examples re-runs the engine in the page', async () => {
    for (const [file, label] of [['ept-5level.json', 'ept-5level'], ['npt-fault-walk.json', 'npt-fault-walk']]) {
      const value = await page.locator('#example option', { hasText: label }).first().getAttribute('value');
      await page.selectOption('#example', value!);
      await expect.poll(async () => Number(await page.textContent('#refs'))).toBe(nativeRefs(file));
    }
    expect(await page.textContent('#summary')).toContain('npt_fault');
  });
});
