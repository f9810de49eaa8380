/* The replay runs here, off the page's thread: the engine (WebAssembly) reads the trace
 * file twice as a stream, inflating it itself (src/gunzip.c), and posts its progress; the page cancels by
 * terminating the worker. */
import { loadVmsim } from '../../../wasm-core/js/vmsim';
import { runReplay, type FromWorker, type ToWorker } from './protocol';

const post = (m: FromWorker) => (self as unknown as Worker).postMessage(m);

self.onmessage = async (e: MessageEvent<ToWorker>) => {
  if (e.data.type !== 'replay') return;
  let engine;
  try {
    engine = await loadVmsim();
  } catch (err) {
    post({ type: 'error', stage: 'other', message: (err as Error).message });
    return;
  }
  await runReplay(engine.openReplay, e.data.blob, e.data.options, post);
};
