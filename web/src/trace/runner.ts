/* Starting a replay: in a Web Worker in the page (replay.worker.ts); tests hand the panel
 * a runner of their own that calls runReplay in the same thread. */
import type { FromWorker, ReplayOptions } from './protocol';

export interface Running {
  /** Stops the replay at once (the worker is terminated). */
  cancel(): void;
}

export type Runner = (blob: Blob, options: ReplayOptions, onMessage: (m: FromWorker) => void) => Running;

export const workerRunner: Runner = (blob, options, onMessage) => {
  const worker = new Worker(new URL('./replay.worker.ts', import.meta.url), { type: 'module', name: 'vmemlab-replay' });
  let over = false;
  const stop = () => { if (!over) { over = true; worker.terminate(); } };
  worker.onmessage = (e: MessageEvent<FromWorker>) => {
    if (over) return;
    onMessage(e.data);
    if (e.data.type === 'done' || e.data.type === 'error') stop();
  };
  worker.onerror = (e) => {
    if (over) return;
    onMessage({ type: 'error', stage: 'other', message: e.message || 'the replay worker failed to start' });
    stop();
  };
  worker.postMessage({ type: 'replay', blob, options });
  return { cancel: stop };
};
