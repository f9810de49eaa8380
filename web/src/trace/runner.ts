/* Starting a replay. When the page is cross-origin isolated (the class server's is): in one
 * worker that runs the threaded build of `vmsim replay` (replay-mt.worker.ts), on as many
 * threads as the machine has processors, in one shared WebAssembly memory, as the CLI's
 * --jobs does (wasm-core/docs/replay.md, "The page on threads"); where that module cannot
 * be loaded, or for a file over MT_MAX_FILE_BYTES, or with ?replay=workers in the page's
 * address (the way the page replayed before, kept to compare): in Web Workers in the page
 * (replay.worker.ts), one per group of modes
 * (as many groups as the machine has processors, navigator.hardwareConcurrency, at most
 * one per mode); the first merges the others' counts and writes the report, and the page
 * sees one progress bar for all. When the page is cross-origin isolated the first (the
 * smallest group) alone reads and inflates the File: the next worker scans pass 1 and
 * hands out the pages, and the lead decodes pass 2 and hands out the batches, through
 * rings in shared memory (ring.ts); otherwise each streams the File. Tests hand the panel a
 * runner of their own that calls runReplay in the same thread. */
import { modeGroups, REPLAY_MODES, TRACE_HEAD_BYTES, type ReplayMode } from '../../../wasm-core/js/replay';
import { readHeader } from './format.mjs';
import { PROGRESS_MS, progressEvery, type FromPart, type FromWorker, type ReplayOptions, type ToWorker } from './protocol';
import { canShare, newRings } from './ring';
import { MT_MAX_FILE_BYTES } from '../../../wasm-core/js/replay-mt';
import type { FromThreads, ToThreads } from './replay-mt.worker';

export interface Running {
  /** Stops the replay at once (the workers are terminated). */
  cancel(): void;
}

export type Runner = ((blob: Blob, options: ReplayOptions, onMessage: (m: FromWorker) => void) => Running) & {
  /** Gets ready for the next replay before a file is picked (the panel calls it when it is
   * shown and after each replay); the function it returns lets go of what it holds. */
  warm?: () => () => void;
};

/** Workers for a replay here: the processors the browser reports (1 when it does not say). */
export function replayWorkers(): number {
  const n = typeof navigator !== 'undefined' ? navigator.hardwareConcurrency : 0;
  return n > 0 ? n : 1;
}

/** Every worker holds its own WebAssembly memory: the module (16 MiB) and the tables of the
 * trace's pages (about 106 MiB more at the most a replay allows, 2^20 pages: replay.md,
 * "Limits and memory"). As many workers as keep them together within 256 MiB, the budget
 * of the one worker before. */
export function workersWithin(pages: number, cores: number, budgetMiB = 256): number {
  const each = 16 + 106 * Math.min(1, Math.max(0, pages) / 2 ** 20);
  return Math.max(1, Math.min(cores, Math.floor(budgetMiB / each)));
}

async function pagesOf(blob: Blob): Promise<number> {
  try {
    return readHeader(new Uint8Array(await blob.slice(0, TRACE_HEAD_BYTES).arrayBuffer()), blob.size).header.pages;
  } catch {
    return 2 ** 20;     // not a trace: the first worker says why; one is enough for that
  }
}

/** The modes of each of n workers, the lead's first. Each worker reading the file: the
 * modes dealt out evenly. On the shared decoder the lead decodes for every worker, more
 * than the work of all five modes in WebAssembly (wasm-core/docs/replay.md, "The lead's
 * share"): it runs none, and the other workers share the modes. */
export function workerGroups(modes: readonly ReplayMode[], n: number, shared: boolean): ReplayMode[][] {
  const groups = modeGroups(modes, n);
  if (!shared || groups.length < 2) return groups;
  return [[], ...modeGroups(modes, n - 1)];
}

/** How long the threaded replay's worker may take to get its module ready once it has the
 * module's files before the page, from its own thread, gives up on that worker: Firefox ESR
 * now and then blocks the worker while its module starts, for good (1 run in 15 of the
 * pointer-chase example, docs/replay.md, "The threaded module's start in Firefox"). The page
 * then starts another such worker, once, and after that replays in its workers. Each such
 * hang costs a learner this long: the module is ready 0.04 to 0.3 s after its files here,
 * with a build running beside the browser, so 2 s leaves it about 7 times that. */
export const MT_READY_MS = 2_000;
/** And how long it may take to fetch those files (about 0.2 MB over the wire) first. */
export const MT_LOAD_MS = 60_000;

/** The threads for the threaded replay: the processors, at most 8 (the module's pool,
 * MT_THREADS in wasm-core/Makefile: runner.test.ts checks that the two agree). */
export const MT_THREADS = 8;

/** Whether the page replays on threads: cross-origin isolated, a file the module may hold,
 * and not asked for its workers (?replay=workers). */
