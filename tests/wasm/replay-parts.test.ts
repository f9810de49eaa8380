/* The page's replay in parts (one Web Worker per group of modes, each streaming the same
 * File; the first merges the others' counts and writes the report) gives the bytes of the
 * replay that runs the modes one after another: run here part by part in one thread
 * (replayInParts: the same calls the workers make, the counts carried as text), against
 * the native CLI's --jobs 1, for every grouping the page can choose (1 to 5 workers), on
 * the example traces and a trace that evicts TLB entries all the time. Counts from another
 * trace, or a mode twice, are refused. The same on the shared decoder (one part inflates
 * and decodes the file once and hands its batches to the others: replayShared, the calls
 * the page's workers make when the page is cross-origin isolated). */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, openAsBlob, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { modeGroups, replayInParts, replayPart, replayShared, REPLAY_MODES, TraceError, type ReplayMode, type ReplayOptions } from '../../wasm-core/js/replay';
import { workerGroups, workersWithin } from '../../web/src/trace/runner';
import { SLOT_BYTES } from '../../web/src/trace/ring';
import { serialArgs } from './cli-args';

const root = join(__dirname, '..', '..');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const examples = join(root, 'hw-lab', 'build', 'traces');
let engine: Vmsim;
let work: string;
let hopping: string;
const traces: string[] = [];

