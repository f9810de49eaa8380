/* Trace replay in the WebAssembly module against the native CLI: the same report, byte for
 * byte, in every format and with every setting, for the example traces (recorded from
 * programs of ours by make build) and traces written by hw-lab's Python writer; the same
 * refusal for the same damaged trace. The module is driven as the page drives it
 * (replayBlob: the file read as a Blob and streamed into the engine's own gzip reader, in
 * pieces; src/gunzip.c against the CLI's zlib). At scale: a million distinct pages, and a
 * body of 64 MiB that the module goes through twice without holding it. */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, openAsBlob, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Ajv2020 from 'ajv/dist/2020.js';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { openReplay, PASS1_SHARE, progressFraction, replayBlob, TRACE_HEAD_BYTES, TraceError, type ReplayModule, type ReplayOptions } from '../../wasm-core/js/replay';

const root = join(__dirname, '..', '..');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const examples = join(root, 'hw-lab', 'build', 'traces');
let engine: Vmsim;
let work: string;
const ajv = new Ajv2020({ allErrors: true, strict: false });
const validReport = ajv.compile(JSON.parse(readFileSync(join(root, 'wasm-core', 'schema', 'replay.schema.json'), 'utf8')));

function writeTrace(name: string, accesses: [number, number][]): string {
  const path = join(work, name);
  execFileSync('python3', ['-c', `import sys, json; sys.path.insert(0, ${JSON.stringify(join(root, 'hw-lab', 'lib'))})
from hwlab.tracefile import write_trace
write_trace(sys.argv[1], json.load(sys.stdin), program='gen', args=['x y', 'z'])`, path], { input: JSON.stringify(accesses) });
  return path;
}

const flags = (o: ReplayOptions) => [
  ...(o.format ? ['--format', o.format] : []), ...(o.preset ? ['--preset', o.preset] : []), ...(o.start ? ['--start', o.start] : []),
  ...(o.guest_pages ? ['--guest-pages', o.guest_pages] : []), ...(o.host_pages ? ['--host-pages', o.host_pages] : []),
  ...(o.modes ? ['--modes', o.modes.join(',')] : []),
];
function native(path: string, o: ReplayOptions) {
  const p = spawnSync(vmsim, ['replay', path, '--quiet', ...flags(o)], { encoding: 'utf8' });
  return { status: p.status, stdout: p.stdout, stderr: p.stderr };
}
async function wasm(path: string, o: ReplayOptions) {
  try {
    return { ok: true, text: await replayBlob(engine.openReplay, await openAsBlob(path), o) };
  } catch (e) {
    if (!(e instanceof TraceError)) throw e;
    return { ok: false, text: e.message, stage: e.stage };
  }
}

