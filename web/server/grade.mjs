// The grading of progress records (POST /api/classes/:code/progress, progress.mjs), off the
// event loop. A worker thread loads the grading bundle (gen/grade.mjs, built from
// grade-entry.ts by `make web/server/gen/grade.mjs`: the page's own exercise generator,
// its check and the lessons' exercises) and the engine (the same vmsim.wasm the page
// loads), and grades a batch of records at a time: for an attempt, the verdict the page's
// check() gives for its lesson, exercise, seed and answer; for a done mark, that its lesson
// exists. What the page said about its own verdict is never read.
//
// A check takes 0.2-2 ms for most kinds; which-wins runs three streams of 1,000 to 4,000
// accesses through the engine (0.5-2 s on a loaded two-core machine), so the engine's
// answer for each of its 72 variants is kept (grade-entry.ts), one worker grades one batch
// (at most 50 records, one student's: at most three which-wins variants) at a time, at
// most QUEUE_MAX batches wait, and one more is answered 503 with Retry-After.
import { readFileSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { RETRY_AFTER_S } from './faults.mjs';

/** Worker threads grading: one (a server on two cores: the other answers requests). */
export const POOL_SIZE = 1;
/** Batches waiting for the worker; one more is answered 503 with Retry-After. */
export const QUEUE_MAX = 16;
/** A batch graded for longer than this is stopped (its worker replaced) and answered 503:
 * a student's batch holds at most three which-wins variants (one a lesson), 6 s at most. */
export const JOB_TIMEOUT_MS = 30_000;
const BUNDLE = new URL('./gen/grade.mjs', import.meta.url);
const WASM = new URL('../../wasm-core/build/wasm/vmsim.wasm', import.meta.url);
const NOT_BUILT = 'the class server cannot grade exercises: its grading bundle or the engine is not built (make build makes web/server/gen/grade.mjs and wasm-core/build/wasm/vmsim.wasm)';

/** A refusal with its HTTP status; retryAfter (seconds) goes out as Retry-After. */
export class GradeRefusal extends Error {
  constructor(statusCode, message, retryAfter) { super(message); this.statusCode = statusCode; if (retryAfter) this.retryAfter = retryAfter; }
}

// The worker: { records } in, { results } (one per record: graded, or { error }) or
// { fatal } out.
if (!isMainThread && workerData?.vmemlabGrade) {
  let grader = null; let fatal = null;
  try {
    const { createGrader } = await import(BUNDLE.href);
    grader = await createGrader(readFileSync(WASM));
  } catch (e) { fatal = `${NOT_BUILT}: ${e?.message ?? e}`; }
  parentPort.on('message', ({ records }) => {
    if (!grader) { parentPort.postMessage({ fatal }); return; }
    parentPort.postMessage({
      results: records.map((r) => { try { return grader.grade(r); } catch (e) { return { error: String(e?.message ?? e) }; } }),
    });
  });
  parentPort.postMessage({ ready: !!grader, fatal });
}

/**
 * The main thread's side: grade(records) resolves with one result per record, in order
 * ({ verdict, expected? } or { field, problem } for a record that names no real exercise,
 * or { error } when the engine failed), or rejects with a GradeRefusal (503 when busy or
 * too slow, 500 when the grader cannot start). The worker starts with the first batch.
 */
export class GradePool {
  constructor({ size = POOL_SIZE, queueMax = QUEUE_MAX, timeoutMs = JOB_TIMEOUT_MS } = {}) {
    this.size = size; this.queueMax = queueMax; this.timeoutMs = timeoutMs;
    this.workers = new Set(); this.idle = []; this.queue = []; this.closed = false; this.restarts = 0;
  }

  busy() {
    return this.closed
      ? new GradeRefusal(503, 'the server is shutting down; nothing was stored', RETRY_AFTER_S)
      : new GradeRefusal(503, `the server is busy grading other students' exercises; nothing was stored. Send the records again in ${RETRY_AFTER_S} s`, RETRY_AFTER_S);
  }

  /** @param {object[]} records what grade-entry.ts's grade() takes */
  grade(records) {
    if (this.closed || this.queue.length >= this.queueMax) return Promise.reject(this.busy());
    return new Promise((resolve, reject) => {
      this.queue.push({ records, resolve, reject });
      this.pump();
    });
  }

  pump() {
    while (this.queue.length) {
      let w = this.idle.pop();
      if (!w) {
        if (this.workers.size >= this.size) return;
        w = this.spawn(); // a batch posted while it loads waits in its port
      }
      const job = this.queue.shift();
      w.job = job;
      job.timer = setTimeout(() => {
        w.failure = new GradeRefusal(503, `grading these records took longer than ${Math.round(this.timeoutMs / 1000)} s (the server is busy); nothing was stored. Send them again later`, RETRY_AFTER_S);
        w.terminate();
      }, this.timeoutMs);
      w.postMessage({ records: job.records });
    }
  }

  spawn() {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { vmemlabGrade: true },
      // a which-wins check holds three results of some 2,000 accesses each (about 65 MB
      // of heap at its peak); past this the worker dies and only its batch fails
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    w.unref();
    this.workers.add(w);
    w.on('message', (m) => {
      if ('ready' in m) { if (!m.ready) w.fatal = m.fatal; return; }
      const job = w.job;
      if (!job) return;
      w.job = null;
      clearTimeout(job.timer);
      if (m.fatal) job.reject(new GradeRefusal(500, m.fatal));
      else job.resolve(m.results);
      if (w.fatal) { w.terminate(); return; } // tried again with the next batch, in a new worker
      if (!this.closed) { this.idle.push(w); this.pump(); }
    });
    w.on('error', (e) => { w.lastError = e; });
    w.on('exit', () => {
      this.workers.delete(w);
      this.idle = this.idle.filter((x) => x !== w);
      const job = w.job;
      if (job) {
        w.job = null;
        clearTimeout(job.timer);
        job.reject(w.failure ?? new GradeRefusal(500, `internal error: the grader stopped while grading these records${w.lastError ? ` (${w.lastError.message})` : ''}; nothing was stored`));
      }
      if (!this.closed) { this.restarts++; if (this.queue.length) setTimeout(() => this.pump(), Math.min(2000, 100 * this.restarts)).unref(); }
    });
    return w;
  }

  /** Stops the workers; batches still waiting are answered 503. */
  async close() {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(this.busy());
    await Promise.all([...this.workers].map((w) => { w.failure = this.busy(); return w.terminate(); }));
  }
}
