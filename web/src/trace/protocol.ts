/* What the page and the replay worker (replay.worker.ts) say to each other, and the replay
 * itself as a function, so that tests run it without a Worker (jsdom has none). */
import { replayBlob, replayFollower, replayLead, replayPart, TRACE_HEAD_BYTES, TraceError, type FollowerLinks, type LeadLinks, type Part, type ReplayMode, type ReplayOptions, type ReplayProgress, type ReplayReport, type TraceReplay } from '../../../wasm-core/js/replay';
import { readHeader, TraceFormatError, type TraceHeader } from './format.mjs';
import { ringCounts, ringReader, ringWriter, type Ring, type Rings } from './ring';

/** Pieces waiting for the worker that scans pass 1, not scanned ahead, from which the lead
 * scans the next one ahead before handing it over. */
const SCAN_AHEAD_WAITING = 3;
/** Batches of pass 2 waiting for the slowest other worker, from which the lead groups the
 * next one's runs by page before handing it over (as the CLI's decoding thread does; 3
 * rather than 2: 0.985x the page's time, replay.md, "Segments on the ring"). */
const GROUP_WAITING = 3;

export type { ReplayOptions, ReplayProgress, ReplayReport };

/** To a worker: replay the modes of `part` (all when absent); the lead part writes the
 * report once the others' counts are merged in ('merge'). With `rings` (the page is
 * cross-origin isolated) the lead reads the file alone: pass 1's pieces to the first other
 * worker (`reader` 0), which scans them and hands its pages to the lead and the rest, and
 * pass 2's decoded batches to every other worker; `reader` is the worker's number after
 * the lead, from 0. */
export type ToWorker =
  | { type: 'replay'; blob: Blob; options: ReplayOptions; part?: ReplayMode[]; lead?: boolean; rings?: Rings; reader?: number }
  | { type: 'merge'; counts: string[] };

/** Where a refusal came from: the file's header or body (the engine's message), its gzip
 * layer (the browser's), or something else (out of memory, a failed fetch). */
export type FailStage = 'header' | 'body' | 'gzip' | 'other';

export type FromWorker =
  | { type: 'header'; header: TraceHeader }
  | { type: 'progress'; progress: ReplayProgress }
  | { type: 'done'; report: ReplayReport }
  | { type: 'error'; stage: FailStage; message: string };

/** What a worker replaying a part says besides: its counts (a part that does not lead),
 * or that it is ready for the others' (the lead). */
export type FromPart = FromWorker | { type: 'counts'; text: string } | { type: 'ready' };

