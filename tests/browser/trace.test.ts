/* The "Your program" panel in Chromium, served by the real class server: the example trace
 * the build recorded is replayed in a Web Worker (the engine's wasm loaded there under the
 * server's CSP) with the native CLI's figures; a long replay shows its progress and stops
 * on Cancel, or streams through both passes in many steps to the CLI's figures; a damaged file is refused in words; in the Results tab a trace is shared with
 * a class and comes back from the server for everyone. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { appInChromium, ARTIFACTS } from './chromium';

const session = appInChromium();
const root = join(__dirname, '..', '..');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const chase = join(root, 'hw-lab', 'build', 'traces', 'pointer-chase.vmtrace');
let work: string;
let long: string;
let evicting: string;

/** A trace of `count` loads on 60,000 random pages, written as a lackey log and converted. */
function randomTrace(name: string, count: number, seed: number): string {
  const log = join(work, `${name}.lackey`);
  execFileSync('python3', ['-c', `import random, sys
r = random.Random(${seed})
with open(sys.argv[1], "w") as f:
    f.write("==1== Lackey, an example Valgrind tool\\n==1== Command: ${name}\\n")
    f.writelines(" L %x,8\\n" % (0x10000000 + (r.randrange(60000) << 12)) for _ in range(${count}))
    f.write("==1== Exit code:       0\\n")`, log]);
  const out = join(work, `${name}.vmtrace`);
  execFileSync('python3', [join(root, 'hw-lab', 'run'), 'trace', '--out', out, '--from-lackey', log], { stdio: 'ignore' });
  return out;
}

