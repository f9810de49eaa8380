/* Replaying a recorded trace (hw-lab/run trace) in the WebAssembly engine: the typed side
 * of include/vmsim_replay.h, and replayBlob(), which streams a trace file through it
 * twice (the engine inflates the gzip body itself, src/gunzip.c; DecompressionStream,
 * built into browsers and Node 20, where a module lacks it), with progress and cancellation. The report is the same bytes as `vmsim replay` prints. */

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
  /** The learner's machine's costs (replay.md, "Your machine"), priced beside the preset's. */
  machine?: { label?: string; cycles_per_exit?: number; exit_from?: string; cycles_per_ref?: number; ref_from?: string; in_vm?: boolean };
  /** Every mode's tables built in advance (default) or filled on demand (model.md 1). */
  tables?: 'built' | 'on-demand';
  format?: 'json' | 'table' | 'csv';
  cycles_per_access?: number;
  cycles_per_ref?: number;
  cycles_per_exit?: number;
  refill_trap?: number;
  /** mode agile: the guest level from which walks are nested (0 all shadow .. 4 all nested) */
  agile_switch_level?: number;
  /** The modes this handle replays itself (default: all of `modes`); the others' figures are
   * merged in from handles that replayed them (`counts`, `merge`). */
  part?: ReplayMode[];
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
    host_pages: '2m' | '4k'; start: 'cold' | 'warm'; tables: 'built' | 'on-demand'; guest_4k_pages: number; guest_2m_pages: number;
    guest_table_frames: number; guest_ram_bytes: number; tlb_entries: number; pwc_entries: number; ntlb_entries: number;
    agile_switch_level?: number;
  };
  cost_model: {
    cycles_per_access: number; cycles_per_ref: number; cycles_per_exit: number; refill_trap: number;
    /** by-where: a reference costs what the level it was found in costs (model.md 5c); flat: cycles_per_ref. */
    per_ref?: 'by-where' | 'flat'; ref_cycles_by_where?: Partial<Record<RefWhere, number>> | null;
  };
  /** A hw-lab result's costs (`--machine`, option machine), null without one. */
  your_machine?: { label: string; in_vm: boolean; cycles_per_exit: number | null; exit_from: string | null;
    cycles_per_ref: number | null; ref_from: string | null } | null;
  modes: ReplayModeResult[];
}

export type RefWhere = 'walk_cache' | 'l1' | 'l2' | 'llc' | 'memory';

export type ExitKind = 'hidden_page_fault' | 'pt_write' | 'cr3_write' | 'reflected_page_fault' | 'ept_violation' |
  'ept_misconfig' | 'npt_fault' | 'flat_fill';

export interface ReplayModeResult {
  mode: ReplayMode; accesses: number; refs: number; guest_refs: number; nested_refs: number; refs_per_access: number;
  tlb_misses: number; tlb_miss_pct: number; walks: number; pwc_hits: number; ntlb_hits: number; ad_writes: number;
  exits: number; exits_per_1k: number; exits_by_kind: Record<ExitKind, number>; faults: number; cycles: number;
  cycles_per_access: number; overhead_pct: number | null;
  /** references by where the entry was found, the program's accesses likewise, the references' cycles */
  overhead_pct_machine?: number | null;
  refs_by_where?: Record<RefWhere, number>; data_by_where?: Record<Exclude<RefWhere, 'walk_cache'>, number>; ref_cycles?: number;
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
  /** After pass 2: this handle's part as text, for another handle's `merge`. */
  counts(): string;
  /** Another part's `counts`, before `finish`. */
  merge(text: string): void;
  close(): void;
  /** The engine's own gzip reader for a pass (src/gunzip.c): compressed pieces in, the
   * inflated body straight into scan (pass 1) or feed (pass 2), nothing allocated per piece. */
  inflater?(pass: 1 | 2): Inflater;
  /** Pass 1 inflated by this handle for another to scan (the page's shared decoder): each
   * inflated piece (at most 256 KiB) goes to `onPiece` instead of this handle's scan, which
   * gets a view of it into the module's memory (call it again after anything that may grow
   * the memory); the gzip stream is still checked. */
  inflaterOut?(onPiece: (piece: () => Uint8Array, scanAhead?: () => Uint8Array) => void): Inflater;
  /** A piece another handle scanned ahead (inflaterOut's `scanAhead`: that scan's bytes),
   * joined to this handle's scan in order: the same pages, counts and refusals as `scan`
   * (include/vmsim_replay.h, vmsim_replay_scan_joined). */
  scanJoined?(piece: Uint8Array, ahead: Uint8Array): void;
  /** The shared decoder (include/vmsim_replay.h): from now on every batch this handle
   * decodes is handed to `out` (a view into the module's memory, valid during the call);
   * `shareEnd` after each pass's last piece. `group`, asked before each batch of pass 2:
   * whether it goes out with its runs grouped by page, which the handles that take it then
   * need not build (vmsim_replay_share_group). Absent from a module without it. */
  share?(out: (batch: Uint8Array) => void, group?: () => boolean): void;
  shareEnd?(): void;
  /** A batch from another handle's `share` into this one: copied into the module's memory,
   * then `copied()` (the caller may reuse the bytes), then replayed. */
  take?(batch: Uint8Array, copied?: () => void): { pass: 1 | 2; last: boolean };
}

