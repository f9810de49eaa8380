/* The page's replay on threads (vmsim-mt: cli/replay.c's passes built with -pthread, one
 * WebAssembly memory shared by the threads; wasm-core/js/replay-mt.ts drives it as the
 * page's worker does) against the native CLI's --jobs 1 and the one-worker replay
 * (replayBlob, src/gunzip.c through the page's own calls): the same report, byte for byte,
 * on 1, 2 and 3 threads and in rounds of 1 and 3 batches, for the example traces, a trace
 * that evicts TLB entries all the time, a trace of one-byte records that makes many chunks,
 * and every setting; the same refusal, in the same words and stage, for the same damaged
 * trace, whichever thread found it. */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, openAsBlob, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { replayBlob, TraceError, type ReplayOptions, type ReplayProgress } from '../../wasm-core/js/replay';
import { refusalWords, replayThreaded, type MtModule } from '../../wasm-core/js/replay-mt';
import { serialArgs } from './cli-args';

const root = join(__dirname, '..', '..');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const examples = join(root, 'hw-lab', 'build', 'traces');
const mtDir = join(root, 'wasm-core', 'build', 'wasm-mt', 'node');
let engine: Vmsim;
let mt: MtModule;
let work: string;
const traces: string[] = [];

function python(code: string, path: string) {
  execFileSync('python3', ['-c', `import sys, random; sys.path.insert(0, ${JSON.stringify(join(root, 'hw-lab', 'lib'))})
from hwlab.tracefile import write_trace
${code}`, path]);
}

