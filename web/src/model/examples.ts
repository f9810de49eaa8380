/* The engine's bundled example scenarios, by name. Bundled at build time, so the app
 * works offline and reads nothing outside web/ and wasm-core/ at run time. */
import type { Scenario } from '../../../wasm-core/js/types';

const files = import.meta.glob('../../../wasm-core/examples/*.json', { eager: true, import: 'default' }) as Record<string, Scenario>;

export const EXAMPLES: Record<string, Scenario> = Object.fromEntries(
  Object.entries(files).map(([path, s]) => [path.replace(/^.*\/([^/]+)\.json$/, '$1'), s]),
);
export const EXAMPLE_NAMES = Object.keys(EXAMPLES).sort();

/** A scenario's description in the page's language: a bundled example's by its name, a
 * lesson scenario's under `lesson.<name>` unless it repeats an example's word for word.
 * Anything else (a scenario of the user's) is shown as written. */
export function scenarioDescription(s: Pick<Scenario, 'description'> | undefined, name: string, t: (key: string, o?: Record<string, unknown>) => string, lesson = false): string {
  const text = s?.description ?? '';
  if (!text) return '';
  const same = Object.entries(EXAMPLES).find(([, e]) => e.description === text)?.[0];
  if (same) return t(`examples:${same}`, { defaultValue: text });
  return lesson ? t(`examples:lesson.${name}`, { defaultValue: text }) : text;
}
