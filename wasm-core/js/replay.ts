/* Replaying a recorded trace (hw-lab/run trace) in the WebAssembly engine: the typed side
 * of include/vmsim_replay.h, and replayBlob(), which streams a trace file through it
 * twice (DecompressionStream inflates the gzip body, built into browsers and Node 20), with
 * progress and cancellation. The report is the same bytes as `vmsim replay` prints. */

export type ReplayMode = 'native' | 'ept' | 'npt' | 'shadow' | 'flat' | 'agile';
/** The modes a replay runs unless `modes` says otherwise (agile only on request). */
export const REPLAY_MODES: readonly ReplayMode[] = ['native', 'ept', 'npt', 'shadow', 'flat'];

export interface ReplayOptions {
  modes?: ReplayMode[];
  preset?: 'x86-server' | 'sunway-1621';
  guest_pages?: '4k' | '2m';
  huge_min?: number;
  host_pages?: '2m' | '4k';
  start?: 'cold' | 'warm';
  format?: 'json' | 'table' | 'csv';
  cycles_per_access?: number;
  cycles_per_ref?: number;
  cycles_per_exit?: number;
  refill_trap?: number;
  /** mode agile: the guest level from which walks are nested (0 all shadow .. 4 all nested) */
  agile_switch_level?: number;
}

/** The report of `--format json` (wasm-core/schema/replay.schema.json). */
export interface ReplayReport {
  format: 'vmsim-replay/1';
  trace: {
    program: string; args: string[]; accesses: number; pages: number;
    counts: { load: number; store: number; fetch: number; modify: number };
    partial: boolean; partial_reason: string | null;
  };
  machine: {
    preset: 'x86-server' | 'sunway-1621'; guest_paging: '4level'; guest_pages: '4k' | '2m'; huge_min: number;
    host_pages: '2m' | '4k'; start: 'cold' | 'warm'; guest_4k_pages: number; guest_2m_pages: number;
    guest_table_frames: number; guest_ram_bytes: number; tlb_entries: number; pwc_entries: number; ntlb_entries: number;
    agile_switch_level?: number;
  };
  cost_model: { cycles_per_access: number; cycles_per_ref: number; cycles_per_exit: number; refill_trap: number };
  modes: ReplayModeResult[];
}

export type ExitKind = 'hidden_page_fault' | 'pt_write' | 'cr3_write' | 'reflected_page_fault' | 'ept_violation' |
  'ept_misconfig' | 'npt_fault' | 'flat_fill';

export interface ReplayModeResult {
  mode: ReplayMode; accesses: number; refs: number; guest_refs: number; nested_refs: number; refs_per_access: number;
  tlb_misses: number; tlb_miss_pct: number; walks: number; pwc_hits: number; ntlb_hits: number; ad_writes: number;
  exits: number; exits_per_1k: number; exits_by_kind: Record<ExitKind, number>; faults: number; cycles: number;
  cycles_per_access: number; overhead_pct: number | null;
}

/** A trace the engine (or the gzip layer) refused: `message` says what is wrong. */
export class TraceError extends Error {
  constructor(message: string, readonly stage: 'header' | 'body' | 'gzip' = 'body') {
    super(message);
    this.name = 'TraceError';
  }
}

/** The handle include/vmsim_replay.h describes. */
export interface TraceReplay {
  /** Where the gzip body starts in the file. */
  readonly bodyOffset: number;
  /** Accesses the header announces. */
  readonly accesses: number;
  scan(body: Uint8Array): void;
  endScan(): void;
  feed(body: Uint8Array): void;
  /** Accesses done in the current pass. */
  done(): number;
  finish(): string;
  close(): void;
}

/** What the Emscripten module offers for the replay (see vmsim.ts). */
export interface ReplayModule {
  _vmsim_replay_open(bytes: number, n: number, fileSize: number, opts: number, optsLen: number): number;
  _vmsim_replay_status(r: number): number;
  _vmsim_replay_error(r: number): number;
  _vmsim_replay_body_offset(r: number): number;
  _vmsim_replay_accesses(r: number): number;
  _vmsim_replay_done(r: number): number;
  _vmsim_replay_scan(r: number, p: number, n: number): number;
  _vmsim_replay_scan_end(r: number): number;
  _vmsim_replay_feed(r: number, p: number, n: number): number;
  _vmsim_replay_finish(r: number, out: number): number;
  _vmsim_replay_free_text(p: number): void;
  _vmsim_replay_close(r: number): void;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPU8: Uint8Array;
  UTF8ToString(p: number): string;
  getValue(p: number, type: string): number;
}

/** The first bytes of a file that always hold the prefix and the header. */
export const TRACE_HEAD_BYTES = 16 + 65536;

