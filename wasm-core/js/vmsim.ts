/* A typed wrapper around the WebAssembly engine: a scenario object in, a result object
 * out, the same bytes as `vmsim run`. In a browser the .wasm is fetched next to the
 * module; under Node pass its bytes as `wasmBinary`. */
import createVmsimModule from '../build/wasm/vmsim.mjs';
import type { Result, Scenario } from './types';
import { openReplay, type ReplayModule, type ReplayOptions, type TraceReplay } from './replay';

export type * from './types';

/** A scenario the engine rejected: `message` names the field and the reason. */
export class ScenarioError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScenarioError';
  }
}

interface EmModule extends ReplayModule {
  _vmsim_run(ptr: number, len: number, outPtr: number): number;
  _vmsim_counts(ptr: number, len: number, outPtr: number): number;
  _vmsim_explain(ptr: number, len: number, outPtr: number): number;
  _vmsim_free(ptr: number): void;
  _vmsim_version(): number;
  _malloc(n: number): number;
  _free(ptr: number): void;
  HEAPU8: Uint8Array;
  UTF8ToString(ptr: number): string;
  getValue(ptr: number, type: string): number;
}

export interface LoadOptions {
  /** The bytes of vmsim.wasm (required under Node, whose fetch cannot read files). */
  wasmBinary?: ArrayBuffer | Uint8Array;
  /** Where to fetch vmsim.wasm from, in a browser. */
  locateFile?: (path: string, prefix: string) => string;
}

/** What runCounts returns: per access (in order) and in all. */
export interface Counts { memory_refs: number[]; exits: number[]; totals: { accesses: number; memory_refs: number; exits: number } }

export interface Vmsim {
  readonly version: string;
  /** Runs a scenario (object or JSON text) and returns the result object. */
  run(scenario: Scenario | string): Result;
  /** The exact JSON text the native CLI prints for the same scenario. */
  runText(scenarioJson: string): string;
  /** Each access's memory references and exits and their totals, as run() counts them,
   * without the walks (vmsim_counts: a few KB where run() makes some MB). */
  runCounts(scenario: Scenario | string): Counts;
  /** The readable walk table of `vmsim explain`. */
  explain(scenario: Scenario | string): string;
  /** Opens a recorded trace for replay (see replay.ts: replayBlob streams a file through it). */
  openReplay(head: Uint8Array, fileSize: number, options?: ReplayOptions): TraceReplay;
}

const encoder = new TextEncoder();

export async function loadVmsim(options: LoadOptions = {}): Promise<Vmsim> {
  const mod = (await (createVmsimModule as (o: object) => Promise<EmModule>)({ ...options })) as EmModule;

  function call(fn: 'run' | 'explain' | 'counts', text: string): string {
    const bytes = encoder.encode(text);
    const inPtr = mod._malloc(bytes.length + 1);
    const outPtr = mod._malloc(4);
    if (!inPtr || !outPtr) throw new Error('vmsim: out of WebAssembly memory');
    try {
      mod.HEAPU8.set(bytes, inPtr);
      const status = fn === 'run' ? mod._vmsim_run(inPtr, bytes.length, outPtr)
        : fn === 'counts' ? mod._vmsim_counts(inPtr, bytes.length, outPtr) : mod._vmsim_explain(inPtr, bytes.length, outPtr);
      const resPtr = mod.getValue(outPtr, 'i32');
      const out = resPtr ? mod.UTF8ToString(resPtr) : '';
      mod._vmsim_free(resPtr);
      if (status === 2) throw new ScenarioError(out);
      if (status !== 0) throw new Error(`vmsim: ${out || 'engine error ' + status}`);
      return out;
    } finally {
      mod._free(inPtr);
      mod._free(outPtr);
    }
  }

  const toText = (s: Scenario | string) => (typeof s === 'string' ? s : JSON.stringify(s));
  return {
    version: mod.UTF8ToString(mod._vmsim_version()),
    runText: (json) => call('run', json),
    run: (s) => JSON.parse(call('run', toText(s))) as Result,
    runCounts: (s) => JSON.parse(call('counts', toText(s))) as Counts,
    explain: (s) => call('explain', toText(s)),
    openReplay: (head, fileSize, options) => openReplay(mod, head, fileSize, options),
  };
}
