// The page's replay at scale, as a learner meets it: the real class server and headless
// Chromium; a whole program's trace (hw-lab/build/traces/bench-python-1g.vmtrace, about a
// billion accesses, recorded by `make -C hw-lab bench-traces`) is picked in the Compare
// view's "Your program" panel and replayed through the five modes. The server's page is
// cross-origin isolated, so it replays on threads (replay-mt.worker.ts: the threaded module
// vmsim-mt, as many threads as navigator.hardwareConcurrency says); with ?replay=workers it
// replays in its workers (replay.worker.ts, one per group of modes, one decoding the File
// and handing its batches to the others through shared memory), and the same page without
// the isolating header (as another host may serve it) has each worker stream the File
// itself. Measured: the seconds from picking the file to the
// table of figures, the progress updates the page showed, the peak resident memory of the
// page's renderer process (where the workers run) and its growth over the page before the
// replay (the kernel's own high-water mark, VmHWM, reset before the replay through
// /proc/PID/clear_refs: nothing sampled), and how busy each of the page's workers and
// threads was each second (its thread's CPU ticks, /proc/PID/task, read 4 times a second: a
// sampler reading them 10 times a second took a processor from the replay's threads too). Each round, in turn: the
// page on threads, the page told it has one processor (one thread), the page in its workers
// (?replay=workers), its workers each streaming the File (not isolated), the native CLI on
// threads and with --jobs 1; the ratios page/native, parallel/serial (page, and native) are
// medians of the per-round ratios. The page's figures must equal the CLI's. The page on
// threads then replays the file again with the "again" button, warm and then cold (its first
// settings), as a learner comparing settings does: pass 1's findings kept from the first
// replay (REPLAY_AGAIN=0 leaves it out); the cold one's time against the first's.
// Then, on a machine with more than 2 processors (or with REPLAY_SCALING=1; 0 leaves it
// out), how the replay grows with processors: one round, in turn for each count k from 1
// to the processors (at most 8), the page told it has k (k threads) and the CLI with
// --jobs k, each against its one-thread / --jobs 1 time of the same round.
// Each replay's CPU is counted too (the renderer's; the CLI's through GNU time), and what the
// rest of the machine used meanwhile (/proc/stat): parallel / serial is about the CPU on
// threads against one, over the processors kept busy, so a ratio over its target says whether
// other work took the processors or the threads' CPU grew (which, in a VM whose processors
// change speed, may be the VM's speed as much as the work: replay.md, "What the threads' CPU
// says about a slow hour"). And each round measures the machine's own floor for parallel /
// serial: two one-thread replays at once (two pages, then two CLIs), which share nothing, so
// no replay shared out over two processors can beat half their time; on a machine whose two
// processors slow each other (a VM's slow hour, two hyperthreads) that floor is over 0.50, and
// parallel / serial over the floor is what the replay's threads themselves add (REPLAY_FLOOR=0
// leaves it out).
// Prints one line per figure; speed is printed, never asserted.
//   [REPLAY_ROUNDS=3] [REPLAY_SCALING=0|1] [REPLAY_AGAIN=0|1] [REPLAY_FLOOR=0|1] node web/scripts/bench-replay.mjs [TRACE]
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { startClassServer } from './class-server.mjs';
import { launchChromium } from './chromium.mjs';
import { traceHeader } from './trace-header.mjs';

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
function rssKiB(pid, field = 'VmRSS') {
  try { return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0); } catch { return 0; }
}
/** Starts a process's peak resident memory (VmHWM) again from what it holds now; false where
 * the kernel would not (then the peak is sampled). */
function resetPeak(pid) {
  try { writeFileSync(`/proc/${pid}/clear_refs`, '5'); return rssKiB(pid, 'VmHWM') <= rssKiB(pid) + 1024; } catch { return false; }
}
/** The CPU ticks (user + system, USER_HZ 100) in a /proc stat line, after the name in parentheses. */
function statTicks(stat) {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(f[11]) + Number(f[12]);
}
/** CPU seconds (user + system) a process has used, its threads (the page's workers) included. */
function cpuSeconds(pid) {
  try { return statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8')) / 100; } catch { return 0; }
}
/** The CPU ticks (user + system, USER_HZ 100) of each of a process's dedicated workers' threads, by thread id. */
function workerTicks(pid, into) {
  let tasks = [];
  try { tasks = readdirSync(`/proc/${pid}/task`); } catch { return; }
  for (const t of tasks) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      if (!st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')).startsWith('DedicatedWorker')) continue;
      into.set(Number(t), statTicks(st));
    } catch { /* gone */ }
  }
}
/** The machine's busy CPU seconds so far, every processor's (/proc/stat: all but idle and
 * iowait); NaN without /proc. What the machine used beyond the replay measured (the browser's
 * other processes, the class server, this script, anything else running) is this over the
 * replay's time less the replay's own CPU. */
