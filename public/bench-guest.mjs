// make bench: the Live guest tab as a learner meets it, in headless Chromium against the
// real class server (web/server/main.mjs), bytes counted over the wire:
//   - what opening the tab transfers (page, engine, v86, BIOS, saved state), cold cache;
//   - click on the tab to the shell prompt, restoring the saved state, warm HTTP cache;
//   - a cold boot (?boot=cold) to the prompt.
// `--record` writes the two times to web/src/live/boot-timings.json, the figures the tab
// shows while a guest starts (commit that file). Needs `make build`.
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, wireBytes } from '../web/scripts/chromium.mjs';
import { startClassServer } from '../web/scripts/class-server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TIMINGS = path.join(here, '..', 'web', 'src', 'live', 'boot-timings.json');
const BUDGET_MB = 10;
const BUDGET_RESTORE_S = 1.5;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const record = process.argv.includes('--record');

const server = await startClassServer();
const browser = await launchChromium();

const sum = (m) => [...m.values()].reduce((a, b) => a + b, 0);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

try {
  // 1. Transfer: a fresh profile opens the Live tab directly.
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const bytes = await wireBytes(page);
  await page.goto(server.url + '?view=live');
  await page.waitForSelector('body[data-live-ready="1"]', { timeout: 60_000 });
  const first = new Map(bytes);
  const total = sum(first);
  const of = (re) => [...first].filter(([p]) => re.test(p)).reduce((a, [, b]) => a + b, 0);

  // 2. Restore, warm cache: from the walk view, click the tab, wait for the prompt; once
  // clicked at once (the budget's figure), once with the pointer on the tab 300 ms before
  // the click, as a hand moves (the tab's code loads on hover; App.tsx).
  const restores = [], hovered = [];
  for (let i = 0; i < RUNS; i++) {
    for (const [hover, into] of [[0, restores], [300, hovered]]) {
      await page.goto(server.url + '?example=ept-4k');
      await page.waitForSelector('body[data-ready="1"]');
      const tab = page.getByRole('button', { name: 'Live guest' });
      if (hover) { await tab.hover(); await page.waitForTimeout(hover); }
      const t0 = Date.now();
      await tab.click();
      await page.waitForSelector('body[data-live-ready="1"]', { timeout: 60_000 });
      into.push((Date.now() - t0) / 1000);
    }
  }
  // 3. Cold boot to the prompt (warm cache: the kernel's bytes are not what is timed).
  const colds = [];
  for (let i = 0; i < Math.min(RUNS, 2); i++) {
    const t0 = Date.now();
    await page.goto(server.url + '?view=live&boot=cold');
    await page.waitForSelector('body[data-live-ready="1"]', { timeout: 180_000 });
    colds.push((Date.now() - t0) / 1000);
  }
  await ctx.close();

  const mb = (n) => (n / 1e6).toFixed(2);
  const restore = median(restores), cold = median(colds);
  console.log(`live guest tab, cold cache, over the wire: ${mb(total)} MB (budget ${BUDGET_MB} MB${total / 1e6 < BUDGET_MB ? '' : ', OVER'}): ` +
    `saved state ${mb(of(/state\.bin\.zst$/))}, v86 ${mb(of(/v86.*\.wasm$/))}, engine ${mb(of(/vmsim.*\.wasm$/))}, BIOS ${mb(of(/bios\.bin$/))}, scripts+styles ${mb(of(/\.(js|css)$/))}`);
  console.log(`live guest: click to prompt, restoring the saved state, warm cache: median ${restore.toFixed(2)} s of ${RUNS} (${restores.map((s) => s.toFixed(2)).join(', ')}; budget ${BUDGET_RESTORE_S} s)`);
  console.log(`live guest: the same with the pointer on the tab 300 ms before the click: median ${median(hovered).toFixed(2)} s of ${RUNS} (${hovered.map((s) => s.toFixed(2)).join(', ')})`);
  console.log(`live guest: cold boot to prompt in Chromium: median ${cold.toFixed(1)} s of ${colds.length} (${colds.map((s) => s.toFixed(1)).join(', ')})`);
  if (record) {
    const version = browser.version();
    const data = {
      $comment: 'Written by `node public/bench-guest.mjs --record`; shown by the Live guest tab while a guest starts.',
      date: new Date().toISOString().slice(0, 10), cores: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown',
      browser: `Chromium ${version} headless`, cold_boot_s: Number(cold.toFixed(1)), restore_s: Number(restore.toFixed(2)),
      live_tab_transfer_mb: Number(mb(total)),
    };
    writeFileSync(TIMINGS, JSON.stringify(data, null, 2) + '\n');
    console.log(`recorded in ${path.relative(process.cwd(), TIMINGS)}`);
  } else {
    const was = JSON.parse(readFileSync(TIMINGS, 'utf8'));
    console.log(`(the tab shows the figures recorded on ${was.date}: cold boot ${was.cold_boot_s} s, restore ${was.restore_s} s; --record to update)`);
  }
} finally {
  await browser.close();
  await server.close();
}
process.exit(0);
