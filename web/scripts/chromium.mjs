// Debian's chromium driven by playwright-core, the one way every browser test and benchmark
// starts it: the flags this machine's closed network needs (no background connections, no
// component updates) and a fresh profile. Never `npx playwright install` (no downloads).
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Counts what a page receives over the wire (compressed bodies plus headers, as Chromium's
 * network stack reports it), per URL path; returns the live Map. */
export async function wireBytes(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  const paths = new Map();
  const bytes = new Map();
  cdp.on('Network.responseReceived', (e) => paths.set(e.requestId, new URL(e.response.url).pathname));
  cdp.on('Network.loadingFinished', (e) => {
    const p = paths.get(e.requestId) ?? '?';
    bytes.set(p, (bytes.get(p) ?? 0) + e.encodedDataLength);
  });
  return bytes;
}
