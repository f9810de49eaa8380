/* Every tab, one test body, in two browsers: Debian's Chromium and Debian's Firefox ESR
 * (tests/browser/browsers.ts), against the real class server. What each tab shows is
 * checked against the native CLI (`vmsim run`), the second implementation of the engine
 * the page runs as WebAssembly: the ept-4k walk step by step with its 24 references, the
 * VMFUNC switch, Compare's 24 for EPT and its charts drawn to scale, a scenario run from
 * the Playground, a lesson's exercise answered with the native engine's figure; the
 * Results charts drawn, the live guest restored to a shell prompt that runs a command; the
 * keyboard; axe-core with no serious or critical violation on any tab; and in each
 * browser no console error, uncaught exception, CSP violation, failed request or HTTP
 * error, and the class server's text and wasm arriving brotli-compressed.
 * Firefox missing fails the file with the command that installs it. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generate } from '../../web/src/lessons/exercises';
import type { Result } from '../../wasm-core/js/types';
import { appIn, BROWSERS, type Tab } from './browsers';

const root = join(__dirname, '..', '..');
const AXE = readFileSync(join(root, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');
const tmp = mkdtempSync(join(tmpdir(), 'vmemlab-every-tab-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function nativeRun(file: string): Result {
  const p = spawnSync(join(root, 'wasm-core', 'build', 'vmsim'), ['run', file], { encoding: 'utf8' });
  expect(p.status, p.stderr).toBe(0);
  return JSON.parse(p.stdout);
}
const example = (name: string) => nativeRun(join(root, 'wasm-core', 'examples', name + '.json'));

interface Violation { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }

/* axe-core's WCAG A/AA and best-practice rules; serious and critical violations, in words. */
async function axeSerious(tab: Tab): Promise<string[]> {
  if (!(await tab.evaluate(() => 'axe' in window))) await tab.evaluateScript(AXE);
  const violations = await tab.evaluate(() => (window as unknown as { axe: { run: (c: Document, o: object) => Promise<{ violations: unknown[] }> } })
    .axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] })
    .then((r) => r.violations)) as Violation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 4).map((n) => n.target.join(' ')).join(', ')}`);
}

/* What the walk shows for the current step, read from the DOM (as walkthrough.test.ts). */
const shown = (tab: Tab) => tab.evaluate(() => {
  const cur = document.querySelectorAll<HTMLElement>('table.grid td[aria-current="step"]');
  return {
    cells: cur.length,
    row: cur[0]?.dataset.row ?? null,
    col: cur[0]?.dataset.col ?? null,
    counter: Number(document.querySelector('#counter [data-field="step"]')!.textContent),
    entry: document.querySelector('#entry [data-field="entry"]')?.textContent ?? null,
  };
});

for (const browser of BROWSERS) {
  describe(`every tab in ${browser}`, () => {
    const app = appIn(browser);
    const problems: string[] = [];
    const responses: Tab['responses'] = [];
    let tab: Tab;
    const keep = () => { problems.push(...tab.problems.splice(0)); responses.push(...tab.responses.splice(0)); };
    /* A fresh page per tab; what it saw is checked when the next one opens and at the end. */
    const open = async (query: string, ready: string, width?: number, height?: number, timeoutMs = 20_000) => {
      if (tab) { keep(); await tab.close(); }
      tab = await app.open({ width, height });
      await tab.goto(app.url + query);
      await tab.waitFor(ready, timeoutMs);
      return tab;
    };
    afterAll(async () => { if (tab) await tab.close(); });

    it('Walk: every step of the 24-reference EPT walk as the native CLI traces it, by keyboard', async () => {
      const trace = example('ept-4k').accesses[0];
      expect(trace.memory_refs).toBe(24);
      const t = await open('?example=ept-4k&access=0&step=0', '#counter');
      expect(await t.text('#entry')).toContain(`takes ${trace.steps.length} steps and 24 memory references`);
      // the page takes the keys without a click first
      for (const step of trace.steps) {
        await t.press('ArrowRight');
        const s = await shown(t);
        expect(s.counter).toBe(step.n);
        expect(s.entry).toBe(step.entry);
        expect(s.cells).toBe(1);
        expect(s.row).toBe(String(step.dim === 'guest' ? step.level : step.stage));
        expect(s.col).toBe(step.dim === 'guest' ? 'G' : `N${step.level}`);
      }
      expect(await t.text('#outcome [data-field="outcome"]')).toBe('translated');
      expect(await t.text('#outcome')).toContain(trace.hpa!);
      await t.press('Home');
      expect((await shown(t)).counter).toBe(0);
      await t.press('End');
      expect((await shown(t)).counter).toBe(trace.steps.length);
      expect(new URL(t.url()).searchParams.get('step')).toBe(String(trace.steps.length));
      await t.screenshot('walk-ept-4k');
      expect(await axeSerious(t)).toEqual([]);
    });

    it('Walk: Tab reaches the current grid cell, and → moves the focus with the highlight', async () => {
      const t = await open('?example=ept-4k&access=0&step=3', '#counter');
      const focused = () => t.evaluate(() => {
        const el = document.activeElement as HTMLElement;
        return { cell: !!el.closest('table.grid'), current: el.closest('td')?.getAttribute('aria-current') ?? null,
          label: el.getAttribute('aria-label') ?? el.querySelector('.sr-only')?.textContent ?? null };
      });
      let f = await focused();
      for (let i = 0; i < 40 && !f.cell; i++) { await t.press('Tab'); f = await focused(); }
      expect(f).toMatchObject({ cell: true, current: 'step' });
      expect(f.label).toMatch(/step 3/);
      await t.press('ArrowRight');
      f = await focused();
      expect(f.cell).toBe(true);
      expect(f.label).toMatch(/step 4/);
      expect(await t.text('#counter [data-field="step"]')).toBe('4');
    });

    it('VMFUNC: the switch through the EPTP list, as the native CLI reports it', async () => {
      const trace = example('vmfunc-gate');
      const sw = trace.accesses.findIndex((a) => a.op === 'vmfunc' && a.outcome === 'ok');
      expect(sw).toBeGreaterThanOrEqual(0);
      const t = await open(`?example=vmfunc-gate&access=${sw}&step=1`, '[data-testid="vmfunc-panel"] table.eptp-list');
      expect(await t.text('#outcome [data-field="outcome"]')).toBe(`switched to EPTP index ${trace.accesses[sw].eptp_index}, no VM exit`);
      const idx = trace.accesses[sw].eptp_index;
      expect(await t.text(`tr[data-index="${idx}"] code`)).toBe(trace.accesses[sw].steps[0].entry);
      expect(await t.evaluate((i) => document.querySelector(`tr[data-index="${i}"]`)!.getAttribute('aria-current'), idx)).toBe('true');
      await t.screenshot('walk-vmfunc');
      expect(await axeSerious(t)).toEqual([]);
    });

    it('Memory: the current step\'s host frame marked', async () => {
      const t = await open('?view=memory&example=ept-4k&access=0&step=9', 'svg.memsvg g.frame');
      expect(await t.count('svg.memsvg g.frame.current')).toBe(1);
      await t.screenshot('memory');
      expect(await axeSerious(t)).toEqual([]);
    });

    it('Compare: 24 references for EPT as the native CLI counts them, the charts drawn to scale', async () => {
      const t = await open('?view=compare', '[data-testid="compare-view"] tr[data-mode="shadow"]');
      await t.waitFor('figure.compare-chart[data-measure="refs"] svg rect');
      expect(await t.text('tr[data-mode="ept"] [data-field="refs"]')).toBe(String(example('ept-4k').accesses[0].memory_refs));
      // each bar of the references chart as long as its figure in the table, to one scale
      const bars = await t.evaluate(() => [...document.querySelectorAll('figure.compare-chart[data-measure="refs"] g[data-mode]')].map((g) => ({
        mode: g.getAttribute('data-mode')!,
        width: Number(g.querySelector('rect')!.getAttribute('width')),
        table: Number(document.querySelector(`tr[data-mode="${g.getAttribute('data-mode')}"] [data-field="refs"]`)?.textContent),
      })));
      expect(bars.length).toBeGreaterThanOrEqual(3);
      const scale = bars.find((b) => b.mode === 'ept')!.width / 24;
      expect(scale).toBeGreaterThan(0);
      for (const b of bars) expect(b.width, b.mode).toBeCloseTo(Math.max(1, b.table * scale), 0);
      await t.screenshot('compare');
      expect(await axeSerious(t)).toEqual([]);
    });

    it('Playground: a scenario run from the editor opens in the walk with the native CLI\'s steps', async () => {
      const trace = example('ept-4k').accesses[0];
      const t = await open('?view=playground&example=ept-4k', '.cm-editor');
      await t.waitFor('[data-testid="toggles"]');
      expect(await axeSerious(t)).toEqual([]);
      await t.screenshot('playground');
      await t.click('[data-testid="run"]');
      await t.waitFor('#counter');
      await t.press('End');
      expect((await shown(t)).counter).toBe(trace.steps.length);
      expect(await t.text('#outcome')).toContain(trace.hpa!);
    });

    it('Lessons: the index, a lesson with its maths and walk, an exercise answered with the native engine\'s figure', async () => {
      const t = await open('?view=lessons&lang=en', '.lessons-index');
      // one entry per numbered lesson in lessons/en (the teacher guide is not one)
      expect(await t.count('.lessons-index li')).toBe(readdirSync(join(__dirname, '..', '..', 'lessons', 'en')).filter((f) => /^\d\d-.*\.md$/.test(f)).length);
      await t.clickButton('EPT and NPT: the 2-D walk');
      await t.waitFor('figure.embedded-walk[data-scenario="ept-4k"]');
      expect(new URL(t.url()).searchParams.get('lesson')).toBe('ept-and-npt');
      expect(await t.count('.katex')).toBeGreaterThan(0);
      expect(await t.text('article.lesson h1')).toContain('EPT and NPT');
      // the exercise's question, rebuilt here from its seed and answered by the native CLI
      const ex = 'section.exercise[data-kind="count-refs"]';
      const seed = Number(await t.evaluate((s) => document.querySelector(s)!.getAttribute('data-seed'), ex));
      const question = generate({ kind: 'count-refs', mode: 'ept' }, seed);
      const file = join(tmp, `count-refs-${browser}-${seed}.json`);
      writeFileSync(file, JSON.stringify(question.scenarios[0]));
      const refs = nativeRun(file).accesses.reduce((n, a) => n + a.memory_refs, 0);
      await t.fill(`${ex} input`, '1');
      await t.clickButton('Check', ex);
      const status = `${ex} p[role="status"]`;
      const verdict = ([sel, want]: [string, string]) => (document.querySelector<HTMLElement>(sel)!.dataset.state ?? '').match(want);
      await t.waitUntil(verdict, [status, '^wrong$']);
      expect(await t.text(status)).toMatch(/^Not quite/);
      await t.fill(`${ex} input`, `${refs} references`);   // as a learner writes it
      await t.clickButton('Check', ex);
      await t.waitUntil(verdict, [status, '^correct$']);
      expect(await t.text(status)).toMatch(/^Correct\./);
      await t.screenshot('lesson-ept-and-npt');
      expect(await axeSerious(t)).toEqual([]);
    });

    it('Results: the published figures drawn', async () => {
      const t = await open('?view=results', '.results-page');
      await t.waitFor('.results-page svg.chart rect');
      expect(await t.count('[data-testid="dropzone"]')).toBe(1);
      await t.screenshot('results');
      expect(await axeSerious(t)).toEqual([]);
    });

    it('Live guest: restored to a shell prompt that runs a command', async () => {
      const t = await open('?view=live', 'body[data-live-ready="1"]', 1300, 1000, 60_000);
      const term = (re: string) => new RegExp(re, 'm').test(document.querySelector<HTMLElement>('[data-testid="live-terminal"]')!.innerText);
      await t.waitUntil(term, 'vmemlab#', 10_000);
      expect(await axeSerious(t)).toEqual([]);
      await t.click('[data-testid="live-terminal"]');
      await t.type('echo live-$((6*7))\n');
      await t.waitUntil(term, '^live-42$', 15_000);
      await t.screenshot('live');
    }, 90_000);

    it('no console error, uncaught exception, CSP violation, failed request or HTTP error on any tab', async () => {
      keep();
      expect(problems, app.version).toEqual([]);
    });

    it('the class server\'s text and wasm arrive brotli-compressed', () => {
      const ours = responses.filter((r) => r.status === 200 && new URL(r.url).origin === new URL(app.url).origin);
      const compressible = [...new Map(ours.map((r) => [new URL(r.url).pathname, r.encoding]))].filter(([p]) => /\.(js|css|wasm|html)$|^\/$/.test(p));
      expect(compressible.filter(([p]) => p.endsWith('.wasm')).length, 'the engine\'s and v86\'s wasm').toBeGreaterThanOrEqual(2);
      expect(compressible.length).toBeGreaterThan(5);
      expect(compressible.filter(([, e]) => e !== 'br'), app.version).toEqual([]);
    });
  });
}
