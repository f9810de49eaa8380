/* The benchmark scripts read their trace's header with the page's own reader
 * (web/scripts/trace-header.mjs over web/src/trace/format.mjs): a whole trace gives the
 * header the CLI reads, and a file that is not one stops bench:replay and bench:parts at
 * once, with status 2 and the reader's words, before any browser or server starts. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { traceHeader } from '../../web/scripts/trace-header.mjs';

const root = join(__dirname, '..', '..');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const example = join(root, 'hw-lab', 'build', 'traces', 'pointer-chase.vmtrace');
const work = mkdtempSync(join(tmpdir(), 'bench-scripts-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the benchmark scripts\' trace header', () => {
  it('is the header the CLI reads', () => {
    expect(existsSync(example), 'make build records the example traces').toBe(true);
    const h = traceHeader(example);
    const rep = JSON.parse(spawnSync(vmsim, ['replay', example, '--quiet', '--format', 'json', '--modes', 'native'], { encoding: 'utf8' }).stdout);
    expect(h.format).toBe('vmemlab-trace');
    expect(h.accesses).toBe(rep.trace.accesses);
    expect(h.pages).toBe(rep.trace.pages);
  });

  const whole = readFileSync(example);
  const bad: [string, Buffer, RegExp][] = [
    ['a JSON file', Buffer.from('{"label": "not a trace"}'), /a JSON file, not a vmemlab trace/],
    ['a cut trace', whole.subarray(0, whole.length - 100), /truncated/],
    ['another version', (() => { const b = Buffer.from(whole); b.writeUInt16LE(7, 8); return b; })(), /format version 7/],
  ];
  for (const script of ['bench-replay.mjs', 'bench-parts.mjs']) {
    it.each(bad)(`stops ${script} at once on %s`, (name, bytes, words) => {
      const f = join(work, `${name.replace(/ /g, '-')}.vmtrace`);
      writeFileSync(f, bytes);
      const p = spawnSync(process.execPath, [join(root, 'web', 'scripts', script), f], { encoding: 'utf8', timeout: 20_000 });
      expect(p.status, p.stderr).toBe(2);
      expect(p.stderr).toMatch(words);
      expect(p.stderr).toContain(f);
      expect(p.stdout).toBe('');
    });
  }
});