const traces: string[] = [];
beforeAll(async () => {
  engine = await loadVmsim({ wasmBinary: readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) });
  work = mkdtempSync(join(tmpdir(), 'vmemlab-wasm-replay-'));
  for (const e of ['pointer-chase', 'sequential-scan']) if (existsSync(join(examples, `${e}.vmtrace`))) traces.push(join(examples, `${e}.vmtrace`));
  let s = 12345;
  const rnd = () => { s = (s * 16807) % 2147483647; return s / 2147483647; };
  traces.push(writeTrace('random.vmtrace', Array.from({ length: 20000 }, (): [number, number] => [Math.floor(rnd() * 4), 0x7f0000000000 + Math.floor(rnd() * 3000) * 4096 + Math.floor(rnd() * 4096)])));
  traces.push(writeTrace('dense.vmtrace', Array.from({ length: 20000 }, (_, i): [number, number] => [i % 3, 0x555555554000 + (i * 64) % (6 << 21)])));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('trace replay: WebAssembly vs native CLI', () => {
  const settings: ReplayOptions[] = [
    { format: 'json' }, { format: 'table' }, { format: 'csv' },
    { format: 'json', start: 'warm', guest_pages: '2m' },
    { format: 'json', preset: 'sunway-1621', host_pages: '4k' },
    { format: 'table', modes: ['ept', 'shadow'], start: 'warm' },
  ];
  it('prints the same bytes for every trace and setting', async () => {
    expect(traces.length).toBeGreaterThanOrEqual(2);
    for (const t of traces) for (const o of settings) {
      const n = native(t, o);
      expect(n.status, `${t} ${JSON.stringify(o)}: ${n.stderr}`).toBe(0);
      const w = await wasm(t, o);
      expect(w.ok).toBe(true);
      expect(w.text, `${t} ${JSON.stringify(o)}`).toBe(n.stdout);
      if (o.format === 'json') expect(validReport(JSON.parse(w.text)), ajv.errorsText(validReport.errors)).toBe(true);
    }
  }, 300_000);

  it('refuses the same damaged traces with the same words', async () => {
    const good = readFileSync(traces.at(-1)!);
    const hlen = good.readUInt32LE(12);
    const damaged: [string, Buffer][] = [
      ['truncated', good.subarray(0, good.length - 7)],
      ['version', (() => { const b = Buffer.from(good); b.writeUInt16LE(9, 8); return b; })()],
      ['header', (() => { const b = Buffer.from(good); b[16 + 3] = 0x7b; return b; })()],
      ['not a trace', Buffer.from('hello, this is not a trace at all')],
    ];
    for (const [what, bytes] of damaged) {
      const f = join(work, `${what}.vmtrace`);
      writeFileSync(f, bytes);
      const n = native(f, {});
      expect(n.status, what).toBe(2);
      const w = await wasm(f, {});
      expect(w.ok, what).toBe(false);
      expect(`vmsim replay: ${f}: ${w.text}\n`, what).toBe(n.stderr);
    }
    // damage inside the compressed body: gzip's own check, in the browser's words and in zlib's
    const b = Buffer.from(good);
    b[16 + hlen + 40] ^= 0xff;
    const f = join(work, 'crc.vmtrace');
    writeFileSync(f, b);
    expect(native(f, {}).status).toBe(2);
    const w = await wasm(f, {});
    expect(w.ok).toBe(false);
  }, 120_000);
});

describe('trace replay at scale, in the WebAssembly module', () => {
  it('replays a million distinct pages (4 GiB touched) with the native figures', async () => {
    const path = join(work, 'million.vmtrace');
    execFileSync('python3', [join(root, 'tests', 'engine', 'many_pages.py'), path, String(1 << 20)]);
    const n = native(path, { format: 'json' });
    expect(n.status, n.stderr).toBe(0);
    const w = await wasm(path, { format: 'json' });
    expect(w.ok, w.text).toBe(true);
    expect(w.text).toBe(n.stdout);
    expect(JSON.parse(w.text).trace.pages).toBe(1 << 20);
  }, 300_000);

  it('streams the file: reads only its head whole, inflates the body in pieces in the engine, and holds less than the body', async () => {
    // 64 M loads of one address: the body inflates to 64 MiB from about 64 KB of gzip
    const path = join(work, 'long-body.vmtrace');
    const n = 64 << 20;
    execFileSync('python3', ['-c', `import sys, zlib; sys.path.insert(0, ${JSON.stringify(join(root, 'hw-lab', 'lib'))})
from hwlab.tracefile import encode_body, make_header, pack
n = int(sys.argv[2])
first = encode_body([(0, 0x10000000)])[:-2]     # the record without the end record
z = zlib.compressobj(6, zlib.DEFLATED, 31)
gz = z.compress(first)
for _ in range(n // (1 << 20)):
    gz += z.compress(bytes(1 << 20) if _ else bytes((1 << 20) - 1))
end = bytearray([0xF8]); v = n
while v >= 0x80: end.append(v & 0x7F | 0x80); v >>= 7
end.append(v)
gz += z.compress(bytes(end)) + z.flush()
h = make_header([(0, 0x10000000)], len(gz), program='one-address')
h.update(accesses=n, counts={'load': n, 'store': 0, 'fetch': 0, 'modify': 0})
open(sys.argv[1], 'wb').write(pack(h, gz))`, path, String(n)]);
    // the module as the page's worker has it, to read its memory's size afterwards
    const { default: create } = await import('../../wasm-core/build/wasm/vmsim.mjs') as unknown as { default: (o: object) => Promise<ReplayModule> };
    const mod = await create({ wasmBinary: readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) });
    const file = await openAsBlob(path);
    const whole: number[] = [];
    let streams = 0;
    const spy = (b: Blob, start: number): Blob => ({
      size: b.size, type: '',
      slice: (s?: number, e?: number) => spy(b.slice(s, e), start + (s ?? 0)),
      arrayBuffer: () => { whole.push(b.size); return b.arrayBuffer(); },
      stream: () => { streams++; return b.stream(); },
    }) as unknown as Blob;
    const fractions: number[] = [], passes: number[] = [];
    const text = await replayBlob((h, size, o) => openReplay(mod, h, size, o), spy(file, 0), { format: 'table' },
      (p) => { fractions.push(p.fraction); passes.push(p.pass); });
    expect(text).toBe(native(path, { format: 'table' }).stdout);
    expect(text).toContain(`${n} accesses`);
    // one read of the head, two streams of the body (one per pass)
    expect(whole).toEqual([Math.min(TRACE_HEAD_BYTES, file.size)]);
    expect(streams).toBe(2);
    // progress in many steps, from early in pass 1 to the end
    expect(fractions.length).toBeGreaterThanOrEqual(10);
    expect(fractions[0]).toBeLessThan(0.1);
    expect(fractions.at(-1)).toBe(1);
    // never back; pass 1 up to its share of the bar (a fifth: about its share of the time), pass 2 the rest
    expect(fractions.every((f, i) => i === 0 || f >= fractions[i - 1])).toBe(true);
    expect(fractions.every((f, i) => (passes[i] === 1 ? f <= PASS1_SHARE : f >= PASS1_SHARE))).toBe(true);
    expect(passes.filter((p) => p === 1).length).toBeGreaterThanOrEqual(3);
    // the engine's memory stays below the body it went through twice (64 MiB): what it holds
    // is the machine and the preset's data caches (about 22 MiB over the modes, whatever the
    // trace), never the accesses
    expect(mod.HEAPU8.length).toBeLessThan(48 << 20);
  }, 300_000);
});

describe('the replay\'s progress bar', () => {
  it('gives pass 1 a fifth and pass 2 the rest, from 0 to 1, whatever the counts', () => {
    expect(PASS1_SHARE).toBe(0.2);
    const n = 1_000_000;
    expect(progressFraction(1, 0, n)).toBe(0);
    expect(progressFraction(1, n / 2, n)).toBeCloseTo(0.1, 12);
    expect(progressFraction(1, n, n)).toBeCloseTo(0.2, 12);
    expect(progressFraction(2, 0, n)).toBeCloseTo(0.2, 12);
    expect(progressFraction(2, n / 2, n)).toBeCloseTo(0.6, 12);
    expect(progressFraction(2, n, n)).toBe(1);
    // a trace of no accesses, and a count past the header's (the engine refuses it; the bar stays within 0..1)
    expect(progressFraction(2, 0, 0)).toBeCloseTo(0.2, 12);
    expect(progressFraction(2, 2 * n, n)).toBe(1);
    expect(progressFraction(1, 2 * n, n)).toBeCloseTo(0.2, 12);
  });
});