type Open = (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay;

export function failed(e: unknown): FromWorker {
  if (e instanceof TraceError) return { type: 'error', stage: e.stage, message: e.message };
  return { type: 'error', stage: 'other', message: e instanceof Error ? e.message : String(e) };
}

/** How often the page draws a replay's progress. Each drawing wakes the browser's own
 * threads (the page's, the compositors'), which take a processor from the replay's: on 2
 * processors the replay on threads took 0.97x the time with the bar drawn 4 times a second
 * rather than 10 (wasm-core/docs/replay.md, "The progress drawn less often"). */
export const PROGRESS_MS = 250;
/** ... and while the replay's threads take every processor the page has: each drawing then
 * takes one from them, where a processor to spare draws it for nothing (once a second
 * rather than 4 times: on 2 processors twice a second took 0.98x the time of 4, once a
 * second 0.985x that of twice, docs/replay.md, "The bar drawn twice a second on every
 * processor" and "Chunks to the thread free first"). */
export const PROGRESS_BUSY_MS = 1000;

/** How often a replay on `threads` of the page's `processors` says its progress. */
export function progressEvery(threads: number, processors: number): number {
  return threads >= processors ? PROGRESS_BUSY_MS : PROGRESS_MS;
}

/** Progress at most every PROGRESS_MS, and the last. */
export function throttled(post: (m: FromWorker) => void) {
  let last = 0;
  return (p: ReplayProgress) => {
    const now = Date.now();
    if (now - last >= PROGRESS_MS || p.fraction >= 1) { last = now; post({ type: 'progress', progress: p }); }
  };
}

/** Says the file's header (to show what is being replayed) from its first bytes; a file
 * that is not a trace says nothing here: the engine's own check gives the message. */
export async function postHeader(blob: Blob, post: (m: FromWorker) => void): Promise<void> {
  const head = new Uint8Array(await blob.slice(0, TRACE_HEAD_BYTES).arrayBuffer());
  try {
    post({ type: 'header', header: readHeader(head, blob.size).header });
  } catch (e) {
    if (!(e instanceof TraceFormatError)) throw e;
  }
}

/** The replay as the worker runs it: the header first (to show what is being replayed),
 * then both passes through the engine, progress as it goes. */
export async function runReplay(open: Open, blob: Blob, options: ReplayOptions, post: (m: FromWorker) => void,
  signal?: AbortSignal): Promise<void> {
  try {
    await postHeader(blob, post);
    const text = await replayBlob(open, blob, { ...options, format: 'json' }, throttled(post), signal);
    post({ type: 'done', report: JSON.parse(text) as ReplayReport });
  } catch (e) {
    post(failed(e));
  }
}

/** The lead's choice for each piece of pass 1 it is about to write to `pieces` (asked once a
 * piece, in order): scan it ahead while the worker that scans has SCAN_AHEAD_WAITING pieces
 * or more waiting that it must scan itself (those scanned ahead cost it little), so that
 * the two share the scan as the pass goes, whatever each costs on this machine (replay.md,
 * "The lead scans ahead"). */
export function scanAheadWhileBehind(pieces: Ring): () => boolean {
  const ahead: boolean[] = [];    // the choice for each piece written, by its index in the ring
  const at = (m: number) => m % (2 * pieces.slots);
  return () => {
    const { written, taken } = ringCounts(pieces, 0);
    let waiting = 0;
    for (let m = taken; m < written; m++) if (!ahead[at(m)]) waiting++;
    const yes = waiting >= SCAN_AHEAD_WAITING;
    ahead[at(written)] = yes;
    return yes;
  };
}

/** The lead's choice for each batch of pass 2 it is about to write to `batches`: group its
 * runs by page (the segments the other workers would build) while the slowest of them has
 * GROUP_WAITING batches or more waiting, that is while their modes, not the lead, hold the
 * replay (replay.md, "Segments on the ring"). */
export function groupWhileBehind(batches: Ring): () => boolean {
  return () => {
    let slowest = Infinity, written = 0;
    for (let i = 0; i < batches.readers; i++) {
      const c = ringCounts(batches, i);
      written = c.written;
      slowest = Math.min(slowest, c.taken);
    }
    return written - slowest >= GROUP_WAITING;
  };
}

/** The lead's ends of the rings (ring.ts, newRings). */
function leadLinks(rings: Rings): LeadLinks {
  return {
    pieces: ringWriter(rings.pieces), pages: ringReader(rings.pages, 0), batches: ringWriter(rings.batches),
    scanAhead: scanAheadWhileBehind(rings.pieces), groupBatch: groupWhileBehind(rings.batches),
  };
}

/** Worker `reader` + 1's ends: the first scans pass 1, the others take its pages. */
function followerLinks(rings: Rings, reader: number): FollowerLinks {
  const batches = ringReader(rings.batches, reader);
  return reader === 0 ? { pieces: ringReader(rings.pieces, 0), pagesOut: ringWriter(rings.pages), batches }
    : { pages: ringReader(rings.pages, reader), batches };
}

/** One part of a replay in parts, as a worker runs it (workerRunner): both passes for the
 * modes of `part`; then the counts (a part that does not lead), or, for the lead, 'ready',
 * the others' counts from `others`, and the report. The lead also says the header. */
export async function runPart(open: Open, blob: Blob, options: ReplayOptions, part: ReplayMode[], lead: boolean,
  post: (m: FromPart) => void, others: () => Promise<string[]>, shared?: { rings: Rings; reader: number }): Promise<void> {
  try {
    if (lead) await postHeader(blob, post);
    const o: ReplayOptions = { ...options, format: 'json' };
    const r: Part = !shared ? await replayPart(open, blob, o, part, throttled(post))
      : lead ? await replayLead(open, blob, o, part, leadLinks(shared.rings), throttled(post))
        : await replayFollower(open, blob, o, part, followerLinks(shared.rings, shared.reader), throttled(post));
    try {
      if (!lead) {
        post({ type: 'counts', text: r.counts() });
        return;
      }
      post({ type: 'ready' });
      post({ type: 'done', report: JSON.parse(r.finish(await others())) as ReplayReport });
    } finally {
      r.close();
    }
  } catch (e) {
    post(failed(e));
  }
}
