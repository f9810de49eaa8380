// Web benchmark, as a learner meets the page: the real class server (web/server/main.mjs,
// with its build-time brotli/gzip copies) and headless Chromium. What the first visit
// transfers over the wire (HTML + scripts + styles + the engine's wasm, compressed bytes
// plus headers as Chromium counts them), how long the walk view takes to appear, then the
// long tasks (> 50 ms) seen while the ept-4k walk plays. Needs web/dist (make build).
// Prints one line per figure; `--json` prints them as one JSON object.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join, extname } from 'node:path';
import { startClassServer } from './class-server.mjs';
import { launchChromium, wireBytes } from './chromium.mjs';

const web = fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const BUDGET_KB = 300;
const BUDGET_MS = 1000;

if (!existsSync(join(web, 'dist', 'index.html'))) {
  console.error('web/dist is missing: run `make build` first');
  process.exit(2);
}

const server = await startClassServer();
const base = server.url;
const browser = await launchChromium();

try {
  // 1. Initial transfer: every response of the first visit, as received over the wire.
  const page = await browser.newPage();
  const bytes = await wireBytes(page);
  await page.goto(base + '?example=ept-4k&access=0&step=0');
  await page.waitForSelector('body[data-ready="1"]');
  await page.waitForLoadState('networkidle');
  await page.close();
  const byKind = {};
  let total = 0;
  for (const [p, n] of bytes) {
    const kind = extname(p).slice(1) || 'html';
    byKind[kind] = (byKind[kind] ?? 0) + n;
    total += n;
  }

  // 2. Time to first render of the walk view: navigation start to the app's mark, fresh context each run.
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await p.goto(base + '?example=ept-4k&access=0&step=7');
    await p.waitForSelector('body[data-ready="1"]');
    times.push(await p.evaluate(() => performance.getEntriesByName('vmemlab:walk-rendered')[0].startTime));
    await ctx.close();
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];

  // 3. Long tasks while the whole ept-4k walk plays at 4x.
  const p = await browser.newPage();
  await p.goto(base + '?example=ept-4k&access=0&step=0');
  await p.waitForSelector('body[data-ready="1"]');
  await p.evaluate(() => {
    window.__long = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push(e.duration); }).observe({ type: 'longtask' });
  });
  await p.selectOption('select[aria-label="playback speed"]', '4');
  const t0 = Date.now();
  await p.click('#play');
  const total_steps = Number((await p.textContent('#counter')).match(/\/\s*(\d+)/)[1]);
  await p.waitForFunction((n) => document.querySelector('#counter [data-field="step"]').textContent === String(n), total_steps, { timeout: 60_000 });
  const playMs = Date.now() - t0;
  const long = await p.evaluate(() => window.__long);
  await p.close();

  const kb = (b) => (b / 1024).toFixed(1);
  const res = {
    initial_transfer_wire_bytes: total,
    initial_transfer_by_kind_wire_bytes: byKind,
    first_render_ms_median: Math.round(median),
    first_render_ms_runs: times.map(Math.round),
    playback_steps: total_steps,
    playback_ms: playMs,
    long_tasks: long.length,
    long_task_ms_max: Math.round(Math.max(0, ...long)),
  };
  if (process.argv.includes('--json')) console.log(JSON.stringify(res, null, 2));
  else {
    console.log(`web: first page over the wire from the class server ${kb(total)} KiB (${Object.entries(byKind).map(([k, v]) => `${k} ${kb(v)}`).join(', ')}); budget ${BUDGET_KB} KiB: ${total / 1024 < BUDGET_KB ? 'ok' : 'OVER'}`);
    console.log(`web: first render of the walk view ${res.first_render_ms_median} ms median of ${RUNS} (${res.first_render_ms_runs.join(', ')}); budget ${BUDGET_MS} ms: ${median < BUDGET_MS ? 'ok' : 'OVER'}`);
    console.log(`web: playback of ${total_steps} steps at 4x in ${playMs} ms: ${long.length} long tasks (max ${res.long_task_ms_max} ms)`);
  }
} finally {
  await browser.close();
  await server.close();
}
