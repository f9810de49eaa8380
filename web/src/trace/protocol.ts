/* What the page and the replay worker (replay.worker.ts) say to each other, and the replay
 * itself as a function, so that tests run it without a Worker (jsdom has none). */
import { replayBlob, TraceError, type ReplayOptions, type ReplayProgress, type ReplayReport, type TraceReplay } from '../../../wasm-core/js/replay';
import { readHeader, TraceFormatError, type TraceHeader } from './format.mjs';

export type { ReplayOptions, ReplayProgress, ReplayReport };

export type ToWorker = { type: 'replay'; blob: Blob; options: ReplayOptions };

/** Where a refusal came from: the file's header or body (the engine's message), its gzip
 * layer (the browser's), or something else (out of memory, a failed fetch). */
export type FailStage = 'header' | 'body' | 'gzip' | 'other';

export type FromWorker =
  | { type: 'header'; header: TraceHeader }
  | { type: 'progress'; progress: ReplayProgress }
  | { type: 'done'; report: ReplayReport }
  | { type: 'error'; stage: FailStage; message: string };

type Open = (head: Uint8Array, size: number, o: ReplayOptions) => TraceReplay;

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
    let last = 0;
    const text = await replayBlob(open, blob, { ...options, format: 'json' }, (p) => {
      const now = Date.now();
      if (now - last > 100 || p.fraction >= 1) { last = now; post({ type: 'progress', progress: p }); }
    }, signal);
    post({ type: 'done', report: JSON.parse(text) as ReplayReport });
  } catch (e) {
    if (e instanceof TraceError) post({ type: 'error', stage: e.stage, message: e.message });
    else post({ type: 'error', stage: 'other', message: e instanceof Error ? e.message : String(e) });
  }
}
