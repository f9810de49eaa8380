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
