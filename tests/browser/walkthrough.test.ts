/* The built app in real headless Chromium, checked against the native CLI: every step of
 * the ept-4k walk must highlight the cell, count and entry that `vmsim run` reports for
 * that step. Also keyboard control, shared URLs, a malformed scenario file, and a
 * screenshot of each view (tests/artifacts/walkthrough-*.png) for a human to look at. */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { appInChromium, ARTIFACTS } from './chromium';
import type { Result } from '../../wasm-core/js/types';

const root = join(__dirname, '..', '..');

const session = appInChromium();
const pageErrors: string[] = [];

function nativeRun(example: string): Result {
  const p = spawnSync(join(root, 'wasm-core', 'build', 'vmsim'), ['run', join(root, 'wasm-core', 'examples', example + '.json')], { encoding: 'utf8' });
  expect(p.status, p.stderr).toBe(0);
  return JSON.parse(p.stdout);
}

async function open(query: string, width = 1200, height = 900, ready = '#counter'): Promise<Page> {
  const page = await session.browser.newPage({ viewport: { width, height } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(session.url + query);
  await page.waitForSelector(ready);
  return page;
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `walkthrough-${name}.png`), fullPage: true });

/* What the page shows for the current step, read from the DOM. */
async function shown(page: Page) {
  return page.evaluate(() => {
    const cur = document.querySelectorAll<HTMLElement>('table.grid td[aria-current="step"]');
    const field = (f: string) => document.querySelector(`#entry [data-field="${f}"]`)?.textContent ?? null;
    return {
      cells: cur.length,
      row: cur[0]?.dataset.row ?? null,
      col: cur[0]?.dataset.col ?? null,
      cellText: cur[0]?.textContent ?? '',
      counter: Number(document.querySelector('#counter [data-field="step"]')!.textContent),
      entry: field('entry'),
      entryHpa: field('entry_hpa'),
      n: document.querySelector<HTMLElement>('#entry')?.dataset.n ?? null,
    };
  });
}

function expectStep(s: Awaited<ReturnType<typeof shown>>, step: Result['accesses'][0]['steps'][0]) {
  expect(s.counter).toBe(step.n);
  expect(s.n).toBe(String(step.n));
  expect(s.entry).toBe(step.entry);
  expect(s.entryHpa).toBe(step.entry_hpa);
  expect(s.cells).toBe(1);
  expect(s.row).toBe(String(step.dim === 'guest' ? step.level : step.stage));
  expect(s.col).toBe(step.dim === 'guest' ? 'G' : `N${step.level}`);
  if (step.ref !== null) expect(s.cellText).toContain(String(step.ref));
}