export function replaysOnThreads(size: number, search = typeof location !== 'undefined' ? location.search : ''): boolean {
  return canShare() && size <= MT_MAX_FILE_BYTES && new URLSearchParams(search).get('replay') !== 'workers';
}

/** A threaded replay's worker, with what it has said of its module so far. */
class ThreadsWorker {
  readonly worker = new Worker(new URL('./replay-mt.worker.ts', import.meta.url), { type: 'module', name: 'vmemlab-replay' });
  readonly made = performance.now();
  loadedAt: number | undefined;
  ready = false;
  /** it said it cannot load the module (a server without it), or failed to start */
  unavailable = false;
  failed = false;
  /** the replay's, once it has one */
  onmessage: ((m: FromThreads) => void) | undefined;
  onerror: ((e: ErrorEvent) => void) | undefined;
  constructor() {
    this.worker.onmessage = (e: MessageEvent<FromThreads>) => {
      const m = e.data;
      if (m.type === 'loaded') this.loadedAt = performance.now();
      else if (m.type === 'ready') this.ready = true;
      else if (m.type === 'unavailable') this.unavailable = true;
      this.onmessage?.(m);
    };
    this.worker.onerror = (e: ErrorEvent) => {
      this.failed = true;
      this.onerror?.(e);
    };
  }
  /** How long the page may still wait for its module: 0 when the wait is over (ready:
   * Infinity). */
  leftMs(): number {
    if (this.ready) return Infinity;
    const now = performance.now();
    if (this.loadedAt === undefined) return Math.max(0, MT_LOAD_MS - (now - this.made));
    return Math.max(0, MT_READY_MS - (now - this.loadedAt));
  }
  /** Failed to start, or its module missed the page's limits: no use to a replay. */
  lost(): boolean {
    return this.failed || this.leftMs() === 0;
  }
}

/** Pass 1's findings of each file replayed on threads here (the worker's 'scan'), by its
 * Blob: the next replay of that file, with any settings, takes them in place of its pass 1
 * (wasm-core/docs/replay.md, "Again without pass 1"). Let go with the Blob; a few MiB at
 * most (its pages, 8 bytes each, and its chunks' marks, 40). */
const scans = new WeakMap<Blob, Uint8Array>();

/** The threaded worker started before a file was picked (warmThreads), and whether the
 * server has no threaded module (then none is started again). */
type Spare = { threads: ThreadsWorker; watch?: ReturnType<typeof setTimeout> };
let spare: Spare | undefined;
let noThreads = false;

function dropSpare() {
  if (!spare) return;
  clearTimeout(spare.watch);
  spare.threads.worker.terminate();
  spare = undefined;
}

/** Takes the spare threaded worker, if there is one whose module may still come. */
function takeSpare(): ThreadsWorker | undefined {
  const s = spare;
  if (!s) return undefined;
  clearTimeout(s.watch);
  spare = undefined;
  return s.threads;
}

/** Starts the threaded replay's worker before a file is picked, so that its module and
 * threads are ready when one is (about 0.1 s of each replay: wasm-core/docs/replay.md, "The
 * replay's start"). Where the page would replay on threads, one such worker at most; one
 * whose module misses the page's limits (MT_LOAD_MS, MT_READY_MS: Firefox's hang) is let
 * go, and the pick starts another as before. The function returned lets go of it, unless
 * a replay took it. */
export function warmThreads(): () => void {
  if (spare) return letGo(spare);
  if (noThreads || !replaysOnThreads(0)) return () => {};
  const threads = new ThreadsWorker();
  const mine: Spare = { threads };
  const check = () => {
    if (spare !== mine) return;
    if (threads.unavailable) { noThreads = true; dropSpare(); return; }
    if (threads.lost()) { dropSpare(); return; }
    if (!threads.ready) mine.watch = setTimeout(check, threads.leftMs());
  };
  threads.onmessage = () => { clearTimeout(mine.watch); check(); };
  threads.onerror = () => check();
  spare = mine;
  threads.worker.postMessage({ type: 'warm' } satisfies ToThreads);
  check();
  return letGo(mine);
}
const letGo = (s: Spare) => () => { if (spare === s) dropSpare(); };

