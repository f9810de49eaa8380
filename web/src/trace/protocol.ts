/* What the page and the replay worker (replay.worker.ts) say to each other, and the replay
 * itself as a function, so that tests run it without a Worker (jsdom has none). */
import { replayBlob, replayFollower, replayLead, replayPart, TraceError, type Part, type ReplayMode, type ReplayOptions, type ReplayProgress, type ReplayReport, type TraceReplay } from '../../../wasm-core/js/replay';
import { readHeader, TraceFormatError, type TraceHeader } from './format.mjs';
import { ringReader, ringWriter, type Ring } from './ring';

export type { ReplayOptions, ReplayProgress, ReplayReport };

/** To a worker: replay the modes of `part` (all when absent); the lead part writes the
 * report once the others' counts are merged in ('merge'). With `ring` (the page is
 * cross-origin isolated) the lead inflates and decodes the file once and hands its batches
 * through the ring; each other worker is its reader number `reader`. */
export type ToWorker =
  | { type: 'replay'; blob: Blob; options: ReplayOptions; part?: ReplayMode[]; lead?: boolean; ring?: Ring; reader?: number }
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

function failed(e: unknown): FromWorker {
  if (e instanceof TraceError) return { type: 'error', stage: e.stage, message: e.message };
  return { type: 'error', stage: 'other', message: e instanceof Error ? e.message : String(e) };
}

/** Progress at most every 100 ms, and the last. */
function throttled(post: (m: FromWorker) => void) {
  let last = 0;
  return (p: ReplayProgress) => {
    const now = Date.now();
    if (now - last > 100 || p.fraction >= 1) { last = now; post({ type: 'progress', progress: p }); }
  };
}

/** The replay as the worker runs it: the header first (to show what is being replayed),
 * then both passes through the engine, progress as it goes. */
export async function runReplay(open: Open, blob: Blob, options: ReplayOptions, post: (m: FromWorker) => void,
  signal?: AbortSignal): Promise<void> {
  try {
    const head = new Uint8Array(await blob.slice(0, 16 + 65536).arrayBuffer());
    try {
      post({ type: 'header', header: readHeader(head, blob.size).header });
    } catch (e) {
      // the engine's own check below gives the message; this one only names the file earlier
      if (!(e instanceof TraceFormatError)) throw e;
    }
    const text = await replayBlob(open, blob, { ...options, format: 'json' }, throttled(post), signal);
    post({ type: 'done', report: JSON.parse(text) as ReplayReport });
  } catch (e) {
    post(failed(e));
  }
}

/** One part of a replay in parts, as a worker runs it (workerRunner): both passes for the
 * modes of `part`; then the counts (a part that does not lead), or, for the lead, 'ready',
 * the others' counts from `others`, and the report. The lead also says the header. */
export async function runPart(open: Open, blob: Blob, options: ReplayOptions, part: ReplayMode[], lead: boolean,
  post: (m: FromPart) => void, others: () => Promise<string[]>, shared?: { ring: Ring; reader: number }): Promise<void> {
  try {
    if (lead) {
      const head = new Uint8Array(await blob.slice(0, 16 + 65536).arrayBuffer());
      try {
        post({ type: 'header', header: readHeader(head, blob.size).header });
      } catch (e) {
        if (!(e instanceof TraceFormatError)) throw e;
      }
    }
    const o: ReplayOptions = { ...options, format: 'json' };
    const r: Part = !shared ? await replayPart(open, blob, o, part, throttled(post))
      : lead ? await replayLead(open, blob, o, part, ringWriter(shared.ring), throttled(post))
        : await replayFollower(open, blob, o, part, ringReader(shared.ring, shared.reader), throttled(post));
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