export interface Inflater {
  /** The next compressed piece; final with the last one. */
  push(piece: Uint8Array, final: boolean): void;
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
  _vmsim_replay_counts(r: number, out: number): number;
  _vmsim_replay_merge(r: number, p: number, n: number): number;
  _vmsim_replay_free_text(p: number): void;
  _vmsim_replay_close(r: number): void;
  _vmsim_gunzip_new?(r: number, pass: number): number;
  _vmsim_gunzip_push?(g: number, p: number, n: number, final: number): number;
  _vmsim_gunzip_error?(g: number): number;
  _vmsim_gunzip_free?(g: number): void;
  _vmsim_gunzip_out?(g: number): number;
  _vmsim_replay_ahead_new?(): number;
  _vmsim_replay_ahead_free?(a: number): void;
  _vmsim_replay_ahead_bytes?(a: number): number;
  _vmsim_replay_scan_ahead?(a: number, p: number, n: number): void;
  _vmsim_replay_scan_joined?(r: number, p: number, n: number, a: number): number;
  /** Where vmsim_gunzip_out hands each inflated piece (src/gunzip.c, js_inflated): 0 once taken. */
  onInflated?: (p: number, n: number) => number;
  _vmsim_replay_share?(r: number): number;
  _vmsim_replay_share_end?(r: number): number;
  _vmsim_replay_take?(r: number, b: number, bytes: number): number;
  _vmsim_replay_batch_bytes?(): number;
  _vmsim_replay_batch_alloc?(): number;
  _vmsim_replay_batch_info?(b: number): number;
  _vmsim_replay_batch_free?(b: number): void;
  /** Where vmsim_replay_share hands each batch (src/replay.c, js_replay_batch): 0 once taken. */
  onReplayBatch?: (batch: number, bytes: number) => number;
  /** Whether the next batch goes out with its segments (src/replay.c, js_replay_group). */
  onReplayGroup?: () => boolean;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPU8: Uint8Array;
  UTF8ToString(p: number): string;
  getValue(p: number, type: string): number;
}

/** The most a piece's scan ahead hands over (vmsim_replay_ahead_bytes: its head and at most
 * 2,048 pages of 16 bytes in the 32-bit module; the engine's struct is larger). */
