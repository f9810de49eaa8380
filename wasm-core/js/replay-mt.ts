/* The page's replay on threads: the threaded build of `vmsim replay` (vmsim-mt.mjs, built
 * with -pthread from cli/replay.c: docs/replay.md, "The page on threads") in one
 * WebAssembly memory shared by its threads. The file's compressed bytes go into that
 * memory whole; the module replays them on a thread of its own, which starts the others,
 * while this side reads the file in (the replay's reads wait for the bytes they ask for),
 * polls the progress and returns to its event loop (where the module starts its threads).
 * The same figures, byte for byte, as the one-worker replay and the CLI
 * (tests/wasm/replay-mt.test.ts). */
import { progressFraction, TraceError, type ReplayOptions, type ReplayProgress } from './replay';

/** What the threaded module exports (wasm-core/Makefile, MT_FNS). */
export interface MtModule {
  _malloc(n: number): number;
  _free(p: number): void;
  _vmsim_mt_start(bytes: number, len: number, opts: number, jobs: number, chunkBatches: number, scan: number, scanLen: number): number;
  _vmsim_mt_feed(n: number): void;
  _vmsim_mt_finished(): number;
  _vmsim_mt_finished_at(): number;
  _vmsim_mt_pass(): number;
  _vmsim_mt_done(): number;
  _vmsim_mt_total(): number;
  _vmsim_mt_status(): number;
  _vmsim_mt_stage(): number;
  _vmsim_mt_text(): number;
  _vmsim_mt_error(): number;
  _vmsim_mt_free(): void;
  _vmsim_mt_scan_used(): number;
  _vmsim_mt_scan(): number;
  _vmsim_mt_scan_bytes(): number;
  wasmMemory: WebAssembly.Memory;
  UTF8ToString(p: number): string;
  stringToUTF8(s: string, p: number, max: number): void;
  lengthBytesUTF8(s: string): number;
}

/** The most compressed bytes the page holds in the module's memory at once (with the
 * module, its modes and the trace's tables within the 2 GiB a module may grow to); a
 * larger file is replayed by the workers that stream it (web/src/trace/runner.ts). */
export const MT_MAX_FILE_BYTES = 1 << 30;

/** How often the progress is read and said unless the caller says (MtRun.progressMs: the
 * page passes its PROGRESS_MS, as often as it draws it; each drawing takes a processor from
 * the threads for a while, docs/replay.md, "The progress drawn less often"). The end is seen
 * at once where the worker can wait for it (Atomics.waitAsync: the replay's thread notifies
 * it); elsewhere, and until the first progress is said, it is looked for every POLL_BARE_MS. */
const POLL_MS = 250;
const POLL_BARE_MS = 50;

type WaitAsync = (a: Int32Array, i: number, v: number, ms: number) => { async: false; value: string } | { async: true; value: Promise<string> };

/** A refusal's line as the module writes it ("vmsim replay: trace: ..."), as the page says
 * it: the engine's words alone. */
export function refusalWords(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? '';
  return line.replace(/^vmsim replay: (trace: )?/, '') || 'the replay failed';
}

export interface MtRun {
  /** The threads the replay runs on (the module starts them). */
  jobs: number;
  /** chunk batches (a check: the same figures); 0 the default */
  chunkBatches?: number;
  /** Called every progressMs while the replay runs, and at its end. */
  onProgress?: (p: ReplayProgress) => void;
  /** default POLL_MS */
  progressMs?: number;
  signal?: AbortSignal;
  /** Pass 1's findings from a replay of this same file before (MtRun.keepScan's bytes): the
   * replay takes them in place of its pass 1 where they fit (any options; not where they
   * lack the marks that threads need), and its progress then goes over pass 2 alone. */
  scan?: Uint8Array;
  /** Given this replay's pass 1 findings once it is done, for the next replay of the file. */
  keepScan?: (scan: Uint8Array) => void;
}

/** Reads the whole file into the module's memory, piece by piece as it is read, telling the
 * replay after each piece (vmsim_mt_feed); a read that fails, or a file that gives fewer
 * bytes than its size, is told as -1 (the replay's next wait for bytes fails) and thrown.
 * It stops early, without a word, once over() says the replay has ended (a refused header
 * needs no more of the file). */
async function readInto(mod: MtModule, blob: Blob, at: number, over: () => boolean, signal?: AbortSignal) {
  let off = 0;
  try {
    const reader = blob.stream().getReader();
    try {
      while (off < blob.size) {
        if (signal?.aborted) throw new DOMException('the replay was cancelled', 'AbortError');
        if (over()) return;
        const step = await reader.read();
        if (step.done) break;
        const n = Math.min(step.value.length, blob.size - off);
        new Uint8Array(mod.wasmMemory.buffer, at + off, n).set(step.value.subarray(0, n));  // the memory may have grown
        off += n;
        mod._vmsim_mt_feed(off);
      }
    } finally {
      void reader.cancel().catch(() => undefined);
    }
    if (off !== blob.size) throw new Error(`the file gave ${off} of its ${blob.size} bytes: was it changed while it was read?`);
  } catch (err) {
    mod._vmsim_mt_feed(-1);
    throw err;
  }
}

