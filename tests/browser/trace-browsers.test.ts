/* The "Your program" panel's replay in both browsers (Debian's Chromium and Firefox ESR,
 * tests/browser/browsers.ts) against the real class server: the page is cross-origin
 * isolated there, so it replays on threads (the threaded module, vmsim-mt, loaded from the
 * server's engine/ in one worker, on as many threads as the browser reports processors, at
 * most 8), and with ?replay=workers its workers share one decoder through a
 * SharedArrayBuffer (one worker when the browser reports one processor); either way the
 * pointer-chase example, whose 2,121 pages evict TLB entries all the time, comes out with
 * the native CLI's counts, and the page shows no error; on threads, replayed again warm with
 * pass 1's findings kept from the first replay, the CLI's warm counts. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appIn, BROWSERS } from './browsers';

const root = join(__dirname, '..', '..');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const chase = join(root, 'hw-lab', 'build', 'traces', 'pointer-chase.vmtrace');

for (const browser of BROWSERS) {
  describe(`the trace replay in ${browser}`, () => {
    const app = appIn(browser);

    for (const asked of ['threads', 'workers'] as const) it(`is cross-origin isolated and replays the example ${asked === 'threads' ? 'on threads' : 'in workers on a shared decoder'} with the CLI's counts`, async () => {
      const cli = JSON.parse(execFileSync(vmsim, ['replay', chase, '--quiet', '--format', 'json'], { encoding: 'utf8' })) as
        { modes: { mode: string; tlb_misses: number; exits: number; refs_by_where: Record<string, number>; ref_cycles: number }[]; trace: { pages: number } };
      for (const m of cli.modes) expect(m.tlb_misses, m.mode).toBeGreaterThan(10 * cli.trace.pages);     // it evicts
      const tab = await app.open();
      await tab.goto(app.url + `?view=compare&example=ept-4k${asked === 'workers' ? '&replay=workers' : ''}`);
      expect(await tab.evaluate(() => crossOriginIsolated)).toBe(true);
      const cores = await tab.evaluate(() => navigator.hardwareConcurrency);
      await tab.waitFor('[data-testid="trace-panel"]');
      await tab.click('button[data-example="pointer-chase"]');
      await tab.waitFor('[data-testid="trace-list"] li[data-status="done"]', 120_000);
      const how = await tab.evaluate(() => {
        const li = document.querySelector('[data-testid="trace-list"] li[data-status="done"]')!;
        return { workers: li.getAttribute('data-workers'), shared: li.getAttribute('data-shared'), threads: li.getAttribute('data-threads') };
      });
      expect(how).toEqual(asked === 'threads' ? { workers: String(Math.min(cores, 8)), shared: 'true', threads: 'true' }
        : cores > 1 ? { workers: String(Math.min(cores, 5) + (cores > 5 ? 1 : 0)), shared: 'true', threads: null } : { workers: '1', shared: 'false', threads: null });
      const got = await tab.evaluate(() => [...document.querySelectorAll('[data-testid="trace-where"] tr[data-trace="1"]')].map((tr) => ({
        mode: tr.getAttribute('data-mode'),
        cells: [...tr.querySelectorAll('td[data-field]')].map((td) => Number(td.textContent!.replace(/[^0-9]/g, ''))),
      })));
      const want = (c: typeof cli) => c.modes.map((m) => ({ mode: m.mode, cells: [...['walk_cache', 'l1', 'l2', 'llc', 'memory'].map((w) => m.refs_by_where[w]), m.ref_cycles] }));
      expect(got).toEqual(want(cli));
      if (asked === 'threads') {
        // again, warm: pass 1's findings kept from the replay before, the CLI's warm counts
        const warm = JSON.parse(execFileSync(vmsim, ['replay', chase, '--quiet', '--format', 'json', '--start', 'warm'], { encoding: 'utf8' })) as typeof cli;
        await tab.select('[data-setting="start"]', 'warm');
        await tab.click('[data-testid="trace-again"]');
        await tab.waitFor('[data-testid="trace-list"] li[data-status="done"][data-kept="true"]', 120_000);
        await tab.waitFor('[data-testid="trace-where"] tr[data-trace="1"]', 30_000);
        const again = await tab.evaluate(() => [...document.querySelectorAll('[data-testid="trace-where"] tr[data-trace="1"]')].map((tr) => ({
          mode: tr.getAttribute('data-mode'),
          cells: [...tr.querySelectorAll('td[data-field]')].map((td) => Number(td.textContent!.replace(/[^0-9]/g, ''))),
        })));
        expect(again).toEqual(want(warm));
        expect(again).not.toEqual(want(cli));
      }
      expect(tab.problems).toEqual([]);
      await tab.close();
    }, 180_000);
  });
}