export const AHEAD_MAX_BYTES = 40 << 10;

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
  let sinkFailed: unknown;     // what share's `out` or inflaterOut's `onPiece` threw: the engine only hears that it failed
  const check = (stage: 'header' | 'body') => {
    if (!mod._vmsim_replay_status(r)) return;
    if (sinkFailed !== undefined) throw sinkFailed;
    throw new TraceError(mod.UTF8ToString(mod._vmsim_replay_error(r)), stage);
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
  const takeText = (fn: (r: number, out: number) => number) => {
    const out = mod._malloc(4);
    try {
      fn(r, out);
      check('body');
      const p = mod.getValue(out, 'i32');
      const text = mod.UTF8ToString(p);
      mod._vmsim_replay_free_text(p);
      return text;
    } finally { mod._free(out); }
  };
  const inflaterOf = (pass: 1 | 2) => {
    const g = mod._vmsim_gunzip_new!(r, pass);
    if (!g) throw new Error('vmsim: out of WebAssembly memory');
    return {
      g,
      push(piece: Uint8Array, final: boolean) {
        put(piece);
        if (mod._vmsim_gunzip_push!(g, buf, piece.length, final ? 1 : 0)) {
          check('body');      // the replay refused what it was given
          if (sinkFailed !== undefined) throw sinkFailed;     // or inflaterOut's onPiece did
          throw new TraceError(mod.UTF8ToString(mod._vmsim_gunzip_error!(g)), 'gzip');
        }
      },
      close() { mod._vmsim_gunzip_free!(g); },
    };
  };
  let closed = false;
  let batch = 0;      // take's batch in the module's memory
  let ahead = 0;      // a piece's scan ahead in the module's memory (vmsim_replay_ahead)
  const aheadOf = () => {
    if (!ahead) ahead = mod._vmsim_replay_ahead_new!();
    if (!ahead) throw new Error('vmsim: out of WebAssembly memory');
    return ahead;
  };
  const canAhead = !!(mod._vmsim_replay_ahead_new && mod._vmsim_replay_scan_ahead && mod._vmsim_replay_ahead_bytes && mod._vmsim_replay_scan_joined);
  const handle: TraceReplay = {
    bodyOffset: 0,
    accesses: 0,
    scan(body) { put(body); mod._vmsim_replay_scan(r, buf, body.length); check('body'); },
    scanJoined: canAhead ? (piece, bytes) => {
      if (bytes.length > AHEAD_MAX_BYTES) throw new Error('vmsim: a scan ahead from another build of the engine');
      const a = aheadOf();
      put(piece);
      mod.HEAPU8.set(bytes, a);     // HEAPU8 read again after put: memory may have grown
      mod._vmsim_replay_scan_joined!(r, buf, piece.length, a);
      check('body');
    } : undefined,
    endScan() { mod._vmsim_replay_scan_end(r); check('body'); },
    feed(body) { put(body); mod._vmsim_replay_feed(r, buf, body.length); check('body'); },
    inflater: mod._vmsim_gunzip_new ? (pass) => inflaterOf(pass) : undefined,
    inflaterOut: mod._vmsim_gunzip_out ? (onPiece) => {
      const scanAhead = (p: number, n: number) => () => {
        const a = aheadOf();
        mod._vmsim_replay_scan_ahead!(a, p, n);
        return mod.HEAPU8.subarray(a, a + mod._vmsim_replay_ahead_bytes!(a));
      };
      mod.onInflated = (p, n) => {
        try { onPiece(() => mod.HEAPU8.subarray(p, p + n), canAhead ? scanAhead(p, n) : undefined); return 0; } catch (e) { sinkFailed ??= e; return 1; }
      };
      const inf = inflaterOf(1);
      mod._vmsim_gunzip_out!(inf.g);
      return { push: inf.push, close() { inf.close(); mod.onInflated = undefined; } };
    } : undefined,
    share: mod._vmsim_replay_share ? (out, group) => {
      mod.onReplayBatch = (b, bytes) => {
        try { out(mod.HEAPU8.subarray(b, b + bytes)); return 0; } catch (e) { sinkFailed ??= e; return 1; }
      };
      mod.onReplayGroup = group;
      mod._vmsim_replay_share!(r);
      check('body');
    } : undefined,
    shareEnd: mod._vmsim_replay_share_end ? () => { mod._vmsim_replay_share_end!(r); check('body'); } : undefined,
    take: mod._vmsim_replay_take ? (bytes, copied) => {
      if (bytes.length > mod._vmsim_replay_batch_bytes!()) throw new Error('vmsim: a batch from another build of the engine');
      if (!batch) batch = mod._vmsim_replay_batch_alloc!();
      if (!batch) throw new Error('vmsim: out of WebAssembly memory');
      mod.HEAPU8.set(bytes, batch);
      copied?.();
      const info = mod._vmsim_replay_batch_info!(batch);
      mod._vmsim_replay_take!(r, batch, bytes.length);
      check('body');
      return { pass: ((info >> 1) & 3) as 1 | 2, last: (info & 1) === 1 };
    } : undefined,
    done: () => mod._vmsim_replay_done(r),
    finish: () => takeText(mod._vmsim_replay_finish),
    counts: () => takeText(mod._vmsim_replay_counts),
    merge(text) {
      const bytes = new TextEncoder().encode(text);
      put(bytes);
      mod._vmsim_replay_merge(r, buf, bytes.length);
      check('body');
    },
    close() {
      if (closed) return;
      closed = true;
      if (buf) mod._free(buf);
      if (batch) mod._vmsim_replay_batch_free!(batch);
      if (ahead) mod._vmsim_replay_ahead_free!(ahead);
      if (mod.onReplayBatch) mod.onReplayBatch = undefined;
      if (mod.onReplayGroup) mod.onReplayGroup = undefined;
      mod._vmsim_replay_close(r);
    },
  };
  try {
    check('header');
  } catch (e) { handle.close(); throw e; }
  return { ...handle, bodyOffset: mod._vmsim_replay_body_offset(r), accesses: mod._vmsim_replay_accesses(r) };
}