beforeAll(async () => {
  engine = await loadVmsim({ wasmBinary: readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) });
  work = mkdtempSync(join(tmpdir(), 'vmemlab-replay-parts-'));
  for (const e of ['pointer-chase', 'sequential-scan']) if (existsSync(join(examples, `${e}.vmtrace`))) traces.push(join(examples, `${e}.vmtrace`));
  // 60,000 accesses over 3,000 pages in a random walk: TLB entries evicted and walked again
  const path = join(work, 'evicting.vmtrace');
  execFileSync('python3', ['-c', `import sys, random; sys.path.insert(0, ${JSON.stringify(join(root, 'hw-lab', 'lib'))})
from hwlab.tracefile import write_trace
r = random.Random(3); acc = []; page = 0
for i in range(60000):
    if i % 7 == 0: page = r.randrange(3000)
    acc.append((i % 4, 0x7f0000000000 + page * 4096 + r.randrange(4096)))
write_trace(sys.argv[1], acc)`, path]);
  traces.push(path);
  // 120,000 accesses, each on another of 5,000 pages: pass 1 reports a page at every
  // access, so both passes span several of the shared decoder's batches (32,768 each)
  hopping = join(work, 'hopping.vmtrace');
  execFileSync('python3', ['-c', `import sys, random; sys.path.insert(0, ${JSON.stringify(join(root, 'hw-lab', 'lib'))})
from hwlab.tracefile import write_trace
r = random.Random(4)
write_trace(sys.argv[1], [(i % 4, 0x7f0000000000 + r.randrange(5000) * 4096 + r.randrange(4096)) for i in range(120000)])`, hopping]);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function serial(path: string, o: ReplayOptions) {
  const p = spawnSync(vmsim, serialArgs(path, o), { encoding: 'utf8' });
  expect(p.status, p.stderr).toBe(0);
  return p.stdout;
}

describe('the replay in parts (the page\'s workers)', () => {
  it('groups every mode once, as evenly as the workers allow', () => {
    for (let w = 1; w <= 8; w++) {
      const g = modeGroups(REPLAY_MODES, w);
      expect(g.length).toBe(Math.min(w, 5));
      expect(g.flat().sort()).toEqual([...REPLAY_MODES].sort());
      const sizes = g.map((x) => x.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
    expect(modeGroups(['ept'], 4)).toEqual([['ept']]);
    // the workers' memories together within the one worker's budget: a program's few
    // thousand pages let every processor have one; the largest trace, two
    expect(workersWithin(1403, 8)).toBe(8);
    expect(workersWithin(2 ** 20, 8)).toBe(2);
    expect(workersWithin(2 ** 19, 8)).toBe(3);
    expect(workersWithin(100, 0)).toBe(1);
    expect(modeGroups(REPLAY_MODES, 0)).toEqual([[...REPLAY_MODES]]);
    // the page's workers: on the shared decoder the lead (first) decodes for all, so it
    // runs one mode of five with 2 workers and none with more; each worker reading the
    // file, the modes dealt out evenly
    expect(workerGroups(REPLAY_MODES, 2, true)).toEqual([[], [...REPLAY_MODES]]);
    expect(workerGroups(REPLAY_MODES, 3, true)).toEqual([[], ['native', 'npt', 'flat'], ['ept', 'shadow']]);
    expect(workerGroups(REPLAY_MODES, 8, true)).toEqual([[], ...REPLAY_MODES.map((m) => [m])]);
    expect(workerGroups(REPLAY_MODES, 2, false)).toEqual(modeGroups(REPLAY_MODES, 2));
    expect(workerGroups(REPLAY_MODES, 1, true)).toEqual([[...REPLAY_MODES]]);
    expect(workerGroups(['ept'], 4, true)).toEqual([['ept']]);
    for (let w = 1; w <= 8; w++) {
      const g = workerGroups(REPLAY_MODES, w, true);
      expect(g.flat().sort(), `${w} workers`).toEqual([...REPLAY_MODES].sort());
    }
  });

  it('prints the bytes of the one-after-another replay for every number of workers', async () => {
    expect(traces.length).toBeGreaterThanOrEqual(3);
    const settings: ReplayOptions[] = [{ format: 'json' }, { format: 'table', start: 'warm' }, { format: 'csv', tables: 'on-demand' },
      { format: 'json', modes: ['native', 'ept', 'npt', 'shadow', 'flat', 'agile'] }];
    for (const t of traces) for (const o of settings) {
      const want = serial(t, o);
      for (let w = 1; w <= 5; w++) {
        const groups = modeGroups(o.modes ?? REPLAY_MODES, w);
        const got = await replayInParts(engine.openReplay, await openAsBlob(t), o, groups);
        expect(got, `${t} ${JSON.stringify(o)} ${w} workers`).toBe(want);
      }
    }
    // the evicting trace does evict: more TLB misses than pages, in every mode
    const rep = JSON.parse(serial(traces.at(-1)!, { format: 'json' }));
    for (const m of rep.modes) expect(m.tlb_misses).toBeGreaterThan(2 * rep.trace.pages);
  }, 600_000);

  it('prints the same bytes on the shared decoder, whichever part leads', async () => {
    const settings: ReplayOptions[] = [{ format: 'json' }, { format: 'table', start: 'warm' }, { format: 'csv', tables: 'on-demand' },
      { format: 'json', modes: ['native', 'ept', 'npt', 'shadow', 'flat', 'agile'], guest_pages: '2m' }];
    for (const t of [...traces, hopping]) for (const o of settings) {
      const want = serial(t, o);
      for (const w of [2, 3, 5]) {
        const groups = modeGroups(o.modes ?? REPLAY_MODES, w);
        // the lead decoding only (part []), as the page has it with more processors than modes
        const page = workerGroups(o.modes ?? REPLAY_MODES, w, true);     // as the page's workers have them
        for (const g of w === 2 ? [groups, [...groups].reverse(), page] : w === 5 ? [groups, [[], ...groups]] : [groups, page]) {
          const got = await replayShared(engine.openReplay, await openAsBlob(t), o, g);
          expect(got, `${t} ${JSON.stringify(o)} ${JSON.stringify(g)}`).toBe(want);
        }
      }
    }
    // the hopping trace does evict and spans batches
    const rep = JSON.parse(serial(hopping, { format: 'json' }));
    expect(rep.trace.accesses).toBeGreaterThan(3 * 32768);
    for (const m of rep.modes) expect(m.tlb_misses).toBeGreaterThan(2 * rep.trace.pages);
  }, 600_000);

  it("prints the same bytes with pieces of pass 1 scanned ahead by the lead and joined", async () => {
    // the page's lead scans a piece ahead while the worker that scans is behind; here every
    // piece, and every other one
    let joined = 0, scannedAhead = 0;
    const open = (head: Uint8Array, size: number, o: ReplayOptions) => {
      const t = engine.openReplay(head, size, o);
      const join = t.scanJoined;
      expect(join).toBeDefined();
      t.scanJoined = (piece, ahead) => {
        joined++;
        // vmsim_replay_ahead's start and stop (two 32-bit size_t): the scan ahead took the piece past its first records
        const v = new DataView(ahead.buffer, ahead.byteOffset, 8);
        if (v.getUint32(4, true) > v.getUint32(0, true) + piece.length / 2) scannedAhead++;
        join.call(t, piece, ahead);
      };
      return t;
    };
    const settings: ReplayOptions[] = [{ format: 'json' }, { format: 'csv', tables: 'on-demand', start: 'warm' }];
    for (const t of [...traces, hopping]) for (const o of settings) {
      const want = serial(t, o);
      for (const every of [1, 2]) {
        let i = 0;
        const got = await replayShared(open, await openAsBlob(t), o, modeGroups(REPLAY_MODES, 2), () => i++ % every === 0);
        expect(got, `${t} ${JSON.stringify(o)} every ${every}`).toBe(want);
      }
    }
    expect(joined).toBeGreaterThan(10);
    expect(scannedAhead).toBeGreaterThan(joined / 2);
  }, 600_000);

  it('prints the same bytes with batches of pass 2 grouped by page by the lead', async () => {
    // the page's lead groups a batch's runs by page while the other workers are behind, and
    // they run those segments instead of building their own; here every batch, every other
    // one, and (the lead running modes too) every batch; a batch carrying them says so in its
    // head (wire_head.nsegs, bytes 88 to 91)
    let taken = 0, withSegs = 0;
    const open = (head: Uint8Array, size: number, o: ReplayOptions) => {
      const t = engine.openReplay(head, size, o);
      const take = t.take!;
      t.take = (b, copied) => {
        const v = new DataView(b.buffer, b.byteOffset, 96);
        if (v.getUint32(0, true) === 2) { taken++; if (v.getUint32(88, true)) withSegs++; }
        return take.call(t, b, copied);
      };
      return t;
    };
    const settings: ReplayOptions[] = [{ format: 'json' }, { format: 'csv', tables: 'on-demand', start: 'warm' }];
    for (const t of traces) for (const o of settings) {
      const want = serial(t, o);
      for (const [every, g] of [[1, workerGroups(REPLAY_MODES, 2, true)], [2, workerGroups(REPLAY_MODES, 2, true)],
        [1, modeGroups(REPLAY_MODES, 2)]] as const) {
        let i = 0;
        const got = await replayShared(open, await openAsBlob(t), o, g as ReplayMode[][], undefined, () => i++ % every === 0);
        expect(got, `${t} ${JSON.stringify(o)} every ${every} ${JSON.stringify(g)}`).toBe(want);
      }
    }
    expect(taken).toBeGreaterThan(10);
    expect(withSegs).toBeGreaterThan(taken / 2);
  }, 600_000);

  it("hands out batches that fit a slot of the page's rings", async () => {
    // the page's workers pass each batch through a SharedArrayBuffer ring of SLOT_BYTES
    // slots, with its segments or without
    let largest = 0;
    const open = (head: Uint8Array, size: number, o: ReplayOptions) => {
      const t = engine.openReplay(head, size, o);
      const share = t.share;
      if (share) t.share = (out, group) => share.call(t, (b) => { largest = Math.max(largest, b.length); out(b); }, group);
      return t;
    };
    for (const group of [undefined, () => true]) {
      for (const t of [hopping, ...traces]) {
        await replayShared(open, await openAsBlob(t), { format: 'json' }, modeGroups(REPLAY_MODES, 2), undefined, group);
      }
    }
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThanOrEqual(SLOT_BYTES);
  }, 120_000);

  it('refuses a damaged file on the shared decoder as the replay one after another does', async () => {
    const good = readFileSync(hopping);
    const head = good.toString('latin1', 0, 4096);
    const at = head.indexOf('"pages":') + '"pages":'.length;
    const pages = Buffer.from(good);
    pages[at] = pages[at] === 0x31 ? 0x32 : 0x31;     // the distinct pages announced: found wrong at the end of pass 1
    const flipped = Buffer.from(good);
    flipped[Math.floor(good.length * 0.6)] ^= 0x55;   // a byte inside the gzip stream: the scan refuses a record
    const crc = Buffer.from(good);
    crc[good.length - 6] ^= 0x01;                     // the gzip trailer's CRC-32: the inflating refuses it
    const cases = { pages, flipped, crc };
    for (const [name, bytes] of Object.entries(cases)) {
      const blob = new Blob([bytes]);
      const one = await replayInParts(engine.openReplay, blob, { format: 'json' }, [[...REPLAY_MODES]]).then(() => 'accepted', (e: Error) => e.message);
      expect(one, name).not.toBe('accepted');
      for (const g of [modeGroups(REPLAY_MODES, 2), [[], ...modeGroups(REPLAY_MODES, 5)]]) {
        const shared = await replayShared(engine.openReplay, blob, { format: 'json' }, g).then(() => 'accepted', (e: Error) => e.message);
        expect(shared, `${name} ${JSON.stringify(g)}`).toBe(one);
      }
      // with every piece of pass 1 scanned ahead by the lead and joined
      const ahead = await replayShared(engine.openReplay, blob, { format: 'json' }, modeGroups(REPLAY_MODES, 2), () => true)
        .then(() => 'accepted', (e: Error) => e.message);
      expect(ahead, `${name}, scanned ahead`).toBe(one);
    }
  }, 120_000);

  it('refuses counts of another trace, a mode twice, and a report with a part missing', async () => {
    const [a, b] = traces;
    const part = async (t: string, p: ReplayMode[]) => replayPart(engine.openReplay, await openAsBlob(t), {}, p);
    const lead = await part(a, ['native', 'ept']);
    const other = await part(b, ['npt', 'shadow', 'flat']);
    expect(() => lead.finish([other.counts()])).toThrow(/another trace or other options/);
    other.close();
    lead.close();
    const lead2 = await part(a, ['native']);
    const ept = await part(a, ['ept']);
    expect(() => lead2.finish([ept.counts(), ept.counts()])).toThrow(TraceError);
    lead2.close();
    const lead3 = await part(a, ['native']);
    expect(() => lead3.finish([ept.counts()])).toThrow(/were not merged in/);
    lead3.close();
    ept.close();
  }, 120_000);
});
