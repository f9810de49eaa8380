// Web benchmark: what the first visit transfers (JS + CSS + WASM, gzip) and how long the
// walk view takes to appear, in headless Chromium against `vite preview` on localhost;
// then the long tasks (> 50 ms) seen while the ept-4k walk plays. Needs web/dist
// (make build). Prints one line per figure; `--json` prints them as one JSON object.
import { readFileSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { join, extname } from 'node:path';
import { preview } from 'vite';
import { chromium } from 'playwright-core';

const web = fileURLToPath(new URL('..', import.meta.url));
const dist = join(web, 'dist');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const BUDGET_KB = 300;
const BUDGET_MS = 1000;

if (!existsSync(join(dist, 'index.html'))) {
  console.error('web/dist is missing: run `make build` (or npx vite build --config web/vite.config.ts) first');
  process.exit(2);
}

const server = await preview({
  configFile: join(web, 'vite.config.ts'),
  preview: { port: 0, host: '127.0.0.1', strictPort: false },
  logLevel: 'silent',
});
const base = server.resolvedUrls.local[0];
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

try {
  // 1. Initial transfer: every file the first visit fetches, gzip-compressed as a server would.
  const page = await browser.newPage();
  const fetched = new Set();
  page.on('request', (r) => { const u = new URL(r.url()); if (u.origin === new URL(base).origin) fetched.add(u.pathname); });
  await page.goto(base + '?example=ept-4k&access=0&step=0');
  await page.waitForSelector('body[data-ready="1"]');
  await page.waitForLoadState('networkidle');
  await page.close();
  const byKind = {};
  let total = 0;
  for (const p of fetched) {
    const file = join(dist, p === '/' ? 'index.html' : decodeURIComponent(p));
    if (!existsSync(file)) continue;
    const gz = gzipSync(readFileSync(file), { level: 9 }).length;
    const kind = extname(file).slice(1) || 'html';
    byKind[kind] = (byKind[kind] ?? 0) + gz;
    total += gz;
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
    initial_transfer_gzip_bytes: total,
    initial_transfer_by_kind_gzip_bytes: byKind,
    first_render_ms_median: Math.round(median),
    first_render_ms_runs: times.map(Math.round),
    playback_steps: total_steps,
    playback_ms: playMs,
    long_tasks: long.length,
    long_task_ms_max: Math.round(Math.max(0, ...long)),
  };
  if (process.argv.includes('--json')) console.log(JSON.stringify(res, null, 2));
  else {
    console.log(`web: initial transfer ${kb(total)} KiB gzip (${Object.entries(byKind).map(([k, v]) => `${k} ${kb(v)}`).join(', ')}); budget ${BUDGET_KB} KiB: ${total / 1024 < BUDGET_KB ? 'ok' : 'OVER'}`);
    console.log(`web: first render of the walk view ${res.first_render_ms_median} ms median of ${RUNS} (${res.first_render_ms_runs.join(', ')}); budget ${BUDGET_MS} ms: ${median < BUDGET_MS ? 'ok' : 'OVER'}`);
    console.log(`web: playback of ${total_steps} steps at 4x in ${playMs} ms: ${long.length} long tasks (max ${res.long_task_ms_max} ms)`);
  }
} finally {
  await browser.close();
  await new Promise((r) => server.httpServer.close(r));
}
