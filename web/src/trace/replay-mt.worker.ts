/* The replay on threads, when the page is cross-origin isolated (runner.ts): this worker
 * loads the threaded build of `vmsim replay` (vmsim-mt.mjs, which the class server serves
 * as it was built, at engine/ beside the app's assets: vite would bundle it into this
 * worker, and its threads load it again by its own URL), reads the File into the module's
 * memory and replays it on the threads the page asks for (wasm-core/js/replay-mt.ts). Where
 * the module cannot be loaded (a server without it), it says 'unavailable' and the page
 * replays with its workers instead. It says 'loaded' once it has the module's script and
 * .wasm, and 'ready' once the module is: the page watches for those from its own thread
 * (runner.ts, MT_LOAD_MS, MT_READY_MS), not from a timer of this worker's own: Firefox ESR
 * now and then never gets this worker's module ready and blocks its event loop meanwhile
 * (its timers never fire). The page may start it before a file is picked ('warm': the
 * module loaded and its threads started, then nothing until a replay is asked for). */
import { replayThreaded, type MtModule } from '../../../wasm-core/js/replay-mt';
import type { ReplayOptions, ReplayReport } from '../../../wasm-core/js/replay';
import { failed, postHeader, PROGRESS_MS, type FromWorker } from './protocol';

/** progressMs: how often the progress is said (progressEvery); scan: pass 1's findings from
 * a replay of the same file before (the 'scan' this worker said then) */
export type ToThreads = { type: 'replay'; blob: Blob; options: ReplayOptions; jobs: number; progressMs?: number; scan?: Uint8Array } | { type: 'warm' };
/** 'scan': this replay's pass 1 findings, said before 'done', for the next replay of the file */
export type FromThreads = FromWorker | { type: 'unavailable'; message: string } | { type: 'loaded' } | { type: 'ready' } | { type: 'scan'; bytes: Uint8Array };

/** Where the module is, from this worker's own script (assets/ in the built app). */
const ENGINE = '../engine/vmsim-mt.mjs';
const WASM = 'vmsim-mt.wasm';
const post = (m: FromThreads) => (self as unknown as Worker).postMessage(m);

/** The module, loaded once (at 'warm' or at the replay, whichever comes first); undefined
 * where it could not be ('unavailable' said). */
let loading: Promise<MtModule | undefined> | undefined;
function load(): Promise<MtModule | undefined> {
  loading ??= (async () => {
    try {
      const url = new URL(ENGINE, import.meta.url);
      const create = (await import(/* @vite-ignore */ url.href) as { default: (o: object) => Promise<MtModule> }).default;
      // its .wasm fetched here, not by the module, so that the network's time is over before
      // the page starts to watch the module's start (runner.ts, MT_READY_MS)
      const got = await fetch(new URL(WASM, url));
      if (!got.ok) throw new Error(`HTTP ${got.status} for ${WASM}`);
      const wasmBinary = await got.arrayBuffer();
      post({ type: 'loaded' });
      // ready once its threads have loaded it too
      const mod = await create({ wasmBinary });
      post({ type: 'ready' });
      return mod;
    } catch (err) {
      post({ type: 'unavailable', message: (err as Error)?.message ?? String(err) });
      return undefined;
    }
  })();
  return loading;
}

self.onmessage = async (e: MessageEvent<ToThreads>) => {
  const m = e.data;
  const mod = await load();
  if (m.type !== 'replay' || !mod) return;
  const { blob, options, jobs, progressMs = PROGRESS_MS, scan } = m;
  try {
    await postHeader(blob, post);
    const text = await replayThreaded(mod, blob, { ...options, format: 'json' }, {
      jobs, progressMs, scan,
      keepScan: (bytes) => (self as unknown as Worker).postMessage({ type: 'scan', bytes } satisfies FromThreads, [bytes.buffer]),
      onProgress: (p) => post({ type: 'progress', progress: { ...p, workers: jobs, shared: true, threads: true } }),
    });
    post({ type: 'done', report: JSON.parse(text) as ReplayReport });
  } catch (err) {
    post(failed(err));
  }
};
