/* One way to start the browser for every end-to-end test: Debian's chromium driven by
 * playwright-core, with the flags this machine's closed network needs (no background
 * connections, no component updates) and a fresh profile. */
import { chromium, type Browser } from 'playwright-core';

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
  const { existsSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { preview } = await import('vite');
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
