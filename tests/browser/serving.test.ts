/* What the class server sends and what the page makes of it, in Chromium: every tab opens
 * with no console error, no uncaught exception and no Content-Security-Policy violation
 * (KaTeX's fonts, v86, the engine's wasm, workers all allowed by what the CSP says);
 * text and wasm assets arrive compressed; hashed assets are cached for good and the
 * rest revalidated. */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { appInChromium } from './chromium';

const session = appInChromium();

interface Seen { console: string[]; errors: string[]; csp: string[]; failed: string[]; responses: { url: string; status: number; headers: Record<string, string> }[] }

async function open(query: string, ready: (p: Page) => Promise<unknown>): Promise<Seen> {
  const ctx = await session.browser.newContext();
  const page = await ctx.newPage();
  const seen: Seen = { console: [], errors: [], csp: [], failed: [], responses: [] };
  page.on('console', (m) => { if (m.type() === 'error') seen.console.push(m.text()); });
  page.on('pageerror', (e) => seen.errors.push(e.message));
  page.on('requestfailed', (r) => seen.failed.push(`${r.url()}: ${r.failure()?.errorText}`));
  page.on('response', (r) => seen.responses.push({ url: r.url(), status: r.status(), headers: r.headers() }));
  await page.exposeFunction('__cspViolation', (s: string) => seen.csp.push(s));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      (window as unknown as { __cspViolation: (s: string) => void }).__cspViolation(`${e.violatedDirective} blocked ${e.blockedURI}`));
  });
  await page.goto(session.url + query);
  await ready(page);
  await page.waitForLoadState('networkidle');
  await page.waitForTimeout(300); // late font loads and their violations
  await ctx.close();
  return seen;
}

const TABS: [string, string, (p: Page) => Promise<unknown>][] = [
  ['walk', '?example=ept-4k&access=0&step=7', (p) => p.waitForSelector('body[data-ready="1"]')],
  ['memory', '?view=memory&example=ept-4k', (p) => p.waitForSelector('section.memory svg, section.memory ul')],
  ['compare', '?view=compare&example=ept-4k', (p) => p.waitForSelector('[data-testid="compare-view"] table')],
  ['playground', '?view=playground', (p) => p.waitForSelector('.cm-editor, textarea', { timeout: 20_000 })],
  ['results', '?view=results', (p) => p.waitForSelector('.results-page')],
  ['lessons (KaTeX)', '?view=lessons&lesson=ept-and-npt&lang=en', (p) => p.waitForSelector('.katex')],
  ['lessons in Japanese', '?view=lessons&lesson=four-address-spaces&lang=ja', (p) => p.waitForSelector('.lesson')],
  ['live guest', '?view=live', (p) => p.waitForSelector('body[data-live-ready="1"]', { timeout: 60_000 })],
];

describe('every tab, served by the class server', () => {
  const all: Seen[] = [];
  for (const [name, query, ready] of TABS) {
    it(`${name}: no console error, no exception, no CSP violation, no failed request`, async () => {
      const seen = await open(query, ready);
      all.push(seen);
      expect(seen.csp).toEqual([]);
      expect(seen.console).toEqual([]);
      expect(seen.errors).toEqual([]);
      expect(seen.failed).toEqual([]);
      expect(seen.responses.filter((r) => r.status >= 400).map((r) => `${r.status} ${r.url}`)).toEqual([]);
    }, 90_000);
  }

  it('sends text and wasm compressed, caches hashed assets for good and revalidates the rest', () => {
    const rs = all.flatMap((s) => s.responses).filter((r) => r.status === 200 && new URL(r.url).origin === new URL(session.url).origin);
    const byPath = new Map(rs.map((r) => [new URL(r.url).pathname, r.headers]));
    const compressible = [...byPath].filter(([p]) => /\.(js|css|wasm|html)$|\/$/.test(p));
    expect(compressible.length).toBeGreaterThan(5);
    for (const [p, h] of compressible) expect([p, h['content-encoding']]).toEqual([p, 'br']);
    // the engine's wasm and v86's both, as files Chromium compiles while they stream in
    expect([...byPath.keys()].filter((p) => /\.wasm$/.test(p)).length).toBeGreaterThanOrEqual(2);
    for (const [p, h] of byPath) {
      if (/^\/assets\//.test(p)) expect([p, h['cache-control']]).toEqual([p, 'public, max-age=31536000, immutable']);
      if (p === '/' || /^\/guest\//.test(p)) expect([p, h['cache-control']]).toEqual([p, 'no-cache']);
    }
    // KaTeX's fonts are files of our own origin, never inlined data: URLs
    expect([...byPath.keys()].some((p) => /KaTeX_.*\.woff2$/.test(p))).toBe(true);
  });

});

describe('the class server without the app\'s limits getting in the way', () => {
  it('serves the app\'s files to one address far beyond the API rate limit (a classroom behind one NAT)', async () => {
    const asset = (await (await fetch(session.url)).text()).match(/assets\/index-[\w-]+\.js/)![0];
    const codes = new Set<number>();
    for (let i = 0; i < 700; i++) {
      const res = await fetch(session.url + asset, { headers: { 'accept-encoding': 'br' } });
      await res.arrayBuffer();
      codes.add(res.status);
    }
    expect([...codes]).toEqual([200]);
  }, 60_000);
});