export function openReplay(mod: ReplayModule, head: Uint8Array, fileSize: number, options: ReplayOptions = {}): TraceReplay {
  const opts = new TextEncoder().encode(JSON.stringify(options));
  const hp = mod._malloc(head.length + 1);
  const op = mod._malloc(opts.length + 1);
  if (!hp || !op) throw new Error('vmsim: out of WebAssembly memory');
  mod.HEAPU8.set(head, hp);
  mod.HEAPU8.set(opts, op);
  const r = mod._vmsim_replay_open(hp, head.length, fileSize, op, opts.length);
  mod._free(hp);
  mod._free(op);
  if (!r) throw new Error('vmsim: out of WebAssembly memory');
  let buf = 0, cap = 0;
  const check = (stage: 'header' | 'body') => {
    if (mod._vmsim_replay_status(r)) throw new TraceError(mod.UTF8ToString(mod._vmsim_replay_error(r)), stage);
  };
  const put = (body: Uint8Array) => {
    if (body.length > cap) {
      if (buf) mod._free(buf);
      cap = Math.max(body.length, 1 << 16);
      buf = mod._malloc(cap);
      if (!buf) throw new Error('vmsim: out of WebAssembly memory');
    }
    mod.HEAPU8.set(body, buf);   // HEAPU8 is read again here: memory may have grown
  };
  let closed = false;
  const handle: TraceReplay = {
    bodyOffset: 0,
    accesses: 0,
    scan(body) { put(body); mod._vmsim_replay_scan(r, buf, body.length); check('body'); },
    endScan() { mod._vmsim_replay_scan_end(r); check('body'); },
    feed(body) { put(body); mod._vmsim_replay_feed(r, buf, body.length); check('body'); },
    done: () => mod._vmsim_replay_done(r),
    finish() {
      const out = mod._malloc(4);
      try {
        mod._vmsim_replay_finish(r, out);
        check('body');
        const p = mod.getValue(out, 'i32');
        const text = mod.UTF8ToString(p);
        mod._vmsim_replay_free_text(p);
        return text;
      } finally { mod._free(out); }
    },
    close() {
      if (closed) return;
      closed = true;
      if (buf) mod._free(buf);
      mod._vmsim_replay_close(r);
    },
  };
  try {
    check('header');
  } catch (e) { handle.close(); throw e; }
  return { ...handle, bodyOffset: mod._vmsim_replay_body_offset(r), accesses: mod._vmsim_replay_accesses(r) };
}

export interface ReplayProgress {
  pass: 1 | 2;
  /** 0..1 over both passes */
  fraction: number;
  done: number;
  accesses: number;
}

/** Opens the replay on a Blob (a File in the page, fs.openAsBlob in Node). */
export async function openBlob(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions = {}): Promise<TraceReplay> {
  const head = new Uint8Array(await blob.slice(0, TRACE_HEAD_BYTES).arrayBuffer());
  return open(head, blob.size, options);
}

/** Streams the inflated body of the trace through fn, chunk by chunk. */
async function inflate(blob: Blob, offset: number, fn: (chunk: Uint8Array) => void, signal?: AbortSignal) {
  const stream = blob.slice(offset).stream().pipeThrough(new DecompressionStream('gzip'));
  const reader = stream.getReader();
  try {
    for (;;) {
      if (signal?.aborted) throw new DOMException('the replay was cancelled', 'AbortError');
      let step: ReadableStreamReadResult<Uint8Array>;
      try { step = await reader.read(); } catch (e) {
        if (e instanceof DOMException && e.name === 'AbortError') throw e;
        throw new TraceError(`the trace body is not valid gzip data, or it is cut short: the file is corrupt or truncated (${(e as Error).message})`, 'gzip');
      }
      if (step.done) return;
      fn(step.value);
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Replays a trace file: both passes, progress after each piece, cancellable with signal.
 * Returns the report text in options.format (JSON by default).
 */
export async function replayBlob(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions = {}, onProgress?: (p: ReplayProgress) => void, signal?: AbortSignal): Promise<string> {
  const r = await openBlob(open, blob, options);
  try {
    const total = Math.max(1, r.accesses);
    const tell = (pass: 1 | 2) => onProgress?.({ pass, done: r.done(), accesses: r.accesses, fraction: Math.min(1, ((pass - 1) + r.done() / total) / 2) });
    await inflate(blob, r.bodyOffset, (c) => { r.scan(c); tell(1); }, signal);
    r.endScan();
    await inflate(blob, r.bodyOffset, (c) => { r.feed(c); tell(2); }, signal);
    return r.finish();
  } finally {
    r.close();
  }
}
