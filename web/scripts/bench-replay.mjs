// The page's replay at scale, as a learner meets it: the real class server and headless
// Chromium; a whole program's trace (hw-lab/build/traces/bench-python-1g.vmtrace, about a
// billion accesses, recorded by `make -C hw-lab bench-traces`) is picked in the Compare
// view's "Your program" panel and replayed through the five modes by the page's worker,
// which streams the File (replay.worker.ts). Measured: the seconds from picking the file
// to the table of figures, the progress updates the page showed, the peak resident memory
// of the page's renderer process (where the worker runs) and its growth over the page
// before the replay, sampled from /proc every 100 ms; then the native CLI on the same
// trace (`vmsim replay`, seconds and peak memory) in the same run. The page's figures must
// equal the CLI's. Prints one line per figure; speed is printed, never asserted.
//   node web/scripts/bench-replay.mjs [TRACE]
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { startClassServer } from './class-server.mjs';
import { launchChromium } from './chromium.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const trace = process.argv[2] ?? join(root, 'hw-lab', 'build', 'traces', 'bench-python-1g.vmtrace');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
if (!existsSync(trace)) {
  console.error(`${trace} is missing: record it with make -C hw-lab bench-traces`);
  process.exit(2);
}

/** Processes below pid (Chromium's, started by this script), with their resident KiB. */
function descendants(pid) {
  const parent = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch { /* gone */ }
  }
  const out = [];
  const walk = (p) => { for (const [c, pp] of parent) if (pp === p) { out.push(c); walk(c); } };
  walk(pid);
  return out;
}
function rssKiB(pid) {
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0); } catch { return 0; }
}
function isRenderer(pid) {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer'); } catch { return false; }
}

const head = readFileSync(trace).subarray(0, 16 + 65536);
const header = JSON.parse(head.subarray(16, 16 + head.readUInt32LE(12)).toString('utf8'));
console.log(`trace: ${header.label ?? header.program}: ${header.accesses.toLocaleString('en')} accesses on ${header.pages} pages, ${(statSync(trace).size / 2 ** 20).toFixed(1)} MiB`);

const server = await startClassServer();
const browser = await launchChromium();
let result;
try {
  const page = await browser.newPage();
  await page.goto(server.url + '?view=compare&example=ept-4k');
  await page.waitForSelector('[data-testid="trace-panel"]');
  await page.evaluate(() => {
    const w = window;
    w.__progress = [];
    setInterval(() => {
      const v = document.querySelector('[data-testid="trace-progress"] progress')?.getAttribute('value');
      if (v !== null && v !== undefined && w.__progress.at(-1) !== v) w.__progress.push(v);
    }, 50);
  });
  const renderers = descendants(process.pid).filter(isRenderer);
  const before = new Map(renderers.map((p) => [p, rssKiB(p)]));
  const peak = new Map(before);
  const sampler = setInterval(() => { for (const p of renderers) peak.set(p, Math.max(peak.get(p), rssKiB(p))); }, 100);
  const t0 = performance.now();
  await page.setInputFiles('[data-testid="trace-file"]', trace);
  await page.waitForSelector('[data-testid="trace-table"] tr[data-trace="1"]', { timeout: 900_000 });
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const progress = await page.evaluate(() => window.__progress.length);
  const rows = await page.$$eval('[data-testid="trace-table"] tr[data-trace="1"]', (trs) => trs.map((tr) => ({
    mode: tr.getAttribute('data-mode'), refs: tr.querySelector('[data-field="refs_per_access"]').textContent,
    overhead: tr.querySelector('[data-field="overhead_pct"]').textContent,
  })));
  // the renderer that grew most is the one with the worker
  let worker = renderers[0];
  for (const p of renderers) if (peak.get(p) - before.get(p) > peak.get(worker) - before.get(worker)) worker = p;
  result = { seconds, progress, rows, peakMiB: peak.get(worker) / 1024, growthMiB: (peak.get(worker) - before.get(worker)) / 1024 };
} finally {
  await browser.close();
  await server.close();
}

// the native CLI on the same trace, in the same run (GNU time for its peak memory where there is one)
const time = existsSync('/usr/bin/time') ? ['/usr/bin/time', '-f', '%M'] : [];
const t0 = performance.now();
const n = spawnSync(time[0] ?? vmsim, [...time.slice(1), ...(time.length ? [vmsim] : []), 'replay', trace, '--quiet', '--format', 'json'], { encoding: 'utf8', maxBuffer: 1 << 24 });
const nativeSeconds = (performance.now() - t0) / 1000;
if (n.status !== 0) { console.error(n.stderr); process.exit(1); }
const nativeKiB = time.length ? Number(n.stderr.trim().split('\n').at(-1)) : NaN;
const expected = JSON.parse(n.stdout).modes.map((m) => ({
  mode: m.mode, refs: m.refs_per_access.toFixed(3), overhead: m.overhead_pct === null ? '–' : `${m.overhead_pct.toFixed(2)} %`,
}));
const same = JSON.stringify(expected) === JSON.stringify(result.rows);

console.log(`page (Chromium, worker, five modes, cold): ${result.seconds.toFixed(1)} s from picking the file to the figures, ${result.progress} progress updates shown`);
console.log(`page's renderer process: peak ${result.peakMiB.toFixed(0)} MiB resident, ${result.growthMiB.toFixed(0)} MiB more than the page before the replay`);
console.log(`native (vmsim replay, five modes, cold): ${nativeSeconds.toFixed(1)} s, peak ${Number.isNaN(nativeKiB) ? '?' : (nativeKiB / 1024).toFixed(1)} MiB resident`);
console.log(`page / native: ${(result.seconds / nativeSeconds).toFixed(2)}x; the page's figures ${same ? 'equal' : 'DIFFER FROM'} the CLI's`);
if (!same) process.exit(1);