beforeAll(async () => {
  engine = await loadVmsim({ wasmBinary: readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) });
  const create = createRequire(import.meta.url)(join(mtDir, 'vmsim-mt.cjs')) as (o: object) => Promise<MtModule>;
  mt = await create({ wasmBinary: readFileSync(join(mtDir, 'vmsim-mt.wasm')) });
  work = mkdtempSync(join(tmpdir(), 'vmemlab-replay-mt-'));
  for (const e of ['pointer-chase', 'sequential-scan']) if (existsSync(join(examples, `${e}.vmtrace`))) traces.push(join(examples, `${e}.vmtrace`));
  // 60,000 accesses over 3,000 pages in a random walk: TLB entries evicted and walked again
  const evicting = join(work, 'evicting.vmtrace');
  python(`r = random.Random(3); acc = []; page = 0
for i in range(60000):
    if i % 7 == 0: page = r.randrange(3000)
    acc.append((i % 4, 0x7f0000000000 + page * 4096 + r.randrange(4096)))
write_trace(sys.argv[1], acc)`, evicting);
  traces.push(evicting);
  // 400,000 loads a line apart on 2 pages: one-byte records, so the body's 64 KiB chunks
  // hold about 2 batches each and the threads take many chunks in turn
  const dense = join(work, 'dense.vmtrace');
  python('write_trace(sys.argv[1], [(0, 0x7f0000000000 + (i % 128) * 64) for i in range(400000)])', dense);
  traces.push(dense);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function cli(path: string, o: ReplayOptions) {
  return spawnSync(vmsim, serialArgs(path, o), { encoding: 'utf8' });
}

async function threaded(path: string, o: ReplayOptions, jobs: number, chunkBatches = 0, onProgress?: (p: ReplayProgress) => void) {
  try {
    return { ok: true, text: await replayThreaded(mt, await openAsBlob(path), o, { jobs, chunkBatches, onProgress }) };
  } catch (e) {
    if (!(e instanceof TraceError)) throw e;
    return { ok: false, text: e.message, stage: e.stage };
  }
}

async function oneWorker(path: string, o: ReplayOptions) {
  try {
    return { ok: true, text: await replayBlob(engine.openReplay, await openAsBlob(path), o) };
  } catch (e) {
    if (!(e instanceof TraceError)) throw e;
    return { ok: false, text: e.message, stage: e.stage };
  }
}

describe('the page\'s replay on threads (vmsim-mt)', () => {
  it('gives the CLI\'s bytes on 1, 2 and 3 threads, for every trace and setting', async () => {
    expect(traces.length).toBeGreaterThanOrEqual(3);
    const settings: ReplayOptions[] = [
      { format: 'json' }, { format: 'table' }, { format: 'csv', start: 'warm', guest_pages: '2m' },
      { format: 'json', modes: ['ept', 'shadow'], tables: 'on-demand' }, { format: 'json', preset: 'sunway-1621' },
    ];
    for (const t of traces) for (const o of settings) {
      const n = cli(t, o);
      expect(n.status, n.stderr).toBe(0);
      for (const jobs of [1, 2, 3]) {
        const w = await threaded(t, o, jobs);
        expect(w.ok, `${t} ${JSON.stringify(o)} jobs ${jobs}: ${w.text}`).toBe(true);
        expect(w.text, `${t} ${JSON.stringify(o)} jobs ${jobs}`).toBe(n.stdout);
      }
    }
  }, 300_000);

  it('is told of its end by the replay\'s thread (Atomics.waitAsync woken, not timed out); without waitAsync it looks every 50 ms: the same bytes', async () => {
    const big = join(examples, 'pointer-chase-256m.vmtrace');
    const path = existsSync(big) ? big : traces.at(-1)!;
    const want = cli(path, { format: 'json' }).stdout;
    const A = Atomics as unknown as { waitAsync?: (...a: unknown[]) => { async: boolean; value: unknown } };
    const real = A.waitAsync!;
    const outcomes: string[] = [];
    A.waitAsync = (...a: unknown[]) => {
      const w = real.apply(Atomics, a);
      if (w.async) void (w.value as Promise<string>).then((v) => outcomes.push(v));
      else outcomes.push(String(w.value));
      return w;
    };
    try {
      expect((await threaded(path, { format: 'json' }, 2)).text).toBe(want);
    } finally {
      A.waitAsync = real;
    }
    await new Promise((r) => setTimeout(r, 0));
    expect(outcomes.length).toBeGreaterThan(0);
    expect(outcomes.at(-1), outcomes.join(' ')).not.toBe('timed-out');
    delete A.waitAsync;
    try {
      const seen: ReplayProgress[] = [];
      expect((await threaded(path, { format: 'json' }, 2, 0, (p) => seen.push(p))).text).toBe(want);
      expect(seen.at(-1)!.fraction).toBe(1);
    } finally {
      A.waitAsync = real;
    }
  }, 120_000);

  it('gives the same bytes in rounds of 1 and 3 batches, and its progress climbs through both passes to the end', async () => {
    const dense = traces.at(-1)!;
    const n = cli(dense, { format: 'json' });
    for (const batches of [1, 3]) expect((await threaded(dense, { format: 'json' }, 2, batches)).text).toBe(n.stdout);
    const seen: ReplayProgress[] = [];
    const big = join(examples, 'pointer-chase-256m.vmtrace');
    const path = existsSync(big) ? big : dense;
    const w = await threaded(path, { format: 'json' }, 2, 0, (p) => seen.push(p));
    expect(w.ok).toBe(true);
    expect(w.text).toBe(cli(path, { format: 'json' }).stdout);
    expect(seen.length).toBeGreaterThan(0);
    for (let i = 1; i < seen.length; i++) expect(seen[i].fraction).toBeGreaterThanOrEqual(seen[i - 1].fraction);
    expect(seen.at(-1)!.pass).toBe(2);
    expect(seen.at(-1)!.fraction).toBeGreaterThan(0.9);
    if (path === big) expect(new Set(seen.map((p) => p.pass))).toEqual(new Set([1, 2]));
  }, 300_000);

  it('refuses a damaged trace in the one-worker replay\'s words and stage, on 1 and 2 threads', async () => {
    const good = readFileSync(traces.at(-1)!);
    const hlen = good.readUInt32LE(12);
    const body = 16 + hlen;
    const flip = (at: number) => { const b = Buffer.from(good); b[at] ^= 0xff; return b; };
    const damaged: [string, Buffer][] = [
      ['cut short', good.subarray(0, good.length - 7)],
      ['cut in half', good.subarray(0, body + Math.floor((good.length - body) / 2))],
      ['data after', Buffer.concat([good, Buffer.from('more')])],
      ['version', (() => { const b = Buffer.from(good); b.writeUInt16LE(9, 8); return b; })()],
      ['header', (() => { const b = Buffer.from(good); b[16 + 3] = 0x7b; return b; })()],
      ['not a trace', Buffer.from('hello, this is not a trace at all')],
      ['deflate', flip(body + 40)],
      ['crc', flip(good.length - 6)],
    ];
    // bytes after the gzip member that the header counts in the body (so that the header
    // does not refuse the file first): the reader's own refusal
    const junk = join(work, 'junk.vmtrace');
    python(`from hwlab import tracefile as t
a = [(i % 4, 0x7f0000000000 + (i % 300) * 4096 + i % 4096) for i in range(50000)]
gz = t.gzip_bytes(t.encode_body(a)) + b'junk'
open(sys.argv[1], 'wb').write(t.pack(t.make_header(a, len(gz)), gz))`, junk);
    damaged.push(['data after the gzip member', readFileSync(junk)]);
    for (const [what, bytes] of damaged) {
      const f = join(work, `${what}.vmtrace`);
      writeFileSync(f, bytes);
      const one = await oneWorker(f, {});
      expect(one.ok, what).toBe(false);
      if (what === 'data after the gzip member') expect(one.text, what).toMatch(/data after the end of the gzip member/);
      for (const jobs of [1, 2]) {
        const w = await threaded(f, {}, jobs);
        expect({ ok: w.ok, text: w.text, stage: w.stage }, `${what}, ${jobs} threads`).toEqual({ ok: false, text: one.text, stage: one.stage });
      }
    }
  }, 120_000);

  it('gives back the file\'s bytes after each replay: the module does not grow replay after replay', async () => {
    const big = join(examples, 'pointer-chase-256m.vmtrace');
    const path = existsSync(big) ? big : traces.at(-1)!;
    await threaded(path, { format: 'csv' }, 2);
    const after = mt.wasmMemory.buffer.byteLength;
    // the file read into the module 8 times more: each copy freed, the memory as it was
    const oks: boolean[] = [];
    for (let i = 0; i < 8; i++) oks.push((await threaded(path, { format: 'csv' }, 2)).ok);
    expect(oks).toEqual(Array(8).fill(true));
    expect(mt.wasmMemory.buffer.byteLength).toBe(after);
  }, 120_000);

  it('starts before the file is read and waits for its bytes: the same bytes from a slow file; a file that fails or falls short while read is refused with why, and the module replays again after', async () => {
    const path = join(examples, 'pointer-chase-256m.vmtrace');     // 2.4 MB: 37 pieces
    expect(existsSync(path), `${path}: make -C hw-lab traces`).toBe(true);
    const whole = new Uint8Array(readFileSync(path));
    const want = cli(path, { format: 'json' }).stdout;
    const PIECE = 65_536;
    // a File-like blob handing out its bytes a piece at a time, a timer tick apart; noting,
    // when it hands out its last piece, whether the replay had said its progress by then
    const slow = (bytes: Uint8Array, opts: { fail?: number; short?: number } = {}) => {
      const seen = { pieces: 0, progressBeforeLast: false };
      const size = bytes.length;
      const give = opts.short ? bytes.subarray(0, bytes.length - opts.short) : bytes;
      const blob = {
        size,
        stream: () => new ReadableStream<Uint8Array>({
          async pull(c) {
            await new Promise((r) => setTimeout(r, 1));
            const at = seen.pieces * PIECE;
            if (opts.fail !== undefined && at >= opts.fail) { c.error(new Error('NotReadableError: the file changed')); return; }
            if (at >= give.length) { c.close(); return; }
            if (at + PIECE >= give.length) seen.progressBeforeLast = mt._vmsim_mt_done() > 0;
            seen.pieces++;
            c.enqueue(give.slice(at, at + PIECE));
          },
        }),
      } as unknown as Blob;
      return { blob, seen };
    };
    // the pieces the file being replayed had handed out when the replay started
    const starts: number[] = [];
    const start = mt._vmsim_mt_start;
    let seen = { pieces: 0 };
    mt._vmsim_mt_start = (...a: Parameters<MtModule['_vmsim_mt_start']>) => { starts.push(seen.pieces); return start.apply(mt, a); };
    try {
      for (const jobs of [1, 2]) {
        const s = slow(whole);
        seen = s.seen;
        expect(await replayThreaded(mt, s.blob, { format: 'json' }, { jobs })).toBe(want);
        expect(starts.at(-1), 'started before any of the file was read').toBe(0);
        expect(s.seen.progressBeforeLast, 'pass 1 under way before the file\'s last piece came').toBe(true);
      }
      const failing = slow(whole, { fail: 10 * PIECE });
      await expect(replayThreaded(mt, failing.blob, { format: 'json' }, { jobs: 2 })).rejects.toThrow('NotReadableError: the file changed');
      const short = slow(whole, { short: 1000 });
      await expect(replayThreaded(mt, short.blob, { format: 'json' }, { jobs: 2 })).rejects.toThrow(`the file gave ${whole.length - 1000} of its ${whole.length} bytes`);
    } finally {
      mt._vmsim_mt_start = start;
    }
    expect((await threaded(path, { format: 'json' }, 2)).text).toBe(want);
  }, 120_000);

  it('keeps pass 1\'s findings for the next replay of the file: with other settings the CLI\'s bytes, pass 2 alone and its bar from 0 to 1; findings that do not fit are not taken; a body changed since is refused', async () => {
    const big = join(examples, 'pointer-chase-256m.vmtrace');
    const paths = [...(existsSync(big) ? [big] : []), traces.at(-1)!, traces.at(-2)!];
    const settings: ReplayOptions[] = [{ format: 'json', start: 'warm', guest_pages: '2m' }, { format: 'csv', tables: 'on-demand', host_pages: '4k' }];
    for (const path of paths) {
      const blob = await openAsBlob(path);
      for (const jobs of [2, 1]) {
        let scan: Uint8Array | undefined;
        const first: ReplayProgress[] = [];
        await replayThreaded(mt, blob, { format: 'json' }, { jobs, keepScan: (b) => { scan = b; }, onProgress: (p) => first.push(p) });
        expect(scan?.length, `${path} on ${jobs}: findings kept`).toBeGreaterThan(14 * 8);
        expect(first.some((p) => p.kept)).toBe(false);
        for (const o of settings) {
          const seen: ReplayProgress[] = [];
          let again: Uint8Array | undefined;
          const text = await replayThreaded(mt, blob, o, { jobs, scan, keepScan: (b) => { again = b; }, onProgress: (p) => seen.push(p) });
          expect(text, `${path} ${JSON.stringify(o)} on ${jobs} from kept findings`).toBe(cli(path, o).stdout);
          // pass 2 alone, its bar from 0 to 1
          expect(seen.length).toBeGreaterThan(0);
          expect(seen.every((p) => p.pass === 2 && p.kept), JSON.stringify(seen.slice(0, 3))).toBe(true);
          expect(seen.at(-1)!.fraction).toBe(1);
          if (path === big) expect(seen[0].fraction, 'the bar starts at pass 2\'s start').toBeLessThan(0.5);
          expect(again?.length).toBe(scan!.length);
        }
      }
    }
    // not taken (pass 1 runs, the same bytes): another file's findings; findings without the
    // marks that threads need (from one thread) on 2; damaged ones
    const [a, b] = [traces.at(-1)!, traces.at(-2)!];
    const keep = async (path: string, jobs: number) => {
      let s: Uint8Array | undefined;
      await replayThreaded(mt, await openAsBlob(path), { format: 'json' }, { jobs, keepScan: (x) => { s = x; } });
      return s!;
    };
    const theirs = await keep(b, 2), oneThread = await keep(a, 1), mine = await keep(a, 2);
    const damaged = mine.slice();
    damaged[8] ^= 1;     // its accesses
    for (const [what, scan, jobs] of [['another file\'s', theirs, 2], ['from one thread, on 2', oneThread, 2], ['damaged', damaged, 2], ['cut short', mine.subarray(0, mine.length - 8), 2]] as const) {
      const seen: ReplayProgress[] = [];
      const text = await replayThreaded(mt, await openAsBlob(a), { format: 'json' }, { jobs, scan, onProgress: (p) => seen.push(p) });
      expect(text, what).toBe(cli(a, { format: 'json' }).stdout);
      expect(seen.some((p) => p.kept), `${what}: not taken`).toBe(false);
    }
    // taken, then the file found changed since (same size): in its deflate data, or only in
    // its CRC-32 (which pass 1 checked: pass 2 checks it where pass 1 did not run); refused,
    // on 1 and 2 threads, as the one-worker replay refuses that file
    const bytes = readFileSync(a);
    for (const [what, at] of [['deflate data', bytes.length - 40], ['CRC-32', bytes.length - 6]] as const) {
      const changed = Buffer.from(bytes);
      changed[at] ^= 0xff;
      const f = join(work, 'changed-since.vmtrace');
      writeFileSync(f, changed);
      const one = await oneWorker(f, {});
      expect(one.ok, what).toBe(false);
      for (const jobs of [1, 2]) {
        await expect(replayThreaded(mt, await openAsBlob(f), { format: 'json' }, { jobs, scan: jobs === 2 ? mine : oneThread }), `${what} changed, on ${jobs}`)
          .rejects.toThrow(what === 'CRC-32' ? one.text : /differed between the two passes|corrupt|gzip|deflate|invalid|CRC/i);
      }
    }
  }, 300_000);

  it('takes a refusal\'s words from the module\'s line', () => {
    expect(refusalWords('vmsim replay: trace: the trace is cut short\n')).toBe('the trace is cut short');
    expect(refusalWords('vmsim replay: out of memory\n')).toBe('out of memory');
    expect(refusalWords('')).toBe('the replay failed');
  });
});