/** Replays a trace file on `jobs` threads; returns the report text in options.format. A
 * refusal is a TraceError with the one-worker replay's stage and words. */
export async function replayThreaded(mod: MtModule, blob: Blob, options: ReplayOptions, run: MtRun): Promise<string> {
  if (blob.size > MT_MAX_FILE_BYTES) throw new Error(`the threaded replay holds at most ${MT_MAX_FILE_BYTES} bytes of a file`);
  const text = JSON.stringify(options);
  const optLen = mod.lengthBytesUTF8(text) + 1;
  const bytes = mod._malloc(Math.max(1, blob.size));
  const opts = mod._malloc(optLen);
  const scan = run.scan?.length ? mod._malloc(run.scan.length) : 0;
  let started = false;
  try {
    if (!bytes || !opts || (run.scan?.length && !scan)) throw new Error('vmsim: out of WebAssembly memory');
    mod.stringToUTF8(text, opts, optLen);
    if (scan && run.scan) new Uint8Array(mod.wasmMemory.buffer, scan, run.scan.length).set(run.scan);
    // started first, the file read in as it runs: its first reads wait for the bytes
    if (mod._vmsim_mt_start(bytes, blob.size, opts, Math.max(1, Math.floor(run.jobs)), run.chunkBatches ?? 0, scan, run.scan?.length ?? 0)) {
      throw new Error('vmsim: the threaded replay could not start a thread');
    }
    started = true;
    let ended = false;
    const read = readInto(mod, blob, bytes, () => ended, run.signal);
    let readFailed: unknown;
    read.catch((err: unknown) => { readFailed = err ?? new Error('the file could not be read'); });
    const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;
    const at = mod._vmsim_mt_finished_at() >> 2;
    const every = run.progressMs ?? POLL_MS;
    let said = 0;
    await new Promise<void>((resolve, reject) => {
      const tick = () => {
        if (run.signal?.aborted) { reject(new DOMException('the replay was cancelled', 'AbortError')); return; }
        const over = mod._vmsim_mt_finished() !== 0, now = Date.now();
        const pass = mod._vmsim_mt_pass() === 2 ? 2 : 1;
        const done = mod._vmsim_mt_done(), accesses = mod._vmsim_mt_total();
        if (accesses > 0 && (over || now - said >= every - POLL_BARE_MS / 2)) {
          said = now;
          // pass 1's findings taken: the bar over pass 2 alone
          const kept = pass === 2 && mod._vmsim_mt_scan_used() !== 0;
          run.onProgress?.({ pass, done, accesses, fraction: kept ? Math.min(1, done / accesses) : progressFraction(pass, done, accesses), ...(kept ? { kept } : {}) });
        }
        if (over) { resolve(); return; }
        if (!waitAsync) { setTimeout(tick, POLL_BARE_MS); return; }
        // the memory may have grown: a view of it as it is now; every POLL_BARE_MS until the
        // first progress is said (a short pass 1 is seen)
        const w = waitAsync(new Int32Array(mod.wasmMemory.buffer), at, 0, said ? every : POLL_BARE_MS);
        if (w.async) void w.value.then(tick);
        else setTimeout(tick, 0);
      };
      tick();
    });
    // the file read wholly, or the reason it was not (the replay then failed on it)
    ended = true;
    await read.catch(() => undefined);
    if (readFailed) throw readFailed;
    const status = mod._vmsim_mt_status();
    if (status === 0) {
      const n = mod._vmsim_mt_scan_bytes();
      if (n && run.keepScan) run.keepScan(new Uint8Array(mod.wasmMemory.buffer, mod._vmsim_mt_scan(), n).slice());
      return mod.UTF8ToString(mod._vmsim_mt_text());
    }
    const words = refusalWords(mod.UTF8ToString(mod._vmsim_mt_error()));
    if (status !== 2) throw new Error(`vmsim: ${words}`);
    const stage = mod._vmsim_mt_stage();
    throw new TraceError(words, stage === 1 ? 'header' : stage === 3 ? 'gzip' : 'body');
  } finally {
    // a cancelled replay's threads run on, reading the bytes: the page terminates the worker
    // that holds them. (Asked once: vmsim_mt_free clears what vmsim_mt_finished reads.)
    const over = !started || mod._vmsim_mt_finished();
    if (started && over) mod._vmsim_mt_free();
    if (over) {
      if (bytes) mod._free(bytes);
      if (opts) mod._free(opts);
      if (scan) mod._free(scan);
    }
  }
}
