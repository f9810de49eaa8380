/* Trace files for tests, written by hw-lab's own Python writer (hwlab.tracefile), so that
 * the page, the server and the CLI are tested against the recorder's format rather than a
 * second writer. Node only (used by trace.test.tsx and tests/server/traces.test.ts). */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

// __dirname: vitest gives it in every environment (import.meta.url is not a file: URL under jsdom)
const root = join(__dirname, '..', '..', '..');

/** Writes dir/name holding these (kind, address) accesses, with optional header fields; returns the path. */
export function writeTrace(dir: string, name: string, accesses: [number, number][], fields: Record<string, unknown> = {}): string {
  const path = join(dir, name);
  execFileSync('python3', ['-c', `import sys, json; sys.path.insert(0, ${JSON.stringify(join(root, 'hw-lab', 'lib'))})
from hwlab.tracefile import write_trace
d = json.load(sys.stdin)
write_trace(sys.argv[1], d["accesses"], **d["fields"])`, path], { input: JSON.stringify({ accesses, fields }) });
  return path;
}
