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
  it('lists the eight lessons and opens one with its live 2-D walk', async () => {
    await page.goto(session.url + '?view=lessons&lang=en');
    await page.waitForSelector('.lessons-index');
    expect(await page.locator('.lessons-index li').count()).toBe(8);
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

  it('checks an exercise with the engine in the page: a hint for a wrong answer, the answer only after three tries', async () => {
    const ex = page.locator('section.exercise[data-kind="count-refs"]').first();
    const status = ex.getByRole('status');
    await ex.getByRole('button', { name: 'Check' }).click();
    expect(await status.textContent()).toMatch(/^No answer yet/);
    expect(await ex.locator('.hint').count()).toBe(1);
    for (const [i, wrong] of ['1', '2', '3'].entries()) {
      await ex.getByLabel('Your answer').fill(wrong);
      await ex.getByRole('button', { name: 'Check' }).click();
      if (i < 2) expect(await status.textContent()).toBe(`Not quite: that was try ${i + 1} of 3. Look at the hint and try again.`);
    }
    const revealed = (await status.textContent())!;
    const right = /engine's answer: (\d+)\./.exec(revealed)![1];
    expect(['1', '2', '3']).not.toContain(right);
    // "Another one" gives a fresh exercise of this card only; the next card keeps its seed
    const next = page.locator('section.exercise').nth(1);
    const nextSeed = await next.getAttribute('data-seed');
    const seed = Number(await ex.getAttribute('data-seed'));
    await ex.getByRole('button', { name: 'Another one' }).click();
    await expect.poll(() => page.locator('section.exercise[data-kind="count-refs"]').first().getAttribute('data-seed')).toBe(String(seed + 1));
    expect(await next.getAttribute('data-seed')).toBe(nextSeed);
    expect(new URL(page.url()).searchParams.get('seeds')).toBe(String(seed + 1));
    const fresh = page.locator('section.exercise[data-kind="count-refs"]').first();
    expect(await fresh.getByRole('status').textContent()).toBe('');
    await fresh.getByRole('button', { name: 'Show answer' }).click();
    expect(await fresh.getByRole('status').textContent()).toMatch(/^The engine's answer: \d+\.$/);
  });

  it('steps an embedded walk with its buttons and with the keys once it has focus', async () => {
    const fig = page.locator('figure.embedded-walk[data-scenario="ept-4k"]');
    const counter = () => fig.locator('.counter [data-field="step"]').textContent();
    await fig.getByRole('button', { name: 'first step (Home)' }).click();
    expect(await counter()).toBe('0');
    await fig.getByRole('button', { name: 'step forward (→)' }).click();
    expect(await counter()).toBe('1');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    expect(await counter()).toBe('3');
    expect(await fig.locator('td[aria-current="step"]').count()).toBe(1);
    await page.keyboard.press('End');
    expect(await counter()).toBe('28');
    const ids = await page.evaluate(() => [...document.querySelectorAll('[id]')].map((e) => e.id));
    expect(ids.filter((x, i) => ids.indexOf(x) !== i)).toEqual([]);
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

  it('a walk grid to fill in (lesson 3) and the teacher\'s answer sheet, printed without its controls', async () => {
    await page.goto(session.url + '?view=lessons&lang=en&lesson=ept-and-npt&seed=1');
    const card = page.locator('section.exercise[data-kind="walk-grid"]');
    await card.waitFor();
    const refs = await card.locator('select').count();
    expect([24, 29, 35]).toContain(refs);   // (n + 1)(m + 1) - 1 for 4 or 5 levels each
    await card.locator('select').first().selectOption('g1');
    await card.getByRole('button', { name: 'Check' }).click();
    await expect.poll(() => card.getByRole('status').textContent()).toMatch(new RegExp(`\\d+ of ${refs + 2} cells right`));
    await card.getByRole('button', { name: 'Show answer' }).click();
    await expect.poll(() => card.locator('select').first().inputValue()).toMatch(/^n[45]$/);
    await card.screenshot({ path: join(ARTIFACTS, 'lessons-walk-grid.png') });
    await page.goto(session.url + '?view=lessons&lang=en&lesson=ept-and-npt&seed=1&sheet=3');
    await page.waitForSelector('.answer-sheet table[data-state="done"]', { timeout: 60_000 });
    expect(await page.locator('.answer-sheet tbody tr').count()).toBe(3);
    expect(await page.locator('.answer-sheet .sheet-answer').count()).toBe(3 * 6);
    await page.emulateMedia({ media: 'print' });
    expect(await page.locator('.answer-sheet .sheet-controls').isVisible()).toBe(false);
    expect(await page.locator('.answer-sheet table').isVisible()).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'lessons-answer-sheet-print.png'), fullPage: true });
    await page.emulateMedia({ media: 'screen' });
    expect(errors).toEqual([]);
  });
});