/** Pass 1's share of the progress bar. Pass 1 (inflating and scanning for the pages) takes
 * about a fifth of a replay's time on a program's trace (the billion accesses: natively 1.8
 * of 8.1 s on threads, 2.95 of 13.8 s with --jobs 1; in the page about 3 of 14 s with 2
 * workers, 4.4 of 22.4 s with one: wasm-core/docs/replay.md), so the bar gives it a fifth
 * rather than half, and moves at about one speed through both passes. */
export const PASS1_SHARE = 0.2;

/** Where the progress bar stands: `done` of `total` accesses through `pass`. */
export function progressFraction(pass: 1 | 2, done: number, total: number): number {
  const f = Math.min(1, Math.max(0, done / Math.max(1, total)));
  return pass === 1 ? PASS1_SHARE * f : PASS1_SHARE + (1 - PASS1_SHARE) * f;
}

export interface ReplayProgress {
  pass: 1 | 2;
  /** 0..1 over both passes (pass 1 to PASS1_SHARE, pass 2 the rest); over pass 2 alone where `kept` */
  fraction: number;
  done: number;
  accesses: number;
  /** The page's workers on it, and whether they shared one decoder (web/src/trace/runner.ts);
   * with `threads`, the threads of the threaded module (replay-mt.ts) in `workers`. */
  workers?: number;
  shared?: boolean;
  threads?: boolean;
  /** Pass 1's findings were kept from a replay of the same file before: pass 2 alone runs,
   * and fraction goes over it (replay-mt.ts). */
  kept?: boolean;
}

/** Opens the replay on a Blob (a File in the page, fs.openAsBlob in Node). */
export async function openBlob(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions = {}): Promise<TraceReplay> {
  const head = new Uint8Array(await blob.slice(0, TRACE_HEAD_BYTES).arrayBuffer());
  return open(head, blob.size, options);
}

/** Streams the compressed body of the trace, piece by piece as the file is read, into the
 * engine's own gzip reader (the File is never read whole, and nothing is allocated per
 * inflated piece: the browser's DecompressionStream hands out a new buffer for every
 * 64 KiB, which a billion-access trace produced faster than they were collected). */
