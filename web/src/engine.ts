/* One engine per page, loaded on first use. In the browser the module fetches the .wasm
 * asset that Vite hashes next to it; tests inject their own engine. */
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';

let pending: Promise<Vmsim> | null = null;
export function getEngine(): Promise<Vmsim> {
  return (pending ??= loadVmsim());
}
