/* Every end-to-end test starts the browser one way (web/scripts/chromium.mjs, shared with
 * the benchmarks) and talks to the real class server (web/scripts/class-server.mjs). */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { Browser } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../web/scripts/chromium.mjs';
import { startClassServer } from '../../web/scripts/class-server.mjs';

export { CHROMIUM, launchChromium };

/** The built app served by the real class server (web/server/main.mjs, SQLite in a temp
 * folder) on a free port, for one test file: the compression, cache headers and CSP a
 * learner gets. */
export async function serveApp(env: Record<string, string> = {}): Promise<{ url: string; close: () => Promise<void> }> {
  const root = join(__dirname, '..', '..');
  if (!existsSync(join(root, 'web', 'dist', 'index.html'))) throw new Error('build the app first: make build');
  if (!existsSync(CHROMIUM)) throw new Error('install Debian chromium (make setup does)');
  const server = await startClassServer({ env });
  return { url: server.url, close: server.close };
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
  }, 30_000);
  return { get url() { return app!.url; }, get browser() { return browser!; } };
}
