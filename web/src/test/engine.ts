/* The real engine for component tests: the same .wasm the page loads, read from disk
 * (Node's fetch cannot read file: URLs). */
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadVmsim, type Vmsim } from '../../../wasm-core/js/vmsim';

const wasmPath = join(__dirname, '..', '..', '..', 'wasm-core', 'build', 'wasm', 'vmsim.wasm');
let engine: Promise<Vmsim> | null = null;
export function testEngine(): Promise<Vmsim> {
  if (!existsSync(wasmPath)) throw new Error('build the engine first: make -C wasm-core wasm');
  return (engine ??= loadVmsim({ wasmBinary: readFileSync(wasmPath) }));
}

/** The engine and its result for every bundled example, by name. */
export async function exampleRuns(): Promise<{ engine: Vmsim; runs: Record<string, import('../../../wasm-core/js/types').Result> }> {
  const { EXAMPLES, EXAMPLE_NAMES } = await import('../model/examples');
  const e = await testEngine();
  return { engine: e, runs: Object.fromEntries(EXAMPLE_NAMES.map((n) => [n, e.run(EXAMPLES[n])])) };
}
