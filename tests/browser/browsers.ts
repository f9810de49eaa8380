/* One test body, two browsers: Debian's chromium through playwright-core (CDP) and Debian's
 * Firefox ESR through puppeteer-core (WebDriver BiDi). A page here offers only what both
 * drivers do the same way (go to a URL, wait for a selector or a condition, click, click a
 * button by its name, type, press keys, pick an option, read the DOM, take a screenshot),
 * and collects what a learner should never meet: console errors, uncaught exceptions,
 * Content-Security-Policy violations, failed requests and HTTP errors. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { Browser as PwBrowser, Page as PwPage } from 'playwright-core';
import type { Browser as PpBrowser, Page as PpPage, ElementHandle } from 'puppeteer-core';
import { launchChromium } from '../../web/scripts/chromium.mjs';
import { launchFirefox } from '../../web/scripts/firefox.mjs';
import { ARTIFACTS, serveApp } from './chromium';

export type BrowserName = 'chromium' | 'firefox';
export const BROWSERS: BrowserName[] = ['chromium', 'firefox'];

export interface Tab {
  readonly browser: BrowserName;
  /** Console errors, uncaught exceptions, CSP violations, failed requests and HTTP errors
   * seen so far, in order. */
  readonly problems: string[];
  /** Every response the page received: its URL, status and Content-Encoding. */
  readonly responses: { url: string; status: number; encoding: string | null }[];
  goto(url: string): Promise<void>;
  waitFor(selector: string, timeoutMs?: number): Promise<void>;
  /** Waits until `fn(arg)`, evaluated in the page, is truthy (polled from here: the page's
   * CSP allows no eval, which the drivers' own waiting for a string would need). */
  waitUntil<A>(fn: (arg: A) => unknown, arg: A, timeoutMs?: number): Promise<void>;
  click(selector: string): Promise<void>;
  /** Clicks the button (inside `within`, if given) whose accessible name (aria-label, else
   * its text) is `name`; fails naming the buttons there are when none is. */
  clickButton(name: string, within?: string): Promise<void>;
  /** Replaces an input's value by typing `text` into it. */
  fill(selector: string, text: string): Promise<void>;
  select(selector: string, value: string): Promise<void>;
  press(key: string): Promise<void>;
  type(text: string): Promise<void>;
  text(selector: string): Promise<string | null>;
  count(selector: string): Promise<number>;
  evaluate<T, A = undefined>(fn: (arg: A) => T, arg?: A): Promise<Awaited<T>>;
  /** Evaluates script text in the page (axe-core's bundle). */
  evaluateScript(source: string): Promise<void>;
  url(): string;
  screenshot(name: string): Promise<void>;
  close(): Promise<void>;
}

/* A listener the page gets before its own scripts: a CSP violation becomes a console error,
 * which both drivers report. */
const CSP_TO_CONSOLE = `document.addEventListener('securitypolicyviolation', (e) =>
  console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI));`;

/* In the page: the button whose accessible name is `name`, or the names there are. */
function findButton([name, within]: [string, string | null]): HTMLElement | string {
  const root = within ? document.querySelector(within) : document;
  if (!root) return `nothing matches ${within}`;
  const buttons = [...root.querySelectorAll<HTMLElement>('button, [role="button"]')];
  const label = (b: HTMLElement) => (b.getAttribute('aria-label') ?? b.textContent ?? '').replace(/\s+/g, ' ').trim();
  return buttons.find((b) => label(b) === name) ?? `no button named "${name}"; there are: ${buttons.map(label).join(' | ')}`;
}

