/* The native CLI's arguments for a one-thread replay (--jobs 1) with the page's options:
 * what the WebAssembly replays are held to (replay-parts.test.ts, replay-mt.test.ts). */
import type { ReplayOptions } from '../../wasm-core/js/replay';

export function serialArgs(path: string, o: ReplayOptions): string[] {
  const args = ['replay', path, '--quiet', '--jobs', '1', '--format', o.format ?? 'json'];
  if (o.modes) args.push('--modes', o.modes.join(','));
  if (o.start) args.push('--start', o.start);
  if (o.guest_pages) args.push('--guest-pages', o.guest_pages);
  if (o.tables) args.push('--tables', o.tables);
  if (o.host_pages) args.push('--host-pages', o.host_pages);
  if (o.agile_switch_level !== undefined) args.push('--agile-switch-level', String(o.agile_switch_level));
  if (o.preset) args.push('--preset', o.preset);
  return args;
}
