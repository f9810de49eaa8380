/* The page's runner asks the threaded replay for its progress as often as the page should
 * draw it: once a second while the replay's threads take every processor the page has
 * (each drawing then takes one from them), 4 times a second where a processor is to spare. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PROGRESS_BUSY_MS, PROGRESS_MS, progressEvery, type FromWorker } from './protocol';
import { readFileSync } from 'node:fs';
import { MT_LOAD_MS, MT_READY_MS, MT_THREADS, workerRunner } from './runner';
import type { ToThreads } from './replay-mt.worker';

describe('the progress rate', () => {
  afterEach(() => { vi.unstubAllGlobals(); vi.restoreAllMocks(); });

  it('is halved when the replay takes every processor', () => {
    expect(progressEvery(2, 2)).toBe(PROGRESS_BUSY_MS);
    expect(progressEvery(1, 1)).toBe(PROGRESS_BUSY_MS);
    expect(progressEvery(8, 16)).toBe(PROGRESS_MS);
    expect(PROGRESS_BUSY_MS).toBe(4 * PROGRESS_MS);
  });

  for (const [processors, threads, every] of [[2, 2, PROGRESS_BUSY_MS], [16, 8, PROGRESS_MS]] as const) {
    it(`is asked of the threaded replay: ${threads} threads of ${processors} processors, every ${every} ms`, () => {
      const posted: ToThreads[] = [];
      class FakeWorker {
        onmessage: unknown = null;
        onerror: unknown = null;
        postMessage(m: ToThreads) { posted.push(m); }
        terminate() {}
      }
      vi.stubGlobal('Worker', FakeWorker);
      vi.stubGlobal('crossOriginIsolated', true);
      vi.stubGlobal('navigator', { hardwareConcurrency: processors });
      const run = workerRunner(new Blob([new Uint8Array(64)]), {}, () => {});
      run.cancel();
      expect(posted).toHaveLength(1);
      expect(posted[0]).toMatchObject({ type: 'replay', jobs: threads, progressMs: every });
    });
  }

  it('is the workers\' too: their updates make one bar, drawn as often, a new pass at once', async () => {
    const made: { onmessage: ((e: { data: unknown }) => void) | null }[] = [];
    class FakeWorker {
      onmessage: ((e: { data: unknown }) => void) | null = null;
      onerror: unknown = null;
      constructor() { made.push(this); }
      postMessage() {}
      terminate() {}
    }
    let now = 0;
    vi.spyOn(performance, 'now').mockImplementation(() => now);
    vi.stubGlobal('Worker', FakeWorker);
    vi.stubGlobal('crossOriginIsolated', false);
    vi.stubGlobal('navigator', { hardwareConcurrency: 2 });
    const told: FromWorker[] = [];
    const run = workerRunner(new Blob([new Uint8Array(64)]), {}, (m) => told.push(m));
    await vi.waitFor(() => expect(made).toHaveLength(2));
    const say = (i: number, pass: 1 | 2, fraction: number) =>
      made[i].onmessage!({ data: { type: 'progress', progress: { pass, fraction, done: 1, accesses: 10 } } });
    // each worker every 250 ms for 2 s, 16 updates: the bar at 0 and 1000 ms and at 1260
    // (the second worker's pass 2: the bar's pass is the one furthest behind)
    for (let t = 0; t < 2000; t += 250) {
      now = t;
      say(0, t < 1000 ? 1 : 2, t / 4000);
      now = t + 10;
      say(1, t < 1250 ? 1 : 2, t / 4000);
    }
    run.cancel();
    const bar = told.filter((m) => m.type === 'progress').map((m) => m.type === 'progress' && m.progress);
    expect(bar.map((p) => p && p.pass)).toEqual([1, 1, 2]);
    expect(bar.every((p) => p && p.workers === 2)).toBe(true);
  });
});

describe('the threads asked of the threaded module', () => {
  it('are at most the pool it starts with: MT_THREADS the same in wasm-core/Makefile', () => {
    // a replay asking for more than the pool would wait for threads the module never starts
    const make = readFileSync(new URL('../../../wasm-core/Makefile', import.meta.url), 'utf8');
    const pool = /^MT_THREADS := (\d+)$/m.exec(make)?.[1];
    expect(pool, 'MT_THREADS in wasm-core/Makefile').toBeDefined();
    expect(MT_THREADS).toBe(Number(pool));
  });
});

describe('the threaded replay\'s worker', () => {
  afterEach(() => { vi.unstubAllGlobals(); vi.restoreAllMocks(); vi.useRealTimers(); });

  /** Workers that say nothing (a Firefox worker blocked while its module starts), noted as made. */
  function silentWorkers() {
    const made: { url: string; posted: unknown[]; terminated: boolean; onmessage: ((e: { data: unknown }) => void) | null }[] = [];
    class FakeWorker {
      onmessage: ((e: { data: unknown }) => void) | null = null;
      onerror: unknown = null;
      posted: unknown[] = [];
      terminated = false;
      url: string;
      constructor(url: URL | string) { this.url = String(url); made.push(this); }
      postMessage(m: unknown) { this.posted.push(m); }
      terminate() { this.terminated = true; }
    }
    vi.stubGlobal('Worker', FakeWorker);
    vi.stubGlobal('crossOriginIsolated', true);
    vi.stubGlobal('navigator', { hardwareConcurrency: 2 });
    return made;
  }

  it('is given up when its module is not ready in time once loaded: another tried once, then the workers', async () => {
    vi.useFakeTimers();
    const made = silentWorkers();
    const told: FromWorker[] = [];
    const run = workerRunner(new Blob([new Uint8Array(64)]), {}, (m) => told.push(m));
    expect(made.map((w) => w.url.includes('replay-mt.worker'))).toEqual([true]);
    vi.advanceTimersByTime(MT_READY_MS);         // its files still coming: kept
    made[0].onmessage!({ data: { type: 'loaded' } });
    vi.advanceTimersByTime(MT_READY_MS - 1);
    expect(made).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(made[0].terminated).toBe(true);
    expect(made.map((w) => w.url.includes('replay-mt.worker'))).toEqual([true, true]);
    expect(made[1].posted).toEqual([expect.objectContaining({ type: 'replay', jobs: 2 })]);
    made[1].onmessage!({ data: { type: 'loaded' } });
    vi.advanceTimersByTime(MT_READY_MS);
    expect(made[1].terminated).toBe(true);
    vi.useRealTimers();
    // the workers, one a group of modes, each told the whole replay (the file's pages read first)
    await vi.waitFor(() => expect(made.length).toBeGreaterThan(2));
    expect(made.slice(2).every((w) => w.url.includes('replay.worker') && !w.url.includes('replay-mt'))).toBe(true);
    expect(made.slice(2).every((w) => (w.posted[0] as { type: string }).type === 'replay')).toBe(true);
    expect(told).toEqual([]);
    run.cancel();
  });

  it('is given up when its module\'s files do not come in time', () => {
    vi.useFakeTimers();
    const made = silentWorkers();
    const run = workerRunner(new Blob([new Uint8Array(64)]), {}, () => {});
    vi.advanceTimersByTime(MT_LOAD_MS - 1);
    expect(made).toHaveLength(1);
    vi.advanceTimersByTime(1);
    expect(made[0].terminated).toBe(true);
    expect(made).toHaveLength(2);
    run.cancel();
  });

  it('is kept once its module is ready, however long the replay then takes', () => {
    vi.useFakeTimers();
    const made = silentWorkers();
    const run = workerRunner(new Blob([new Uint8Array(64)]), {}, () => {});
    made[0].onmessage!({ data: { type: 'loaded' } });
    vi.advanceTimersByTime(MT_READY_MS / 2);
    made[0].onmessage!({ data: { type: 'ready' } });
    vi.advanceTimersByTime(10 * MT_READY_MS);
    expect(made).toHaveLength(1);
    expect(made[0].terminated).toBe(false);
    run.cancel();
    expect(made[0].terminated).toBe(true);
  });

  it('keeps a replay\'s pass 1 findings for the next replay of that file, not for another file', () => {
    const made = silentWorkers();
    const file = new Blob([new Uint8Array(64)]), other = new Blob([new Uint8Array(64)]);
    const told: FromWorker[] = [];
    const scan = new Uint8Array([1, 2, 3]);
    workerRunner(file, {}, (m) => told.push(m));
    expect(made[0].posted).toEqual([expect.not.objectContaining({ scan: expect.anything() })]);
    made[0].onmessage!({ data: { type: 'ready' } });
    made[0].onmessage!({ data: { type: 'scan', bytes: scan } });
    made[0].onmessage!({ data: { type: 'done', report: {} } });
    expect(told.map((m) => m.type)).toEqual(['done']);      // the findings are the runner's, not the panel's
    const again: FromWorker[] = [];
    workerRunner(file, { start: 'warm' }, (m) => again.push(m)).cancel();
    expect(made[1].posted).toEqual([expect.objectContaining({ type: 'replay', scan, options: { start: 'warm' } })]);
    // the bar says pass 1 was kept from the start, before the module's first word
    expect(again).toEqual([{ type: 'progress', progress: expect.objectContaining({ pass: 2, fraction: 0, kept: true, threads: true }) }]);
    const fresh: FromWorker[] = [];
    workerRunner(other, {}, (m) => fresh.push(m)).cancel();
    expect(made[2].posted).toEqual([expect.not.objectContaining({ scan: expect.anything() })]);
    expect(fresh).toEqual([]);
  });

  it('is no longer watched once the replay is cancelled', () => {
    vi.useFakeTimers();
    silentWorkers();
    const run = workerRunner(new Blob([new Uint8Array(64)]), {}, () => {});
    expect(vi.getTimerCount()).toBe(1);
    run.cancel();
    expect(vi.getTimerCount()).toBe(0);
  });

  describe('started before a file is picked (warmThreads)', () => {
    /** runner.ts afresh: what it remembers of a spare worker and the server is per page */
    const fresh = async () => { vi.resetModules(); return await import('./runner'); };
    const blob = () => new Blob([new Uint8Array(64)]);
    const types = (w: { posted: unknown[] }) => w.posted.map((m) => (m as { type: string }).type);

    it('is one worker, told to warm, that the pick then takes: no worker made, nothing watched once ready', async () => {
      vi.useFakeTimers();
      const made = silentWorkers();
      const { warmThreads, workerRunner: runner } = await fresh();
      const release = warmThreads();
      expect(made).toHaveLength(1);
      expect(made[0].url).toContain('replay-mt.worker');
      expect(types(made[0])).toEqual(['warm']);
      warmThreads();
      expect(made).toHaveLength(1);
      made[0].onmessage!({ data: { type: 'loaded' } });
      made[0].onmessage!({ data: { type: 'ready' } });
      vi.advanceTimersByTime(10 * MT_LOAD_MS);       // the learner reads a while: kept
      expect(made[0].terminated).toBe(false);
      const told: FromWorker[] = [];
      const run = runner(blob(), {}, (m) => told.push(m));
      expect(made).toHaveLength(1);
      expect(made[0].posted[1]).toMatchObject({ type: 'replay', jobs: 2 });
      expect(vi.getTimerCount()).toBe(0);
      release();                                     // the panel goes: a taken worker is the replay's
      expect(made[0].terminated).toBe(false);
      made[0].onmessage!({ data: { type: 'progress', progress: { pass: 1, fraction: 0.1, done: 1, accesses: 10 } } });
      expect(told.map((m) => m.type)).toEqual(['progress']);
      run.cancel();
      expect(made[0].terminated).toBe(true);
      // the next pick, with no spare: a worker of its own
      runner(blob(), {}, () => {}).cancel();
      expect(made).toHaveLength(2);
      expect(types(made[1])).toEqual(['replay']);
    });

    it('is let go when its module misses the limit (Firefox\'s hang) or the panel goes; the pick then starts its own', async () => {
      vi.useFakeTimers();
      const made = silentWorkers();
      const { warmThreads, workerRunner: runner } = await fresh();
      warmThreads();
      made[0].onmessage!({ data: { type: 'loaded' } });
      vi.advanceTimersByTime(MT_READY_MS - 1);
      expect(made[0].terminated).toBe(false);
      vi.advanceTimersByTime(1);
      expect(made[0].terminated).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
      const run = runner(blob(), {}, () => {});
      expect(made).toHaveLength(2);
      expect(types(made[1])).toEqual(['replay']);
      run.cancel();
      const release = warmThreads();
      expect(made).toHaveLength(3);
      release();
      expect(made[2].terminated).toBe(true);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('still loading when the file is picked: watched for what is left of its limit, then replaced', async () => {
      vi.useFakeTimers();
      const made = silentWorkers();
      const { warmThreads, workerRunner: runner } = await fresh();
      warmThreads();
      vi.advanceTimersByTime(MT_LOAD_MS / 2);
      const run = runner(blob(), {}, () => {});
      expect(made).toHaveLength(1);
      expect(types(made[0])).toEqual(['warm', 'replay']);
      made[0].onmessage!({ data: { type: 'loaded' } });
      vi.advanceTimersByTime(MT_READY_MS - 1);
      expect(made[0].terminated).toBe(false);
      vi.advanceTimersByTime(1);
      expect(made[0].terminated).toBe(true);
      expect(made).toHaveLength(2);
      expect(types(made[1])).toEqual(['replay']);
      run.cancel();
    });

    it('where the server has no threaded module: let go at its word, the pick goes to the workers, none warmed again', async () => {
      const made = silentWorkers();
      const { warmThreads, workerRunner: runner } = await fresh();
      warmThreads();
      made[0].onmessage!({ data: { type: 'unavailable', message: 'HTTP 404 for vmsim-mt.wasm' } });
      expect(made[0].terminated).toBe(true);
      const run = runner(blob(), {}, () => {});
      await vi.waitFor(() => expect(made.length).toBeGreaterThan(1));
      expect(made.slice(1).every((w) => w.url.includes('replay.worker') && !w.url.includes('replay-mt'))).toBe(true);
      run.cancel();
      warmThreads();
      expect(made.filter((w) => w.url.includes('replay-mt'))).toHaveLength(1);
    });

    it('is not started where the page replays in its workers (not isolated, or ?replay=workers)', async () => {
      const made = silentWorkers();
      vi.stubGlobal('crossOriginIsolated', false);
      const { warmThreads } = await fresh();
      warmThreads();
      expect(made).toHaveLength(0);
    });
  });
});
