/* The replay runs here, off the page's thread: the engine (WebAssembly) reads the trace
 * file twice as a stream, inflating it itself (src/gunzip.c), and posts its progress; the page cancels by
 * terminating the worker. One worker per group of modes (runner.ts): each replays its
 * modes; the lead merges the others' counts and writes the report. When the page is
 * cross-origin isolated the lead alone reads the file: pass 1's pieces go to the next
 * worker, which scans them and hands out the pages, and pass 2's decoded batches to every
 * other worker, through rings in shared memory (ring.ts). */
import { loadVmsim } from '../../../wasm-core/js/vmsim';
import { runPart, type FromPart, type ToWorker } from './protocol';

const post = (m: FromPart) => (self as unknown as Worker).postMessage(m);
let gotOthers: (counts: string[]) => void = () => {};
const others = new Promise<string[]>((resolve) => { gotOthers = resolve; });

self.onmessage = async (e: MessageEvent<ToWorker>) => {
  if (e.data.type === 'merge') { gotOthers(e.data.counts); return; }
  let engine;
  try {
    engine = await loadVmsim();
  } catch (err) {
    post({ type: 'error', stage: 'other', message: (err as Error).message });
    return;
  }
  const { blob, options, part, lead, rings, reader } = e.data;
  await runPart(engine.openReplay, blob, options, part ?? options.modes ?? ['native', 'ept', 'npt', 'shadow', 'flat'], lead ?? true,
    post, () => others, rings ? { rings, reader: reader ?? 0 } : undefined);
};
