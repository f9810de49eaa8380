/* The Lessons tab in headless Chromium: the index, a lesson with its live walk, an
 * exercise checked by the engine in the page, the language switch kept in the URL, a
 * lesson link and the teacher guide opening in place. */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { appInChromium, ARTIFACTS } from './chromium';

const session = appInChromium();
let page: Page;
const errors: string[] = [];

beforeAll(async () => {
  page = await session.browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
});

describe('lessons tab', () => {
  it('lists the seven lessons and opens one with its live 2-D walk', async () => {
    await page.goto(session.url + '?view=lessons&lang=en');
    await page.waitForSelector('.lessons-index');
    expect(await page.locator('.lessons-index li').count()).toBe(7);
    await page.getByRole('button', { name: 'EPT and NPT: the 2-D walk' }).click();
    await page.waitForSelector('figure.embedded-walk[data-scenario="ept-4k"]');
    expect(new URL(page.url()).searchParams.get('lesson')).toBe('ept-and-npt');
    expect(await page.locator('.katex').count()).toBeGreaterThan(0);
    // step the embedded walk: clicking a step in its list moves the highlight there
    const fig = page.locator('figure.embedded-walk[data-scenario="ept-4k"]');
    await fig.locator('table.steplist tbody tr').nth(6).click();
    await expect.poll(async () => fig.locator('tr[aria-current="step"] td').first().textContent()).toBe('7');
    // glossary terms carry their definitions
    expect(await page.locator('abbr.term[data-term="eptp"]').getAttribute('title')).toMatch(/EPT pointer/);
    await page.screenshot({ path: join(ARTIFACTS, 'lessons-ept-and-npt.png') });
  });

  it('checks an exercise with the engine in the page', async () => {
    const ex = page.locator('section.exercise[data-kind="count-refs"]').first();
    await ex.getByLabel('Your answer').fill('1');
    await ex.getByRole('button', { name: 'Check' }).click();
    const wrong = (await ex.getByRole('status').textContent())!;
    const right = /the engine says (\d+)/.exec(wrong)![1];
    await ex.getByLabel('Your answer').fill(right);
    await ex.getByRole('button', { name: 'Check' }).click();
    expect(await ex.getByRole('status').textContent()).toMatch(/^Correct\./);
  });

  it('switches to Japanese and back, keeps the choice in the URL, and opens other lessons and the teacher guide in place', async () => {
    await page.selectOption('.lang-picker select', 'ja');
    await page.waitForSelector('article.lesson[lang="ja"]');
    expect(new URL(page.url()).searchParams.get('lang')).toBe('ja');
    await page.screenshot({ path: join(ARTIFACTS, 'lessons-ept-and-npt-ja.png') });
    await page.selectOption('.lang-picker select', 'en');
    await page.waitForSelector('article.lesson[lang="en"]');
    expect(await page.locator('article.lesson h1').first().textContent()).toContain('EPT and NPT');
    await page.goto(session.url + '?view=lessons&lesson=vmfunc&lang=ja');
    await page.waitForSelector('article.lesson[lang="ja"] figure.embedded-walk');
    expect(await page.getByRole('note').count()).toBe(0);   // translated: no English fallback
    await page.locator('a.lesson-link[data-lesson="ept-and-npt"]').first().click();
    await page.waitForSelector('figure.embedded-walk[data-scenario="ept-4k"]');
    expect(new URL(page.url()).searchParams.get('lesson')).toBe('ept-and-npt');
    await page.goto(session.url + '?view=lessons&lang=zh');
    await page.getByRole('button', { name: '教师指南：用 vmemlab 开课' }).click();
    await page.waitForSelector('article.lesson[lang="zh"] h1');
    expect(new URL(page.url()).searchParams.get('lesson')).toBe('teacher-guide');
    expect(await page.locator('article.lesson h1').first().textContent()).toBe('教师指南');
    await page.screenshot({ path: join(ARTIFACTS, 'lessons-teacher-guide-zh.png'), fullPage: true });
    expect(errors).toEqual([]);
  });
});