const PUSH_BYTES = 8192;
async function inflateInEngine(blob: Blob, offset: number, inf: Inflater, after: () => void, signal?: AbortSignal) {
  const reader = blob.slice(offset).stream().getReader();
  try {
    let held: Uint8Array | undefined;
    for (;;) {
      if (signal?.aborted) throw new DOMException('the replay was cancelled', 'AbortError');
      const step = await reader.read();
      // one piece held back, so that the last one goes in marked final
      if (held) {
        // in pieces of 8 KiB of gzip: a trace that compresses well inflates a thousandfold
        for (let a = 0; a < held.length; a += PUSH_BYTES) {
          inf.push(held.subarray(a, a + PUSH_BYTES), !!step.done && a + PUSH_BYTES >= held.length);
          after();
        }
      }
      if (step.done) break;
      held = step.value;
    }
    if (!held) inf.push(new Uint8Array(0), true);
  } finally {
    reader.releaseLock();
    inf.close();
  }
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

/** Both passes of one handle over the file, progress after each piece; the handle is left open. */
async function bothPasses(r: TraceReplay, blob: Blob, onProgress?: (p: ReplayProgress) => void, signal?: AbortSignal) {
  const total = Math.max(1, r.accesses);
  const tell = (pass: 1 | 2) => onProgress?.({ pass, done: r.done(), accesses: r.accesses, fraction: progressFraction(pass, r.done(), total) });
  if (r.inflater) await inflateInEngine(blob, r.bodyOffset, r.inflater(1), () => tell(1), signal);
  else await inflate(blob, r.bodyOffset, (c) => { r.scan(c); tell(1); }, signal);
  r.endScan();
  if (r.inflater) await inflateInEngine(blob, r.bodyOffset, r.inflater(2), () => tell(2), signal);
  else await inflate(blob, r.bodyOffset, (c) => { r.feed(c); tell(2); }, signal);
}

/**
 * Replays a trace file: both passes, progress after each piece, cancellable with signal.
 * Returns the report text in options.format (JSON by default).
 */
export async function replayBlob(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions = {}, onProgress?: (p: ReplayProgress) => void, signal?: AbortSignal): Promise<string> {
  const r = await openBlob(open, blob, options);
  try {
    await bothPasses(r, blob, onProgress, signal);
    return r.finish();
  } finally {
    r.close();
  }
}

/** One part of a replay in parts (a worker's share of the modes): both passes over the
 * file for the modes of `part`. The first part writes the report: it gets the others'
 * counts through `finish`; the others return their counts. */
export async function replayPart(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions, part: ReplayMode[], onProgress?: (p: ReplayProgress) => void,
  signal?: AbortSignal): Promise<{ counts: () => string; finish: (others: string[]) => string; close: () => void }> {
  const r = await openBlob(open, blob, { ...options, modes: options.modes ?? [...REPLAY_MODES], part });
  try {
    await bothPasses(r, blob, onProgress, signal);
  } catch (e) { r.close(); throw e; }
  return {
    counts: () => r.counts(),
    finish: (others) => { for (const t of others) r.merge(t); return r.finish(); },
    close: () => r.close(),
  };
}

/** A part replayed on the shared decoder: what replayPart returns. */
export interface Part { counts: () => string; finish: (others: string[]) => string; close: () => void }

/** One end of a channel between the shared decoder's parts (web/src/trace/ring.ts in the
 * page: a ring in shared memory; queues in one thread in tests). */
export interface Inbox {
  /** The next message, waiting for it. */
  next(): Uint8Array;
  /** The next message, or undefined when none has come yet. */
  poll(): Uint8Array | undefined;
  /** The message from next or poll is copied: its room may be reused. */
  release(): void;
}
/** Sends a message (copied before it returns, waiting for room; `whileFull` is called
 * between waits). `bytes` gives a view of it, or of its parts in order, asked for again
 * after each whileFull. */
export type Outbox = (bytes: () => Uint8Array | readonly Uint8Array[], whileFull?: () => void) => void;

/** A message's parts as one array (a copy). */
export function joinParts(m: Uint8Array | readonly Uint8Array[]): Uint8Array {
  if (m instanceof Uint8Array) return m.slice();
  const out = new Uint8Array(m.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of m) { out.set(p, at); at += p.length; }
  return out;
}

/** Pass 1's message from the lead to the part that scans: the inflated piece, the lead's
 * scan ahead of it if it made one, and the piece's length in 4 bytes (little-endian) at
 * the end; an empty message ends the body. */
function pieceMessage(piece: Uint8Array, ahead?: Uint8Array): Uint8Array[] {
  const tail = new Uint8Array(4);
  new DataView(tail.buffer).setUint32(0, piece.length, true);
  return ahead ? [piece, ahead, tail] : [piece, tail];
}

/** The part that scans: one message of pieceMessage's into r's scan. */
function scanMessage(r: TraceReplay, m: Uint8Array): void {
  if (m.length < 4) throw new Error('vmsim: a piece of pass 1 cut short');
  const n = new DataView(m.buffer, m.byteOffset + m.length - 4, 4).getUint32(0, true);
  if (n > m.length - 4) throw new Error('vmsim: a piece of pass 1 cut short');
  const piece = m.subarray(0, n), ahead = m.subarray(n, m.length - 4);
  if (!ahead.length) r.scan(piece);
  else if (r.scanJoined) r.scanJoined(piece, ahead);
  else throw new Error('vmsim: this build of the engine cannot join a scan ahead');
}

/** Where the lead part's passes go. Pass 1: the inflated pieces to the part that scans
 * them, and its pages back; pass 2: the decoded batches to every other part. */
export interface LeadLinks {
  pieces: Outbox; pages: Inbox; batches: Outbox;
  /** Asked before each piece goes out: whether the lead scans it ahead first (the page:
   * while the part that scans is behind; replay.md, "The lead scans ahead"). */
  scanAhead?: () => boolean;
  /** Asked before each batch of pass 2 goes out: whether it carries its runs grouped by
   * page (the page: while the parts that take them are behind; replay.md, "Segments on the
   * ring"). */
  groupBatch?: () => boolean;
}
/** Where another part's passes come from: the part that scans pass 1 has `pieces` (from
 * the lead) and `pagesOut` (its pages to the lead and the rest); the others have `pages`. */
export interface FollowerLinks { pieces?: Inbox; pagesOut?: Outbox; pages?: Inbox; batches: Inbox }

/** The lead part on the shared decoder (replay.md, "Modes in parallel"). Pass 1: inflates
 * the file (checking the gzip stream) and hands the pieces to the part that scans them,
 * taking the pages it hands out as they come, so that the two halves of pass 1 run side by
 * side; an empty piece says the body is over. Pass 2: inflates and decodes the file once,
 * hands every batch to the others and replays its own modes on each. */
export async function replayLead(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions, part: ReplayMode[], links: LeadLinks, onProgress?: (p: ReplayProgress) => void,
  signal?: AbortSignal): Promise<Part> {
  const r = await openBlob(open, blob, { ...options, modes: options.modes ?? [...REPLAY_MODES], part });
  try {
    if (!r.share || !r.shareEnd || !r.inflater || !r.inflaterOut || !r.take) throw new Error('vmsim: this build of the engine has no shared decoder');
    const total = Math.max(1, r.accesses);
    const tell = (pass: 1 | 2) => onProgress?.({ pass, done: r.done(), accesses: r.accesses, fraction: progressFraction(pass, r.done(), total) });
    let scanned = false;
    const take = (bytes: Uint8Array) => { if (r.take!(bytes, () => links.pages.release()).last) scanned = true; };
    const drain = () => { for (let b; !scanned && (b = links.pages.poll());) take(b); };
    const send = (piece: () => Uint8Array, scanAhead?: () => Uint8Array) => {
      const want = links.scanAhead?.() ?? false;     // asked for every piece: the page's choice keeps count
      const ahead = want && scanAhead ? scanAhead() : undefined;
      // the scan ahead's bytes copied out before anything else may grow the module's memory
      const kept = ahead?.slice();
      links.pieces(() => pieceMessage(piece(), kept), drain);
    };
    await inflateInEngine(blob, r.bodyOffset, r.inflaterOut(send), () => { drain(); tell(1); }, signal);
    links.pieces(() => new Uint8Array(0), drain);
    while (!scanned) { take(links.pages.next()); tell(1); }
    r.endScan();
    r.share((batch) => links.batches(() => batch), links.groupBatch);
    await inflateInEngine(blob, r.bodyOffset, r.inflater(2), () => tell(2), signal);
    r.shareEnd();
  } catch (e) { r.close(); throw e; }
  return { counts: () => r.counts(), finish: (others) => { for (const t of others) r.merge(t); return r.finish(); }, close: () => r.close() };
}

/** A part fed by the shared decoder: opens its own handle on the file's header. Pass 1: the
 * part that scans takes the lead's inflated pieces, scans them in order and hands its
 * pages out (to the lead and the rest); the others take those pages. Pass 2: every part
 * takes the lead's decoded batches. */
export async function replayFollower(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions, part: ReplayMode[], links: FollowerLinks,
  onProgress?: (p: ReplayProgress) => void): Promise<Part> {
  const r = await openBlob(open, blob, { ...options, modes: options.modes ?? [...REPLAY_MODES], part });
  try {
    if (!r.take || !r.share || !r.shareEnd) throw new Error('vmsim: this build of the engine has no shared decoder');
    const total = Math.max(1, r.accesses);
    const tell = (pass: 1 | 2) => onProgress?.({ pass, done: r.done(), accesses: r.accesses, fraction: progressFraction(pass, r.done(), total) });
    const takeAll = (pass: 1 | 2, from: Inbox) => {
      for (;;) {
        const got = r.take!(from.next(), () => from.release());
        tell(pass);
        if (got.last) return;
      }
    };
    if (links.pieces && links.pagesOut) {
      const out = links.pagesOut;
      r.share((batch) => out(() => batch));
      for (;;) {
        const piece = links.pieces.next();
        if (!piece.length) { links.pieces.release(); break; }
        scanMessage(r, piece);
        links.pieces.release();
        tell(1);
      }
      r.shareEnd();
    } else if (links.pages) {
      takeAll(1, links.pages);
    } else throw new Error('vmsim: a part with no way to pass 1');
    r.endScan();
    takeAll(2, links.batches);
  } catch (e) { r.close(); throw e; }
  return { counts: () => r.counts(), finish: (others) => { for (const t of others) r.merge(t); return r.finish(); }, close: () => r.close() };
}

/** A queue in this thread with the Inbox's calls (tests): a reader of everything sent to
 * `send`, each message copied. */
function queue(): { inbox: Inbox; send: Outbox } {
  const q: Uint8Array[] = [];
  return {
    send: (bytes) => { q.push(joinParts(bytes())); },
    inbox: {
      next() { if (!q.length) throw new Error('vmsim: a part waited for a message that was never sent'); return q[0]; },
      poll() { return q[0]; },
      release() { q.shift(); },
    },
  };
}

/** The shared decoder in this thread (tests: the same calls the page's workers make, in
 * an order the workers could take). Pass 1: each inflated piece is scanned by the second
 * part as soon as it is out, and its pages go to every other part's queue, the lead taking
 * them as it goes (the pieces `scanAhead` picks scanned ahead by the lead and joined);
 * pass 2: the lead's batches to every other part as soon as they are out (those
 * `groupBatch` picks with their segments). */
export async function replayShared(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions, groups: ReplayMode[][], scanAhead?: () => boolean, groupBatch?: () => boolean): Promise<string> {
  const modes = options.modes ?? [...REPLAY_MODES];
  const others: TraceReplay[] = [];
  let lead: Part | undefined;
  try {
    for (const g of groups.slice(1)) others.push(await openBlob(open, blob, { ...options, modes, part: g }));
    if (!others.length) throw new Error('replayShared: the shared decoder needs two parts or more');
    const [scanner, ...rest] = others;
    const leadPages = queue();
    const restPages = rest.map(() => queue());
    const scanning = rest.map(() => true);
    // the rest take each batch of pages as soon as it is queued (the lead: when it drains)
    const restTake = () => rest.forEach((r, i) => {
      for (let b; scanning[i] && (b = restPages[i].inbox.poll());) {
        if (r.take!(b, () => restPages[i].inbox.release()).last) { scanning[i] = false; r.endScan(); }
      }
    });
    scanner.share!((batch) => { for (const p of [leadPages, ...restPages]) p.send(() => batch); restTake(); });
    lead = await replayLead(open, blob, { ...options, modes }, groups[0], {
      pieces: (piece, drain) => {
        const bytes = joinParts(piece());
        if (!bytes.length) { scanner.shareEnd!(); scanner.endScan(); }
        else scanMessage(scanner, bytes);
        drain?.();
      },
      scanAhead,
      groupBatch,
      pages: leadPages.inbox,
      batches: (batch) => {
        const b = joinParts(batch());      // a take may grow the module's memory, which the view is of
        others.forEach((r) => { r.take!(b); });
      },
    });
    return lead.finish(others.map((r) => r.counts()));
  } finally {
    lead?.close();
    for (const r of others) r.close();
  }
}

/** How a replay's modes are shared among `workers` workers: each mode in one group, the
 * groups as even in number as the workers allow. The modes cost the same per access on a
 * program's trace (replay.md, "What an access costs": on a python run each mode alone
 * executes the same instructions within 0.1 %: TLB hits dominate, and they take the same
 * path in every mode), so an even count is an even load. */
export function modeGroups(modes: readonly ReplayMode[], workers: number): ReplayMode[][] {
  const n = Math.max(1, Math.min(modes.length, Math.floor(workers) || 1));
  const groups: ReplayMode[][] = Array.from({ length: n }, () => []);
  modes.forEach((m, i) => groups[i % n].push(m));
  return groups;
}

/** A replay in parts in this thread, one part after another (tests: the same figures as
 * replayBlob, through counts and merge, as the page's workers produce them). */
export async function replayInParts(open: (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay, blob: Blob,
  options: ReplayOptions, groups: ReplayMode[][]): Promise<string> {
  const modes = options.modes ?? [...REPLAY_MODES];
  const parts = [];
  try {
    for (const g of groups) parts.push(await replayPart(open, blob, { ...options, modes }, g));
    return parts[0].finish(parts.slice(1).map((p) => p.counts()));
  } finally {
    for (const p of parts) p.close();
  }
}