export const workerRunner: Runner = Object.assign((blob: Blob, options: ReplayOptions, onMessage: (m: FromWorker) => void): Running => {
  const workers: Worker[] = [];
  let over = false;
  let late: ReturnType<typeof setTimeout> | undefined;     // the threaded worker's watch
  const stop = () => {
    if (over) return;
    over = true;
    clearTimeout(late);
    for (const w of workers) w.terminate();
  };
  // a worker that cannot start (or dies) ends the replay in words
  const failed = (e: ErrorEvent) => {
    if (over) return;
    onMessage({ type: 'error', stage: 'other', message: e.message || 'the replay worker failed to start' });
    stop();
  };
  const inWorkers = () => {
    void pagesOf(blob).then((pages) => {
      if (over) return;
      const modes = options.modes ?? REPLAY_MODES;
      start(workerGroups(modes, workersWithin(pages, replayWorkers()), canShare()));
    });
  };
  const onThreads = (attempt = 1) => {
    const jobs = Math.min(MT_THREADS, replayWorkers());
    const threads = (attempt === 1 ? takeSpare() : undefined) ?? new ThreadsWorker();
    const worker = threads.worker;
    workers.push(worker);
    const giveUp = () => {
      worker.terminate();
      workers.length = 0;
    };
    // its module's files or its module not ready in time: that worker given up, another
    // tried once, then the workers
    const watchFor = (ms: number) => setTimeout(() => {
      if (over) return;
      giveUp();
      if (attempt < 2) onThreads(attempt + 1);
      else inWorkers();
    }, ms);
    const unavailable = () => {     // a server without the threaded module: the workers
      noThreads = true;
      giveUp();
      inWorkers();
    };
    threads.onmessage = (m) => {
      if (over) return;
      clearTimeout(late);
      if (m.type === 'loaded') { late = watchFor(MT_READY_MS); return; }
      if (m.type === 'ready') return;
      if (m.type === 'unavailable') { unavailable(); return; }
      if (m.type === 'scan') { scans.set(blob, m.bytes); return; }
      onMessage(m);
      if (m.type === 'done' || m.type === 'error') stop();
    };
    threads.onerror = failed;
    // a spare worker (warmThreads) may have said what it has of its module already
    if (threads.unavailable) { unavailable(); return; }
    if (threads.lost()) {
      giveUp();
      onThreads(attempt);
      return;
    }
    if (!threads.ready) late = watchFor(threads.leftMs());
    const scan = scans.get(blob);
    worker.postMessage({ type: 'replay', blob, options, jobs, progressMs: progressEvery(jobs, replayWorkers()), ...(scan ? { scan } : {}) } satisfies ToThreads);
    // with the findings kept, the bar says so from its first moment, not "pass 1" until the
    // module's first word (should the module not take them, that word says pass 1 again)
    if (scan && attempt === 1) onMessage({ type: 'progress', progress: { pass: 2, done: 0, accesses: 0, fraction: 0, kept: true, workers: jobs, shared: true, threads: true } });
  };
  const start = (groups: ReplayMode[][]) => {
    const ring = groups.length > 1 && canShare() ? newRings(groups.length - 1) : undefined;
    groups.forEach(() => workers.push(new Worker(new URL('./replay.worker.ts', import.meta.url), { type: 'module', name: 'vmemlab-replay' })));
    const fraction = groups.map(() => 0);
    const pass = groups.map(() => 1);
    const counts: (string | undefined)[] = groups.map(() => undefined);
    let leadReady = false;
    // one bar for all of them, drawn as often as the threaded replay's (each worker says its
    // progress every PROGRESS_MS; a new pass is said at once)
    const every = progressEvery(groups.length, replayWorkers());
    let said = -Infinity, saidPass = 0;
    const maybeMerge = () => {
      if (leadReady && counts.slice(1).every((c) => c !== undefined)) {
        workers[0].postMessage({ type: 'merge', counts: counts.slice(1) as string[] } satisfies ToWorker);
      }
    };
    workers.forEach((worker, i) => {
      worker.onmessage = (e: MessageEvent<FromPart>) => {
        if (over) return;
        const m = e.data;
        if (m.type === 'progress') {
          // one bar: the mean of the workers' fractions, the pass of the one furthest behind
          fraction[i] = m.progress.fraction;
          pass[i] = m.progress.pass;
          const now = performance.now(), p = Math.min(...pass) as 1 | 2;
          if (p === saidPass && now - said < every - PROGRESS_MS / 10) return;
          said = now;
          saidPass = p;
          const f = fraction.reduce((a, b) => a + b, 0) / fraction.length;
          onMessage({ type: 'progress', progress: { ...m.progress, pass: p, fraction: f, workers: workers.length, shared: !!ring } });
        } else if (m.type === 'counts') {
          counts[i] = m.text;
          fraction[i] = 1;
          maybeMerge();
        } else if (m.type === 'ready') {
          leadReady = true;
          maybeMerge();
        } else {
          onMessage(m);
          if (m.type === 'done' || m.type === 'error') stop();
        }
      };
      worker.onerror = failed;
      worker.postMessage({ type: 'replay', blob, options, part: groups[i], lead: i === 0, ...(ring ? { rings: ring, reader: i - 1 } : {}) } satisfies ToWorker);
    });
  };
  if (!noThreads && replaysOnThreads(blob.size)) onThreads();
  else inWorkers();
  return { cancel: stop };
}, { warm: warmThreads });