function busySeconds() {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
    return (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) / 100;
  } catch { return NaN; }
}
function isRenderer(pid) {
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer'); } catch { return false; }
}

const header = traceHeader(trace);
console.log(`trace: ${header.label ?? header.program}: ${header.accesses.toLocaleString('en')} accesses on ${header.pages} pages, ${(statSync(trace).size / 2 ** 20).toFixed(1)} MiB`);

const rounds = Math.max(1, Number(process.env.REPLAY_ROUNDS ?? 3));
const server = await startClassServer();
const browser = await launchChromium();

/** The figures the page's table shows for the first trace, mode by mode. */
const tableRows = (page) => page.$$eval('[data-testid="trace-table"] tr[data-trace="1"]', (trs) => trs.map((tr) => ({
  mode: tr.getAttribute('data-mode'), refs: tr.querySelector('[data-field="refs_per_access"]').textContent,
  overhead: tr.querySelector('[data-field="overhead_pct"]').textContent,
})));

/** A fresh page with the Compare view's "Your program" panel, noting what it shows as it
 * changes (its progress values, its replay's time from the file's pick to its table, by the
 * page's clock); the arguments as pageReplay's. */
async function openPage(workers, isolated = true, inWorkers = false) {
  const page = await browser.newPage();
  if (!isolated) await page.route('**/*', async (route) => {
    const r = await route.fetch();
    const headers = { ...r.headers() };
    delete headers['cross-origin-embedder-policy'];
    await route.fulfill({ response: r, headers });
  });
  if (workers) await page.addInitScript((n) => { Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', { get: () => n }); }, workers);
  await page.goto(server.url + `?view=compare&example=ept-4k${inWorkers ? '&replay=workers' : ''}`);
  await page.waitForSelector('[data-testid="trace-panel"]');
  // what the page shows, noted in the page as it changes (a MutationObserver: no polling of
  // the page's own, which would wake its threads and take a processor from the replay's),
  // and the replay's time from the file's pick to its table, by the page's clock
  await page.evaluate(() => {
    const w = window;
    w.__progress = [];
    document.querySelector('[data-testid="trace-file"]').addEventListener('change', () => { w.__t0 = performance.now(); }, { capture: true });
    new MutationObserver(() => {
      const p = document.querySelector('[data-testid="trace-progress"]');
      if (p) w.__how = `${p.getAttribute('data-workers')} ${p.getAttribute('data-threads') === 'true' ? 'threads' : 'workers'}`;
      if (p?.getAttribute('data-kept') === 'true') w.__kept = true;
      const v = p?.querySelector('progress')?.getAttribute('value');
      if (v !== null && v !== undefined && w.__progress.at(-1) !== v) w.__progress.push(v);
      if (!w.__t1 && document.querySelector('[data-testid="trace-table"] tr[data-trace="1"]')) w.__t1 = performance.now();
    }).observe(document.body, { subtree: true, childList: true, attributes: true });
  });
  return page;
}

/** One replay in a fresh page; workers: what navigator.hardwareConcurrency says there (undefined: the machine's);
 * isolated false: the page served without Cross-Origin-Embedder-Policy (each worker streams the File);
 * inWorkers: the page asked for its workers (?replay=workers) instead of its threads. */
async function pageReplay(workers, isolated = true, inWorkers = false, again = false) {
  const page = await openPage(workers, isolated, inWorkers);
  try {
    // a learner picks a file a second or more after the panel appears; the page readies the
    // threaded replay's worker in that idle time (runner.ts, warmThreads)
    await page.waitForTimeout(1000);
    const renderers = descendants(process.pid).filter(isRenderer);
    const hwm = renderers.every(resetPeak);
    const before = new Map(renderers.map((p) => [p, rssKiB(p)]));
    const peak = new Map(before);
    const cpu0 = new Map(renderers.map((p) => [p, cpuSeconds(p)]));
    const busy0 = busySeconds();
    // each worker's thread, read until it ends (a worker's thread goes when the replay is over)
    const ticks0 = new Map(), ticks = new Map();
    for (const p of renderers) workerTicks(p, ticks0);
    const sampler = setInterval(() => { for (const p of renderers) { if (!hwm) peak.set(p, Math.max(peak.get(p), rssKiB(p))); workerTicks(p, ticks); } }, 250);
    // each worker's share of each second (ticks of USER_HZ 100 in that second), the lead first
    const perSecond = [];
    let lastTicks = new Map(ticks0);
    const seconds1 = setInterval(() => {
      const now = new Map(ticks);
      perSecond.push([...now].sort((a, b) => a[0] - b[0]).map(([t, n]) => n - (lastTicks.get(t) ?? n)));
      lastTicks = now;
    }, 1000);
    await page.setInputFiles('[data-testid="trace-file"]', trace);
    // looked for once a second: the time itself is the page's (__t0 to __t1)
    await page.waitForFunction(() => window.__t1 !== undefined, null, { polling: 1000, timeout: 900_000 });
    const seconds = await page.evaluate(() => (window.__t1 - window.__t0) / 1000);
    clearInterval(sampler);
    clearInterval(seconds1);
    if (hwm) for (const p of renderers) peak.set(p, Math.max(before.get(p), rssKiB(p, 'VmHWM')));
    const cpu = Math.max(...renderers.map((p) => cpuSeconds(p) - cpu0.get(p)));
    const rest = busySeconds() - busy0 - cpu;
    if (await page.evaluate(() => crossOriginIsolated) !== isolated) throw new Error(`the page was ${isolated ? 'not ' : ''}cross-origin isolated`);
    const progress = await page.evaluate(() => window.__progress.length);
    const how = await page.evaluate(() => window.__how ?? '?');
    const rows = await tableRows(page);
    // the renderer that grew most is the one with the workers
    let worker = renderers[0];
    for (const p of renderers) if (peak.get(p) - before.get(p) > peak.get(worker) - before.get(worker)) worker = p;
    // the replay's workers' threads in the order they started (thread ids grow): the lead first
    const workerCpu = [...ticks].sort((a, b) => a[0] - b[0]).map(([t, n]) => (n - (ticks0.get(t) ?? 0)) / 100)
      .filter((c) => c >= 0.5);
    // again: the same file replayed warm, then cold again (the first replay's settings), each
    // with the "again" button as a learner does: pass 1's findings kept from the first; the
    // cold one's time from the click to its table, against the first replay's
    let againSeconds;
    if (again) {
      for (const start of ['warm', 'cold']) {
        await page.selectOption('[data-setting="start"]', start);
        await page.waitForSelector('[data-testid="trace-table"] tr[data-trace="1"]', { state: 'detached' });
        await page.evaluate(() => { window.__t1 = undefined; window.__kept = false; window.__t0 = performance.now(); });
        await page.click('[data-testid="trace-again"]');
        await page.waitForFunction(() => window.__t1 !== undefined, null, { polling: 1000, timeout: 900_000 });
        if (!await page.evaluate(() => window.__kept)) throw new Error(`the replay again (${start}) ran its pass 1: the findings were not kept`);
      }
      againSeconds = await page.evaluate(() => (window.__t1 - window.__t0) / 1000);
      const againRows = await tableRows(page);
      if (JSON.stringify(againRows) !== JSON.stringify(rows)) throw new Error('the replay again gave other figures than the first');
    }
    return { seconds, againSeconds, cpu, rest, workerCpu, perSecond, progress, how, rows, peakMiB: peak.get(worker) / 1024, growthMiB: (peak.get(worker) - before.get(worker)) / 1024 };
  } finally {
    await page.close();
  }
}

/** The machine's own floor for parallel / serial in the page: two fresh pages, each told it
 * has one processor, replay the file at once, as two learners' tabs on one machine would. A
 * replay shared out perfectly over two processors cannot take less than half the time these
 * two independent ones take together; the seconds are the later of the two (each by its
 * page's clock, picked at the same moment), and each page's figures are returned. */
async function pagePair() {
  const pages = [await openPage(1), await openPage(1)];
  try {
    await pages[0].waitForTimeout(1000);
    await Promise.all(pages.map((page) => page.setInputFiles('[data-testid="trace-file"]', trace)));
    await Promise.all(pages.map((page) => page.waitForFunction(() => window.__t1 !== undefined, null, { polling: 1000, timeout: 900_000 })));
    const each = await Promise.all(pages.map((page) => page.evaluate(() => (window.__t1 - window.__t0) / 1000)));
    const rows = await Promise.all(pages.map(tableRows));
    return { seconds: Math.max(...each), each, rows };
  } finally {
    await Promise.all(pages.map((page) => page.close()));
  }
}

/** The CLI's replay of the trace as JSON, on its default threads or on `jobs`. */
const cliArgs = (jobs) => ['replay', trace, '--quiet', '--format', 'json', ...(jobs ? ['--jobs', String(jobs)] : [])];
/** The CLI's JSON report as the rows the page's table shows. */
const cliRows = (json) => JSON.parse(json).modes.map((m) => ({
  mode: m.mode, refs: m.refs_per_access.toFixed(3), overhead: m.overhead_pct === null ? '–' : `${m.overhead_pct.toFixed(2)} %`,
}));

// the native CLI on the same trace (GNU time for its CPU and peak memory where there is one)
const time = existsSync('/usr/bin/time') ? ['/usr/bin/time', '-f', '%U %S %M'] : [];
function nativeReplay(jobs) {
  const busy0 = busySeconds();
  const t0 = performance.now();
  const n = spawnSync(time[0] ?? vmsim, [...time.slice(1), ...(time.length ? [vmsim] : []), ...cliArgs(jobs)], { encoding: 'utf8', maxBuffer: 1 << 24 });
  const seconds = (performance.now() - t0) / 1000;
  if (n.status !== 0) { console.error(n.stderr); process.exit(1); }
  const [user, sys, kib] = time.length ? n.stderr.trim().split('\n').at(-1).split(' ').map(Number) : [NaN, NaN, NaN];
  const cpu = user + sys;
  const rest = busySeconds() - busy0 - cpu;
  const rows = cliRows(n.stdout);
  return { seconds, cpu, rest, mib: kib / 1024, rows };
}

/** The same floor natively: two `vmsim replay --jobs 1` at once, the seconds until both are
 * done, and each one's figures. */
async function nativePair() {
  const t0 = performance.now();
  const one = () => new Promise((resolve, reject) => {
    const p = spawn(vmsim, cliArgs(1), { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(cliRows(out)) : reject(new Error(`vmsim replay --jobs 1 exited with ${code}`))));
  });
  const rows = await Promise.all([one(), one()]);
  return { seconds: (performance.now() - t0) / 1000, rows };
}

const fix = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '?');
const median = (a) => { const b = [...a].sort((x, y) => x - y); return b.length % 2 ? b[(b.length - 1) / 2] : (b[b.length / 2 - 1] + b[b.length / 2]) / 2; };
const workers = typeof navigator !== 'undefined' && navigator.hardwareConcurrency ? navigator.hardwareConcurrency : cpus().length;
console.log(`${rounds} rounds, each in turn: the page on threads (${Math.min(8, workers)} here), the page on one thread, the page in its workers (${Math.min(5, workers)} here, one decoder shared; ?replay=workers), the page's workers each reading the file (not isolated), the CLI on threads, the CLI with --jobs 1; load average at the start ${loadavg()[0].toFixed(1)}`);
const runs = [];
let same = true;
const scaling = process.env.REPLAY_SCALING === undefined ? workers > 2 : process.env.REPLAY_SCALING === '1';
// the machine's own floor for parallel / serial, each round (REPLAY_FLOOR=0: not)
const floor = process.env.REPLAY_FLOOR !== '0';
// the page on threads also replays the file again, as the "again" button does (REPLAY_AGAIN=0: not)
const again = process.env.REPLAY_AGAIN !== '0';
try {
  for (let i = 0; i < rounds; i++) {
    const par = await pageReplay(undefined, true, false, again);
    const ser = await pageReplay(1);
    const pair = floor ? await pagePair() : undefined;
    const wrk = await pageReplay(undefined, true, true);
    const own = await pageReplay(undefined, false);
    const npar = nativeReplay();
    const nser = nativeReplay(1);
    const npair = floor ? await nativePair() : undefined;
    same &&= [par, ser, wrk, own, npar].every((r) => JSON.stringify(r.rows) === JSON.stringify(nser.rows));
    if (floor) same &&= [...pair.rows, ...npair.rows].every((r) => JSON.stringify(r) === JSON.stringify(nser.rows));
    if (!par.how.endsWith('threads') || !wrk.how.endsWith('workers')) throw new Error(`the page replayed on ${par.how} and ${wrk.how}: not on threads and in workers as asked`);
    runs.push({ par, ser, wrk, own, npar, nser, pair, npair });
    console.log(`round ${i + 1}: page on threads ${par.seconds.toFixed(1)} s (${par.how}; one thread ${ser.seconds.toFixed(1)} s; in workers ${wrk.seconds.toFixed(1)} s, ${wrk.how}; workers each reading the file ${own.seconds.toFixed(1)} s), CPU ${par.cpu.toFixed(1)} s (${ser.cpu.toFixed(1)}, ${wrk.cpu.toFixed(1)}, ${own.cpu.toFixed(1)}), native ${npar.seconds.toFixed(1)} s, CPU ${fix(npar.cpu)} s (--jobs 1 ${nser.seconds.toFixed(1)} s, CPU ${fix(nser.cpu)} s); the rest of the machine's CPU meanwhile at most ${fix(Math.max(...[par, ser, wrk, own, npar, nser].map((r) => r.rest)))} s; ${again ? `again on threads, pass 1 kept, ${par.againSeconds.toFixed(1)} s (${(par.againSeconds / par.seconds).toFixed(2)} of the first); ` : ''}renderer peak ${par.peakMiB.toFixed(0)} MiB (one thread ${ser.peakMiB.toFixed(0)} MiB, in workers ${wrk.peakMiB.toFixed(0)} MiB)${floor ? `; two one-thread replays at once: pages ${pair.each.map((x) => x.toFixed(1)).join(' and ')} s, native ${npair.seconds.toFixed(1)} s` : ''}`);
  }
  if (scaling) {
    const most = Math.min(8, workers);
    console.log(`how the replay grows with processors (one round, k = 1 to ${most}, in turn; this machine has ${workers}):`);
    let one, nOne;
    for (let k = 1; k <= most; k++) {
      const pg = await pageReplay(k);
      const nt = nativeReplay(k);
      same &&= [pg, nt].every((r) => JSON.stringify(r.rows) === JSON.stringify(runs[0].nser.rows));
      one ??= pg;
      nOne ??= nt;
      console.log(`  ${k} processor${k > 1 ? 's' : ' '}: page ${pg.seconds.toFixed(1)} s (${(pg.seconds / one.seconds).toFixed(2)} of one thread's; CPU ${pg.cpu.toFixed(1)} s, peak ${pg.peakMiB.toFixed(0)} MiB), native --jobs ${k} ${nt.seconds.toFixed(1)} s (${(nt.seconds / nOne.seconds).toFixed(2)} of --jobs 1's)`);
    }
  } else {
    console.log(`how the replay grows with processors: the rounds above are 1 and ${Math.min(8, workers)}, all this machine has (REPLAY_SCALING=1 runs the sweep anyway)`);
  }
} finally {
  await browser.close();
  await server.close();
}
const m = (f) => median(runs.map(f));
const procRead = existsSync('/proc/self/task');
const last = runs.at(-1);
console.log(`page (Chromium, on threads, five modes, cold): ${m((r) => r.par.seconds).toFixed(1)} s from picking the file to the figures (median), ${last.par.progress} progress updates shown`);
console.log(`page's CPU time (its renderer, workers and threads included): ${m((r) => r.par.cpu).toFixed(1)} s on threads, ${m((r) => r.ser.cpu).toFixed(1)} s on one, ${m((r) => r.wrk.cpu).toFixed(1)} s in workers, ${m((r) => r.own.cpu).toFixed(1)} s with workers each reading the file`);
console.log(`page's threads (the worker, then the module's threads), each one's CPU in the last round (a thread busy the whole replay would show its ${last.par.seconds.toFixed(1)} s): ${last.par.workerCpu.map((c) => `${c.toFixed(1)} s`).join(', ') || (procRead ? 'none busy 0.5 s or more (a short replay)' : 'not read (no /proc)')}`);
console.log(`page's threads, % of each second busy in the last round: ${last.par.perSecond.map((w) => w.join('/')).join(' ') || (procRead ? 'none (the replay took under a second)' : 'not read (no /proc)')}`);
console.log(`page, one thread: ${m((r) => r.ser.seconds).toFixed(1)} s; in workers (?replay=workers): ${m((r) => r.wrk.seconds).toFixed(1)} s, renderer peak ${m((r) => r.wrk.peakMiB).toFixed(0)} MiB; workers each reading the file (not cross-origin isolated): ${m((r) => r.own.seconds).toFixed(1)} s, renderer peak ${m((r) => r.own.peakMiB).toFixed(0)} MiB`);
console.log(`page's renderer process: peak ${m((r) => r.par.peakMiB).toFixed(0)} MiB resident on threads, ${m((r) => r.par.growthMiB).toFixed(0)} MiB more than the page before the replay (one thread: ${m((r) => r.ser.peakMiB).toFixed(0)} MiB, ${m((r) => r.ser.growthMiB).toFixed(0)} MiB more)`);
console.log(`native (vmsim replay, five modes, cold): threads ${m((r) => r.npar.seconds).toFixed(1)} s, peak ${m((r) => r.npar.mib).toFixed(1)} MiB; --jobs 1 ${m((r) => r.nser.seconds).toFixed(1)} s, ${m((r) => r.nser.mib).toFixed(1)} MiB`);
if (again) console.log(`page, the same file again (the "again" button, cold after warm: pass 1's findings kept from the first replay), on threads: ${m((r) => r.par.againSeconds).toFixed(1)} s against ${m((r) => r.par.seconds).toFixed(1)} s the first time (median of the rounds' ratios ${m((r) => r.par.againSeconds / r.par.seconds).toFixed(2)}); the same figures`);
console.log(`page / native: ${m((r) => r.par.seconds / r.npar.seconds).toFixed(2)}x (one thread / --jobs 1: ${m((r) => r.ser.seconds / r.nser.seconds).toFixed(2)}x)`);
console.log(`parallel / serial: page ${m((r) => r.par.seconds / r.ser.seconds).toFixed(2)} (on threads / one thread; in workers ${m((r) => r.wrk.seconds / r.ser.seconds).toFixed(2)}, workers each reading the file ${m((r) => r.own.seconds / r.ser.seconds).toFixed(2)}, each against one thread), native ${m((r) => r.npar.seconds / r.nser.seconds).toFixed(2)} (medians of ${rounds} paired rounds; load average at the end ${loadavg()[0].toFixed(1)})`);
// each round's floor: the pair's time over twice one alone
const pageFloor = (r) => r.pair.seconds / (2 * r.ser.seconds);
const nativeFloor = (r) => r.npair.seconds / (2 * r.nser.seconds);
if (floor) console.log(`the machine's floor for parallel / serial (two one-thread replays at once, as two programs or two learners' tabs on this machine, over twice one alone: what a perfect share of the work over 2 processors would reach here this round): page ${m(pageFloor).toFixed(2)}, native ${m(nativeFloor).toFixed(2)} (0.50 where the processors do not slow each other); parallel / serial over it, what the replay's threads add: page ${m((r) => r.par.seconds / r.ser.seconds / pageFloor(r)).toFixed(2)}x, native ${m((r) => r.npar.seconds / r.nser.seconds / nativeFloor(r)).toFixed(2)}x (medians of the rounds' ratios; 1.10x at 0.50 is 0.55)`);
console.log(`CPU on threads against one: page ${fix(m((r) => r.par.cpu / r.ser.cpu), 2)}x (the renderer's), native ${fix(m((r) => r.npar.cpu / r.nser.cpu), 2)}x (the CLI's, through GNU time): what the threads add to the work, or the VM's processors slower while they ran; parallel / serial is about this over the processors the threads keep busy (medians of the rounds' ratios)`);
console.log(`the rest of the machine while each replay ran: at most ${fix(Math.max(...runs.flatMap((r) => [r.par, r.ser, r.wrk, r.own, r.npar, r.nser].map((x) => x.rest))))} s of CPU (the browser's other processes, the class server, this script, anything else running: /proc/stat less the replay's own)`);
console.log(`the page's figures ${same ? 'equal' : 'DIFFER FROM'} the CLI's`);
if (!same) process.exit(1);