beforeAll(() => {
  if (!existsSync(chase)) throw new Error('record the example traces first: make build');
  work = mkdtempSync(join(tmpdir(), 'vmemlab-trace-browser-'));
  // long enough to cancel, and to show its progress in many steps
  long = randomTrace('long-random', 3_000_000, 5);
  // evicts TLB entries on nearly every access as well, in a third of the time: the replays
  // that compare the ways of replaying (threads, workers, again without pass 1) take it
  evicting = randomTrace('evicting-random', 1_000_000, 7);
}, 120_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function watched(query: string) {
  const page = await session.browser.newPage();
  const problems: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(session.url + query);
  return { page, problems };
}

/** Notes in the page the bar's words and value at each change (looked at every 20 ms); the
 * function returned takes what was noted since, as `words|value`. */
async function noteBar(page: Page) {
  await page.evaluate(() => {
    const w = window as unknown as { seen: string[] };
    w.seen = [];
    setInterval(() => {
      const p = document.querySelector('[data-testid="trace-progress"]');
      if (!p) return;
      const v = `${p.querySelector('span[aria-hidden]')?.textContent}|${p.querySelector('progress')?.getAttribute('value')}`;
      if (w.seen.at(-1) !== v) w.seen.push(v);
    }, 20);
  });
  return () => page.evaluate(() => (window as unknown as { seen: string[] }).seen.splice(0));
}

const rows = (page: Page, trace: number) => page.$$eval(`[data-testid="trace-table"] tr[data-trace="${trace}"]`, (trs) => trs.map((tr) => ({
  mode: tr.getAttribute('data-mode'),
  refs: tr.querySelector('[data-field="refs_per_access"]')!.textContent,
  overhead: tr.querySelector('[data-field="overhead_pct"]')!.textContent,
})));
const expected = (file: string, more: string[] = []) => (JSON.parse(execFileSync(vmsim, ['replay', file, '--quiet', '--format', 'json', ...more], { encoding: 'utf8' })).modes as
  { mode: string; refs_per_access: number; overhead_pct: number | null }[]).map((m) => ({
  mode: m.mode, refs: m.refs_per_access.toFixed(3), overhead: m.overhead_pct === null ? '–' : `${m.overhead_pct.toFixed(2)} %`,
}));

describe('Your program, in Chromium', () => {
  it('replays the example in a worker with the CLI\'s figures, refuses a damaged file, cancels a long replay', async () => {
    const { page, problems } = await watched('?view=compare&example=ept-4k');
    await page.waitForSelector('[data-testid="trace-panel"]');
    await page.click('button[data-example="pointer-chase"]');
    await page.waitForSelector('[data-testid="trace-charts"] svg rect', { timeout: 60_000 });
    expect(await rows(page, 1)).toEqual(expected(chase));
    await page.screenshot({ path: join(ARTIFACTS, 'trace-panel.png'), fullPage: true });

    const bad = join(work, 'cut.vmtrace');
    const bytes = readFileSync(chase);
    writeFileSync(bad, bytes.subarray(0, bytes.length - 100));
    await page.setInputFiles('[data-testid="trace-file"]', bad);
    await page.waitForSelector('[data-testid="trace-list"] li[data-status="error"]');
    expect(await page.textContent('[data-testid="trace-list"] li[data-status="error"] [role="alert"]')).toContain('the trace is truncated');

    await page.setInputFiles('[data-testid="trace-file"]', long);
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="trace-progress"] progress')?.getAttribute('value') ?? 0) > 0, undefined, { timeout: 60_000 });
    const text = await page.textContent('[data-testid="trace-progress"]');
    expect(text).toMatch(/Replaying long-random: pass [12] of 2/);
    await page.click('[data-testid="trace-cancel"]');
    await page.waitForSelector('[data-testid="trace-list"] li[data-status="cancelled"]');
    expect(await page.$('[data-testid="trace-progress"]')).toBeNull();
    // the first trace's figures are still there
    expect(await rows(page, 1)).toEqual(expected(chase));
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);

  it('streams a long trace through the worker: progress in many steps through both passes, then the CLI\'s figures', async () => {
    const { page, problems } = await watched('?view=compare&example=ept-4k');
    await page.waitForSelector('[data-testid="trace-panel"]');
    // every progress value and pass the page shows, as pass:value
    const taken = await noteBar(page);
    await page.setInputFiles('[data-testid="trace-file"]', long);
    await page.waitForSelector('[data-testid="trace-table"] tr[data-trace="1"]', { timeout: 120_000 });
    const seen = (await taken()).map((v) => { const [words, value] = v.split('|'); return `${/pass ([12]) of 2/.exec(words)?.[1]}:${value}`; });
    const values = seen.map((v) => Number(v.split(':')[1]));
    expect(values.filter((v) => v > 0 && v < 1).length, seen.join(' ')).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < values.length; i++) expect(values[i], seen.join(' ')).toBeGreaterThanOrEqual(values[i - 1]);
    expect(seen.some((v) => v.startsWith('1:') && Number(v.slice(2)) > 0), seen.join(' ')).toBe(true);
    expect(seen.some((v) => v.startsWith('2:')), seen.join(' ')).toBe(true);
    expect(await rows(page, 1)).toEqual(expected(long));
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);

  it('is cross-origin isolated, and replays on threads: a trace with TLB evictions to the CLI\'s counts on 2 threads and 8; with ?replay=workers its workers share one decoder (2 workers and 8, the lead decoding only); without the headers each worker reads the file', async () => {
    const cli = JSON.parse(execFileSync(vmsim, ['replay', evicting, '--quiet', '--format', 'json'], { encoding: 'utf8' })) as
      { modes: { mode: string; tlb_misses: number; exits: number; refs_by_where: Record<string, number>; ref_cycles: number }[]; trace: { pages: number } };
    for (const m of cli.modes) expect(m.tlb_misses, m.mode).toBeGreaterThan(2 * cli.trace.pages);     // it evicts
    const ways = [[2, true, 'threads'], [8, true, 'threads'], [2, true, 'workers'], [8, true, 'workers'], [2, false, 'threads']] as const;
    for (const [cores, isolated, asked] of ways) {
      const page = await session.browser.newPage();
      // another host's headers: the page is not cross-origin isolated
      if (!isolated) await page.route('**/*', async (route) => {
        const r = await route.fetch();
        const headers = { ...r.headers() };
        delete headers['cross-origin-embedder-policy'];
        await route.fulfill({ response: r, headers });
      });
      const problems: string[] = [];
      page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
      page.on('pageerror', (e) => problems.push(e.message));
      await page.addInitScript((n) => { Object.defineProperty(navigator, 'hardwareConcurrency', { get: () => n }); }, cores);
      await page.goto(session.url + `?view=compare&example=ept-4k${asked === 'workers' ? '&replay=workers' : ''}`);
      expect(await page.evaluate(() => crossOriginIsolated)).toBe(isolated);
      await page.waitForSelector('[data-testid="trace-panel"]');
      await page.evaluate(() => {
        const w = window as unknown as { how: Set<string> };
        w.how = new Set();
        setInterval(() => {
          const p = document.querySelector('[data-testid="trace-progress"]');
          if (p?.getAttribute('data-workers')) w.how.add(`${p.getAttribute('data-workers')} ${p.getAttribute('data-shared')} ${p.getAttribute('data-threads') ?? 'no-threads'}`);
        }, 20);
      });
      await page.setInputFiles('[data-testid="trace-file"]', evicting);
      await page.waitForSelector('[data-testid="trace-where"] tr[data-trace="1"]', { timeout: 150_000 });
      // on threads: one worker, as many threads as processors (at most 8); in workers, at most
      // a lead and one per mode; not isolated, the workers each read the file
      const onThreads = isolated && asked === 'threads';
      expect([...await page.evaluate(() => [...(window as unknown as { how: Set<string> }).how])], `${cores} ${isolated} ${asked}`)
        .toEqual([onThreads ? `${Math.min(cores, 8)} true true` : `${cores > 5 ? 6 : cores} ${isolated} no-threads`]);
      const got = await page.$$eval('[data-testid="trace-where"] tr[data-trace="1"]', (trs) => trs.map((tr) => ({
        mode: tr.getAttribute('data-mode'),
        cells: [...tr.querySelectorAll('td[data-field]')].map((td) => Number(td.textContent!.replace(/[^0-9]/g, ''))),
      })));
      expect(got).toEqual(cli.modes.map((m) => ({ mode: m.mode, cells: [...['walk_cache', 'l1', 'l2', 'llc', 'memory'].map((w) => m.refs_by_where[w]), m.ref_cycles] })));
      const exits = await page.$$eval('[data-testid="trace-table"] tr[data-trace="1"] [data-field="exits"]', (tds) => tds.map((td) => Number(td.textContent!.replace(/[^0-9]/g, ''))));
      expect(exits).toEqual(cli.modes.map((m) => m.exits));
      expect(problems).toEqual([]);
      await page.close();
    }
  }, 600_000);

  it('gets the threaded replay ready before a file is picked: the pick takes that worker, and the next is made ready once the replay ends', async () => {
    const page = await session.browser.newPage();
    const problems: string[] = [];
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(e.message));
    // each threaded replay's worker the page makes, and what it says of its module
    await page.addInitScript(() => {
      const w = window as unknown as { made: { said: string[] }[] };
      w.made = [];
      const Real = window.Worker;
      window.Worker = class extends Real {
        constructor(url: string | URL, o?: WorkerOptions) {
          super(url, o);
          if (!String(url).includes('replay-mt')) return;
          const me = { said: [] as string[] };
          w.made.push(me);
          this.addEventListener('message', (e: MessageEvent) => { if (e.data?.type !== 'progress') me.said.push(e.data?.type); });
        }
      };
    });
    await page.goto(session.url + '?view=compare&example=ept-4k');
    await page.waitForSelector('[data-testid="trace-panel"]');
    // each file picked once the worker made for it is ready: the first made while the panel
    // was idle, the next once the replay before it ended; each replay on that worker
    for (const [i, file] of [chase, evicting].entries()) {
      await page.waitForFunction((k) => (window as unknown as { made: { said: string[] }[] }).made[k]?.said.includes('ready'), i, { timeout: 30_000 });
      await page.setInputFiles('[data-testid="trace-file"]', file);
      await page.waitForSelector(`[data-testid="trace-table"] tr[data-trace="${i + 1}"]`, { timeout: 120_000 });
      expect(await rows(page, i + 1)).toEqual(expected(file));
      const made = await page.evaluate(() => (window as unknown as { made: { said: string[] }[] }).made);
      expect(made[i].said, `replay ${i + 1}`).toEqual(['loaded', 'ready', 'header', 'scan', 'done']);
    }
    const all = await page.evaluate(() => (window as unknown as { made: unknown[] }).made);
    expect(all.length).toBeLessThanOrEqual(3);
    expect(problems).toEqual([]);
    await page.close();
  }, 240_000);

  it('replays a file again with other settings without its pass 1: the bar says so and goes over pass 2 alone, to the CLI\'s figures for those settings', async () => {
    const { page, problems } = await watched('?view=compare&example=ept-4k');
    await page.waitForSelector('[data-testid="trace-panel"]');
    const taken = await noteBar(page);
    await page.setInputFiles('[data-testid="trace-file"]', evicting);
    await page.waitForSelector('[data-testid="trace-table"] tr[data-trace="1"]', { timeout: 120_000 });
    const first = await taken();
    expect(first.some((v) => v.includes('pass 1 of 2')), first.join(' ')).toBe(true);
    expect(first.some((v) => v.includes('kept')), first.join(' ')).toBe(false);
    await page.selectOption('[data-setting="start"]', 'warm');
    await page.click('[data-testid="trace-again"]');
    await page.waitForSelector('[data-testid="trace-table"] tr[data-trace="1"]', { timeout: 120_000 });
    const again = await taken();
    expect(again.length, 'the bar shown').toBeGreaterThan(0);
    // from its first moment, before the module's first word
    expect(again.every((v) => v.includes('pass 2 of 2 (pass 1 kept from this file')), again.join(' ')).toBe(true);
    const values = again.map((v) => Number(v.split('|')[1]));
    for (let i = 1; i < values.length; i++) expect(values[i], again.join(' ')).toBeGreaterThanOrEqual(values[i - 1]);
    expect(await rows(page, 1)).toEqual(expected(evicting, ['--start', 'warm']));
    expect(problems).toEqual([]);
    await page.close();
  }, 240_000);

  it('shares a trace with a class, which then shows it to everyone', async () => {
    const created = await (await fetch(`${session.url}api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'trace lab' }) })).json();
    const { page, problems } = await watched(`?view=results&class=${created.code}`);
    await page.waitForSelector('[data-testid="trace-panel"]');
    await page.setInputFiles('[data-testid="trace-file"]', chase);
    await page.waitForSelector('[data-testid="trace-charts"] svg rect', { timeout: 60_000 });
    await page.click(`button:has-text("Share with class ${created.code}")`);
    await page.waitForSelector(`text=shared with class ${created.code}`);
    const list = await (await fetch(`${session.url}api/classes/${created.code}/traces`)).json();
    expect(list.traces).toHaveLength(1);
    expect(list.traces[0].label).toBe('pointer chase (8 MiB, 100,000 hops)');
    // a classmate opens the class: the trace is there with its figures
    const other = await session.browser.newPage();
    await other.goto(`${session.url}?view=results&class=${created.code}`);
    await other.waitForSelector('[data-testid="trace-list"] li[data-source="class"]');
    await other.waitForSelector('[data-testid="trace-charts"] svg rect');
    expect(await rows(other, 1)).toEqual(expected(chase));
    await other.close();
    expect(problems).toEqual([]);
    await page.close();
  }, 180_000);
});
