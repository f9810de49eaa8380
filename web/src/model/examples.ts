/* The engine's bundled example scenarios, by name. Bundled at build time, so the app
 * works offline and reads nothing outside web/ and wasm-core/ at run time. */
import type { Scenario } from '../../../wasm-core/js/types';

const files = import.meta.glob('../../../wasm-core/examples/*.json', { eager: true, import: 'default' }) as Record<string, Scenario>;

export const EXAMPLES: Record<string, Scenario> = Object.fromEntries(
  Object.entries(files).map(([path, s]) => [path.replace(/^.*\/([^/]+)\.json$/, '$1'), s]),
);
export const EXAMPLE_NAMES = Object.keys(EXAMPLES).sort();