describe('walkthrough app in Chromium', () => {
  it('steps through the 24-reference EPT walk exactly as the native CLI traces it', async () => {
    const trace = nativeRun('ept-4k').accesses[0];
    expect(trace.memory_refs).toBe(24);
    const page = await open('?example=ept-4k&access=0&step=0');
    expect((await shown(page)).counter).toBe(0);
    for (const step of trace.steps) {
      await page.click('#next');
      expectStep(await shown(page), step);
      expect(new URL(page.url()).searchParams.get('step')).toBe(String(step.n));
    }
    expect(await page.isDisabled('#next')).toBe(true);
    expect(await page.textContent('#outcome [data-field="outcome"]')).toBe('translated');
    expect(await page.textContent('#outcome')).toContain(trace.hpa!);
    await page.keyboard.press('Home');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await shot(page, 'walk-ept-4k');
    await page.close();
  });

  it('keyboard: arrows, Home, End and Space drive the walk', async () => {
    const trace = nativeRun('ept-4k').accesses[0];
    const page = await open('?example=ept-4k&access=0&step=0');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    expectStep(await shown(page), trace.steps[2]);
    await page.keyboard.press('ArrowLeft');
    expectStep(await shown(page), trace.steps[1]);
    await page.keyboard.press('End');
    expect((await shown(page)).counter).toBe(trace.steps.length);
    await page.keyboard.press('Home');
    expect((await shown(page)).counter).toBe(0);
    await page.selectOption('select[aria-label="playback speed"]', '4');
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press(' ');
    await expect.poll(async () => (await shown(page)).counter, { timeout: 5000 }).toBeGreaterThanOrEqual(3);
    await page.keyboard.press(' ');
    const paused = (await shown(page)).counter;
    await page.waitForTimeout(500);
    expect((await shown(page)).counter).toBe(paused);
    expectStep(await shown(page), trace.steps[paused - 1]);
    await page.close();
  });

  it('a shared URL reopens the same step', async () => {
    const trace = nativeRun('ept-4k').accesses[0];
    const page = await open('?example=ept-4k&access=0&step=7');
    expectStep(await shown(page), trace.steps[6]);
    await page.reload();
    await page.waitForSelector('#counter');
    expectStep(await shown(page), trace.steps[6]);
    // Another example and access, through the URL alone.
    const npt = nativeRun('npt-fault-walk');
    const last = npt.accesses.length - 1;
    const p2 = await open(`?example=npt-fault-walk&access=${last}&step=${npt.accesses[last].steps.length}`);
    expect(await p2.textContent('#outcome')).toContain(npt.accesses[last].outcome === 'npt_fault' ? 'nested page fault' : '');
    await shot(p2, 'walk-npt-fault');
    await p2.close();
    await page.close();
  });

  it('a malformed scenario file shows the error and the app keeps working', async () => {
    const page = await open('?view=playground&example=ept-4k', 1200, 900, '[data-testid="playground"]');
    await page.waitForSelector('.cm-editor');
    await page.setInputFiles('[data-testid="file-input"]', { name: 'broken.json', mimeType: 'application/json', buffer: Buffer.from('{ "name": "broken", "mode": ') });
    await expect.poll(() => page.textContent('[data-testid="pg-message"]')).toMatch(/broken\.json: not valid JSON at line 1/);
    await page.click('[data-testid="run"]');
    expect(await page.textContent('[data-testid="pg-message"]')).toMatch(/Fix the problem listed below first/);
    await shot(page, 'playground-error');
    // A schema-valid scenario the engine rejects: its message, still no crash.
    const bad = { name: 'misaligned', mode: 'native', guest: { paging: '4level', mappings: [{ gva: '0x400001', gpa: '0x200000' }] }, accesses: [] };
    await page.setInputFiles('[data-testid="file-input"]', { name: 'misaligned.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bad)) });
    await page.click('[data-testid="run"]');
    await expect.poll(() => page.textContent('[data-testid="pg-message"]')).toMatch(/engine rejected the scenario/);
    // The rest of the app still works.
    await page.click('button.tab:has-text("Walk")');
    await page.waitForSelector('#counter');
    await page.keyboard.press('ArrowRight');
    expect((await shown(page)).counter).toBe(1);
    // And a good file runs in the walk view.
    await page.click('button.tab:has-text("Playground")');
    await page.setInputFiles('[data-testid="file-input"]', { name: 'npt.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify({ ...bad, name: 'ok', guest: { paging: '4level', mappings: [{ gva: '0x400000', gpa: '0x200000' }] }, accesses: [{ gva: '0x400008', op: 'read' }] })) });
    await page.click('[data-testid="run"]');
    await page.waitForSelector('#counter');
    await page.keyboard.press('End');
    expect((await shown(page)).counter).toBe(4 + 4); // 4 reads + 4 A/D writes, native 4-level
    await page.close();
  });

  it('screenshots of every view, light, dark and at 360 px', async () => {
    const page = await open('?view=memory&example=ept-4k&access=0&step=9');
    expect(await page.locator('svg.memsvg g.frame.current').count()).toBe(1);
    await shot(page, 'memory-ept-4k');
    await page.goto(session.url + '?view=compare');
    await page.waitForSelector('[data-testid="compare-view"] tr[data-mode="shadow"]');
    expect(await page.textContent('tr[data-mode="ept"] [data-field="refs"]')).toBe('24');
    await shot(page, 'compare');
    await page.goto(session.url + '?example=caches-ept&access=2&step=3');
    await page.waitForSelector('#counter');
    await shot(page, 'walk-caches');
    await page.goto(session.url + '?example=shadow&access=0&step=3');
    await page.waitForSelector('#counter');
    await shot(page, 'walk-shadow');
    await page.goto(session.url + '?view=playground&example=vmfunc-gate');
    await page.waitForSelector('.cm-editor');
    await shot(page, 'playground');
    await page.goto(session.url + '?example=ept-4k&step=12');
    await page.waitForSelector('#counter');
    await page.click('button.theme');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await shot(page, 'walk-dark');
    await page.click('button.theme');
    await page.close();

    const narrow = await open('?example=ept-4k&access=0&step=7', 360, 740);
    // Usable at 360 px: nothing forces the page wider than the viewport.
    expect(await narrow.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await shot(narrow, 'walk-360');
    await narrow.goto(session.url + '?view=compare');
    await narrow.waitForSelector('[data-testid="compare-view"]');
    expect(await narrow.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(360);
    await shot(narrow, 'compare-360');
    // every other tab too (wide tables scroll inside their own box; fieldsets and grids shrink)
    for (const [view, ready] of [['memory', 'main'], ['playground', '.cm-editor'], ['results', '[data-testid=dropzone]'], ['lessons', 'main'], ['live', 'main']]) {
      await narrow.goto(session.url + `?view=${view}`);
      await narrow.waitForSelector(ready);
      await narrow.waitForTimeout(300);
      expect(await narrow.evaluate(() => document.documentElement.scrollWidth), `${view} at 360 px`).toBeLessThanOrEqual(360);
    }
    await narrow.close();
    expect(pageErrors).toEqual([]);
  });

  it('at 390 px the explanation of the current step stays on screen with the grid, and nothing above the grid moves', async () => {
    const trace = nativeRun('ept-4k').accesses[0];
    const page = await open('?example=ept-4k&access=0&step=0', 390, 844);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    // bring the grid up under the sticky controls, as a learner scrolls to it once
    await page.evaluate(() => {
      const grid = document.querySelector('table.grid')!.getBoundingClientRect();
      const bar = document.querySelector('.controls')!.getBoundingClientRect();
      scrollBy(0, grid.top - bar.height - 8);
    });
    const where = () => page.evaluate(() => {
      const r = (el: Element | null) => { const b = el!.getBoundingClientRect(); return { top: b.top, bottom: b.bottom }; };
      return { grid: r(document.querySelector('table.grid')), cell: document.querySelector('td[aria-current="step"]') ? r(document.querySelector('td[aria-current="step"]')) : null,
        explain: r(document.querySelector('#entry .explain')), entry: r(document.querySelector('#entry')), bar: r(document.querySelector('.controls')), h: innerHeight };
    });
    const first = await where();
    for (const s of trace.steps) {
      await page.keyboard.press('ArrowRight');
      const w = await where();
      expect(w.grid.top, `step ${s.n}: the grid did not move`).toBeCloseTo(first.grid.top, 0);
      expect(w.explain.top, `step ${s.n}`).toBeGreaterThanOrEqual(0);
      expect(w.explain.bottom, `step ${s.n}: the explanation is on screen`).toBeLessThanOrEqual(w.h);
      // the current cell is on screen, below the controls and above the explanation
      expect(w.cell!.top, `step ${s.n}`).toBeGreaterThanOrEqual(w.bar.bottom - 1);
      expect(w.cell!.bottom, `step ${s.n}: not hidden behind the explanation`).toBeLessThanOrEqual(w.entry.top + 1);
      if (s.n === 7) await shot(page, 'walk-390-step7');
    }
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  it('the VMFUNC gate: the EPTP list, the switch as its own step, VMCALL with no walk', async () => {
    const trace = nativeRun('vmfunc-gate');
    const sw = trace.accesses.findIndex((a) => a.op === 'vmfunc' && a.outcome === 'ok');
    const page = await open(`?example=vmfunc-gate&access=${sw}&step=1`, 1200, 900, '[data-testid="vmfunc-panel"] table.eptp-list');
    expect(await page.textContent('#outcome [data-field="outcome"]')).toBe(`switched to EPTP index ${trace.accesses[sw].eptp_index}, no VM exit`);
    expect(await page.textContent('tr[data-index="1"] code')).toBe(trace.accesses[sw].steps[0].entry);
    expect(await page.getAttribute('tr[data-index="1"]', 'aria-current')).toBe('true');
    expect(await page.textContent('[data-testid="vmfunc-cost"] tr[data-path="ratio"] [data-field="published"]')).toBe('3.6×');
    await shot(page, 'walk-vmfunc');
    const call = trace.accesses.findIndex((a) => a.op === 'vmcall');
    await page.goto(session.url + `?example=vmfunc-gate&access=${call}&step=0`);
    await page.waitForSelector('[data-field="event"][data-op="vmcall"]');
    expect(await page.textContent('#entry .explain')).toMatch(/VMCALL exits to the hypervisor at once \(exit 18\)/);
    expect(await page.locator('details.steps').count()).toBe(0);
    expect(await page.textContent('#outcome')).not.toMatch(/stage|dimension/);
    await page.close();
    expect(pageErrors).toEqual([]);
  });

  it('in Japanese and Chinese: the same trace, explained in the language, and back to English', async () => {
    const trace = nativeRun('ept-violation');
    const a = trace.accesses[2];
    const page = await open(`?example=ept-violation&access=2&step=0&lang=ja`);
    await page.click('#next');
    expectStep(await shown(page), a.steps[0]);
    const explainJa = await page.textContent('#entry .explain');
    expect(explainJa).toMatch(/[\u3040-\u30ff]/);
    await page.keyboard.press('End');
    expect(await page.getAttribute('#outcome [data-field="outcome"]', 'data-value')).toBe(a.outcome);
    expect(await page.textContent('#outcome [data-field="outcome"]')).toContain('EPT violation（VM exit 48）');
    // The exit qualification's bits in Japanese, each with the engine's value.
    const q = BigInt((a.fault as { qualification: string }).qualification);
    const bits = await page.$$eval('#outcome .bits li', (lis) => lis.map((li) => [li.className, li.textContent]));
    expect(bits.length).toBeGreaterThan(0);
    for (const [cls, text] of bits) {
      const bit = BigInt(/ビット (\d+)/.exec(text!)![1]);
      expect(cls, text!).toBe(((q >> bit) & 1n) === 1n ? 'set' : 'clear');
    }
    // The exit's glossary term carries the Japanese definition.
    expect(await page.getAttribute('#outcome abbr[data-term="ept_violation"]', 'title')).toMatch(/exit qualification/);
    await shot(page, 'walk-ja');
    await page.selectOption('select.ui-lang', 'zh');
    expect(await page.textContent('#outcome [data-field="outcome"]')).toContain('EPT 违例');
    expect(await page.textContent('.tabs')).toContain('遍历');
    await shot(page, 'walk-zh');
    await page.selectOption('select.ui-lang', 'en');
    expect(await page.textContent('#outcome [data-field="outcome"]')).toBe('EPT violation (VM exit 48)');
    expect(new URL(page.url()).searchParams.get('lang')).toBe('en');
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
