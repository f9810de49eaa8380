/* The page's runner asks the threaded replay for its progress as often as the page should
 * draw it: twice a second while the replay's threads take every processor the page has
 * (each drawing then takes one from them), 4 times a second where a processor is to spare. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PROGRESS_BUSY_MS, PROGRESS_MS, progressEvery } from './protocol';
import { workerRunner } from './runner';
import type { ToThreads } from './replay-mt.worker';

describe('the progress rate', () => {
  afterEach(() => { vi.unstubAllGlobals(); });

  it('is halved when the replay takes every processor', () => {
    expect(progressEvery(2, 2)).toBe(PROGRESS_BUSY_MS);
    expect(progressEvery(1, 1)).toBe(PROGRESS_BUSY_MS);
    expect(progressEvery(8, 16)).toBe(PROGRESS_MS);
    expect(PROGRESS_BUSY_MS).toBe(2 * PROGRESS_MS);
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
});