function withWaitUntil(tab: Omit<Tab, 'waitUntil'>): Tab {
  return Object.assign(tab, {
    async waitUntil<A>(fn: (arg: A) => unknown, arg: A, timeoutMs = 15_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        if (await tab.evaluate(fn, arg)) return;
        if (Date.now() > end) throw new Error(`${tab.browser}: still false after ${timeoutMs} ms: ${fn.toString()} (${JSON.stringify(arg)})`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  });
}

function shotPath(browser: BrowserName, name: string) {
  mkdirSync(ARTIFACTS, { recursive: true });
  return join(ARTIFACTS, `${browser}-${name}.png`);
}

/** A page's size, and whether it is a phone's (touch; in Chromium a mobile viewport too). */
export interface Screen { width?: number; height?: number; phone?: boolean }

/* What both drivers' pages report the same way (the events' names and the few methods read
 * here): console errors, uncaught exceptions, failed requests and HTTP errors become
 * problems; every response is kept with its status and encoding. */
interface Reporting {
  on(event: 'console', fn: (m: { type(): string; text(): string }) => void): unknown;
  on(event: 'pageerror', fn: (e: Error) => void): unknown;
  on(event: 'requestfailed', fn: (r: { url(): string; failure(): { errorText: string } | null }) => void): unknown;
  on(event: 'response', fn: (r: { url(): string; status(): number; headers(): Record<string, string> }) => void): unknown;
}
function watch(page: Reporting): { problems: string[]; responses: Tab['responses'] } {
  const problems: string[] = [];
  const responses: Tab['responses'] = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`exception: ${(e as Error).message ?? String(e)}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}: ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    responses.push({ url: r.url(), status: r.status(), encoding: r.headers()['content-encoding'] ?? null });
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return { problems, responses };
}

async function chromiumTab(browser: PwBrowser, { width = 1200, height = 900, phone = false }: Screen): Promise<Tab> {
  const page: PwPage = await browser.newPage({ viewport: { width, height }, ...(phone ? { isMobile: true, hasTouch: true } : {}) });
  const { problems, responses } = watch(page as unknown as Reporting);
  await page.addInitScript(CSP_TO_CONSOLE);
  return withWaitUntil({
    browser: 'chromium',
    problems,
    responses,
    goto: async (url) => { await page.goto(url); },
    waitFor: async (selector, timeout = 15_000) => { await page.waitForSelector(selector, { timeout }); },
    click: (selector) => page.click(selector),
    clickButton: async (name, within) => {
      const h = await page.evaluateHandle(findButton, [name, within ?? null] as [string, string | null]);
      const el = h.asElement();
      if (!el) throw new Error(String(await h.jsonValue()));
      await el.click();
    },
    fill: (selector, text) => page.fill(selector, text),
    select: async (selector, value) => { await page.selectOption(selector, value); },
    press: (key) => page.keyboard.press(key),
    type: (text) => page.keyboard.type(text),
    text: (selector) => page.textContent(selector),
    count: (selector) => page.locator(selector).count(),
    evaluate: (fn, arg) => page.evaluate(fn, arg as never) as never,
    evaluateScript: async (source) => { await page.evaluate(source); },
    url: () => page.url(),
    screenshot: async (name) => { await page.screenshot({ path: shotPath('chromium', name), fullPage: true }); },
    close: () => page.close(),
  });
}

async function firefoxTab(browser: PpBrowser, { width = 1200, height = 900, phone = false }: Screen): Promise<Tab> {
  const page: PpPage = await browser.newPage();
  await page.setViewport({ width, height, ...(phone ? { isMobile: true, hasTouch: true } : {}) });
  const { problems, responses } = watch(page as unknown as Reporting);
  await page.evaluateOnNewDocument(CSP_TO_CONSOLE);
  return withWaitUntil({
    browser: 'firefox',
    problems,
    responses,
    goto: async (url) => { await page.goto(url); },
    waitFor: async (selector, timeout = 15_000) => { await page.waitForSelector(selector, { timeout }); },
    click: (selector) => page.click(selector),
    clickButton: async (name, within) => {
      const h = await page.evaluateHandle(findButton, [name, within ?? null] as [string, string | null]);
      const el = h.asElement() as ElementHandle<Element> | null;
      if (!el) throw new Error(String(await h.jsonValue()));
      await el.click();
    },
    fill: (selector, text) => page.locator(selector).fill(text),
    select: async (selector, value) => { await page.select(selector, value); },
    press: (key) => page.keyboard.press(key as never),
    type: (text) => page.keyboard.type(text),
    text: (selector) => page.$eval(selector, (e) => e.textContent),
    count: async (selector) => (await page.$$(selector)).length,
    evaluate: (fn, arg) => page.evaluate(fn as never, arg) as never,
    evaluateScript: async (source) => { await page.evaluate(source); },
    url: () => page.url(),
    screenshot: async (name) => { await page.screenshot({ path: shotPath('firefox', name) as `${string}.png`, fullPage: true }); },
    close: () => page.close(),
  });
}

/** For one describe block: the built app served by the real class server and `name`
 * started before its tests, both stopped after them. `open()` gives a fresh page. */
export function appIn(name: BrowserName): { open: (screen?: Screen) => Promise<Tab>; readonly url: string; readonly version: string } {
  let app: Awaited<ReturnType<typeof serveApp>> | undefined;
  let pw: PwBrowser | undefined;
  let pp: PpBrowser | undefined;
  let version = '';
  beforeAll(async () => {
    app = await serveApp();
    if (name === 'chromium') { pw = await launchChromium(); version = `Chromium ${pw.version()}`; }
    else { pp = await launchFirefox(); version = (await pp.version()).replace('firefox/', 'Firefox ESR '); }
  }, 60_000);
  afterAll(async () => {
    await pw?.close();
    await pp?.close();
    await app?.close();
  }, 30_000);
  return {
    open: (screen = {}) => (name === 'chromium' ? chromiumTab(pw!, screen) : firefoxTab(pp!, screen)),
    get url() { return app!.url; },
    get version() { return version; },
  };
}
