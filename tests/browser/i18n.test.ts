/* The built app in Chromium, in Japanese and in Chinese: every tab (the live guest's after
 * it boots) shows no English prose, apart from text marked lang="en" (engine, browser and
 * server messages, cited titles); the language survives a reload and the picker's choice is
 * remembered. Screenshots: tests/artifacts/i18n-<lang>-<view>.png. */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { appInChromium, ARTIFACTS } from './chromium';
import { englishRuns } from '../../web/src/test/english';

const session = appInChromium();
const errors: string[] = [];

/* What a reader sees: innerText of the page without lang="en" parts, plus titles and labels. */
const visible = (page: Page) => page.evaluate(() => {
  const body = document.body.cloneNode(true) as HTMLElement;
  body.querySelectorAll('[lang="en"], script, style, code, pre, .xterm, .cm-editor, textarea').forEach((n) => n.remove());
  const attrs = [...document.querySelectorAll('[title],[aria-label],[placeholder]')]
    .filter((e) => !e.closest('[lang="en"], .xterm'))
    .map((e) => ['title', 'aria-label', 'placeholder'].map((a) => e.getAttribute(a) ?? '').join(' | '));
  return { text: body.textContent ?? '', attrs: attrs.join(' | ') };
});

const VIEWS: [string, string][] = [
  ['walk', '?example=ept-violation&access=0&step=5'],
  ['memory', '?view=memory&example=shadow&access=0&step=3'],
  ['compare', '?view=compare'],
  ['playground', '?view=playground'],
  ['results', '?view=results'],
  ['lessons', '?view=lessons&lesson=ept-and-npt'],
  ['live', '?view=live'],
];
const READY: Record<string, string> = {
  walk: '#counter', memory: 'svg.memsvg', compare: 'tr[data-mode]', playground: '[data-testid="playground"]',
  results: '.results-page', lessons: '.prose', live: 'body[data-live-ready="1"]',
};

describe.each(['ja', 'zh'])('the app in %s', (lang) => {
  let page: Page;
  beforeAll(async () => {
    page = await session.browser.newPage({ viewport: { width: 1200, height: 900 } });
    page.on('pageerror', (e) => errors.push(e.message));
  });
  afterAll(async () => { await page.close(); });

  for (const [view, query] of VIEWS) {
    it(`${view}: no English prose`, async () => {
      await page.goto(`${session.url}${query}&lang=${lang}`);
      await page.waitForSelector(READY[view], { timeout: view === 'live' ? 60_000 : 15_000 });
      if (view === 'live') await page.waitForTimeout(300);
      const { text, attrs } = await visible(page);
      expect(text.length).toBeGreaterThan(50);
      expect(englishRuns(text), `${lang} ${view}`).toEqual([]);
      expect(englishRuns(attrs, [/^(?:Home|End|Space)$/]), `${lang} ${view}: titles and labels`).toEqual([]);
      await page.screenshot({ path: join(ARTIFACTS, `i18n-${lang}-${view}.png`), fullPage: true });
    }, 90_000);
  }

  it('keeps the picked language across a reload without the URL parameter', async () => {
    await page.goto(`${session.url}?example=ept-4k`);
    await page.selectOption('select.ui-lang', lang);
    await page.goto(`${session.url}?example=ept-4k`);
    await page.waitForSelector('#counter');
    expect(await page.inputValue('select.ui-lang')).toBe(lang);
    expect(await page.evaluate(() => document.documentElement.lang)).toBe(lang === 'zh' ? 'zh-Hans' : 'ja');
    expect(englishRuns(await page.title())).toEqual([]);
    expect(englishRuns((await visible(page)).text)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
