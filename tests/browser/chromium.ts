/* One way to start the browser for every end-to-end test: Debian's chromium driven by
 * playwright-core, with the flags this machine's closed network needs (no background
 * connections, no component updates) and a fresh profile. */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { preview } from 'vite';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** The built app (web/dist) served by vite preview on a free port, for one test file. */
export async function serveApp(): Promise<{ url: string; close: () => Promise<void> }> {
  const root = join(__dirname, '..', '..');
  if (!existsSync(join(root, 'web', 'dist', 'index.html'))) throw new Error('build the app first: make build');
  if (!existsSync(CHROMIUM)) throw new Error('install Debian chromium (make setup does)');
  const server = await preview({ configFile: join(root, 'web', 'vite.config.ts'),
    preview: { port: 0, host: '127.0.0.1', strictPort: false }, logLevel: 'silent' });
  return {
    url: server.resolvedUrls!.local[0],
    close: () => new Promise<void>((r) => server.httpServer.close(() => r())),
  };
}

/** Where the browser tests put their screenshots. */
export const ARTIFACTS = join(__dirname, '..', 'artifacts');

/** For one test file: the built app served and Chromium started before its tests, both
 * stopped after them. Read `url` and `browser` inside tests and hooks. */
export function appInChromium(): { readonly url: string; readonly browser: Browser } {
  let app: Awaited<ReturnType<typeof serveApp>> | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    app = await serveApp();
    browser = await launchChromium();
    mkdirSync(ARTIFACTS, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });
  return { get url() { return app!.url; }, get browser() { return browser!; } };
}
