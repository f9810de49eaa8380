// The grading of progress records (POST /api/classes/:code/progress, progress.mjs), off the
// event loop. A worker thread loads the grading bundle (gen/grade.mjs, built from
// grade-entry.ts by `make web/server/gen/grade.mjs`: the page's own exercise generator,
// its check and the lessons' exercises) and the engine (the same vmsim.wasm the page
// loads), and grades a batch of records at a time: for an attempt, the verdict the page's
// check() gives for its lesson, exercise, seed and answer; for a done mark, that its lesson
// exists. What the page said about its own verdict is never read.
//
// A check takes 0.2-2 ms for most kinds; which-wins is looked up in the table of its 72
// variants' answers made at build time (gen/which-wins.json, which-wins-table.mjs), and
// only without a table (missing, or made from another bundle or engine: said in one line)
// runs its three streams of 1,000 to 4,000 accesses through the engine, counted without
// their walks (grade-entry.ts), keeping each variant's answer. One worker grades one record
// at a time, the student with records waiting that has had the least grading time first;
// the next record (another student's) waits in its port.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { RETRY_AFTER_S } from './faults.mjs';
import { BUNDLE, TABLE, WASM, readWhichWinsTable, tableInputs } from './which-wins-table.mjs';

/** Worker threads grading: one (a server on two cores: the other answers requests). */
export const POOL_SIZE = 1;
/** Records posted to a worker at once: the one it grades and the next, another client's,
 * waiting in its port, so that the worker goes on with it while the main thread is busy
 * (under load its event loop answered 100-200 ms late at p99, and a worker handed one
 * record at a time waited that long between records). */
export const WORKER_DEPTH = 2;
/** Records one client (a student) may have waiting to be graded: two batches. One more
 * batch is answered 429 with Retry-After; the page sends it again. */
export const CLIENT_MAX = 100;
/** Records all clients together may have waiting; past it a batch is answered 503. */
export const TOTAL_MAX = 2000;
/** A record graded for longer than this is stopped (its worker replaced) and its batch
 * answered 503. A record takes under 2 ms; a which-wins variant without the table 40-160 ms
 * the first time, then its answer is kept. */
export const RECORD_TIMEOUT_MS = 10_000;
const NOT_BUILT = 'the class server cannot grade exercises: its grading bundle or the engine is not built (make build makes web/server/gen/grade.mjs and wasm-core/build/wasm/vmsim.wasm)';
/** A refusal with its HTTP status; retryAfter (seconds) goes out as Retry-After. */
export class GradeRefusal extends Error {
  constructor(statusCode, message, retryAfter) { super(message); this.statusCode = statusCode; if (retryAfter) this.retryAfter = retryAfter; }
}

// The worker: { records } in, { results } (one per record: graded, or { error }) with the
// engine's runs so far, or { fatal } out. workerData.table: the which-wins table's file URL
// (null: none, every variant from the engine).
if (!isMainThread && workerData?.vmemlabGrade) {
  let grader = null; let fatal = null; let table = 'none given';
  try {
    const { createGrader } = await import(BUNDLE.href);
    const wasm = readFileSync(WASM);
    let whichWins = null;
    if (workerData.table) {
      const t = readWhichWinsTable(new URL(workerData.table), tableInputs(readFileSync(BUNDLE), wasm));
      whichWins = t.answers ?? null;
      table = t.answers ? 'loaded' : t.why;
    }
    grader = await createGrader(wasm, { whichWins });
  } catch (e) { fatal = `${NOT_BUILT}: ${e?.message ?? e}`; }
  parentPort.on('message', ({ records }) => {
    if (!grader) { parentPort.postMessage({ fatal }); return; }
    parentPort.postMessage({
      results: records.map((r) => { try { return grader.grade(r); } catch (e) { return { error: String(e?.message ?? e) }; } }),
      engineRuns: grader.engineRuns,
    });
  });
  parentPort.postMessage({ ready: !!grader, fatal, table });
}

/**
 * The main thread's side: grade(records, { client, signal }) resolves with one result per
 * record, in order ({ verdict, expected? } or { field, problem } for a record that names no
 * real exercise, or { error } when the engine failed), or rejects with a GradeRefusal (429
 * when this client has CLIENT_MAX records waiting, 503 when all clients together have
 * TOTAL_MAX or the grading is too slow, 500 when the grader cannot start).
 *
 * Fair: each client (a student) has its own queue, and the worker takes one record at a
 * time, from the client with records waiting that has had the least grading time, so one
 * client's backlog delays another's first record by at most one record of its own (the one
 * being graded, or the one posted next: never both). A batch whose request is gone (signal
 * aborted) is dropped: its records not yet graded are never graded.
 */
export class GradePool {
  /** table: the which-wins table's file (a URL or its href; null: none, which-wins from the
   * engine, as a server whose table is missing grades). */
  constructor({ size = POOL_SIZE, clientMax = CLIENT_MAX, totalMax = TOTAL_MAX, timeoutMs = RECORD_TIMEOUT_MS, table = TABLE } = {}) {
    this.size = size; this.clientMax = clientMax; this.totalMax = totalMax; this.timeoutMs = timeoutMs;
    this.table = table ? String(table) : null;
    /** The which-wins table as the last worker found it: 'loaded', why it is not used, or 'none given'. */
    this.whichWinsTable = null;
    /** Variants the workers worked out with the engine (a which-wins one only without the table). */
    this.engineRuns = 0;
    this.workers = new Set(); this.closed = false; this.restarts = 0;
    this.clients = new Map(); // client -> { jobs: [job], pending: records not yet graded }
    this.ring = []; // clients with records not yet sent to a worker
    this.vtime = 0; // the grading time (ms) of the client served last: where a newcomer starts
    this.total = 0; this.graded = 0; this.dropped = 0;
  }

  busy() {
    return this.closed
      ? new GradeRefusal(503, 'the server is shutting down; nothing was stored', RETRY_AFTER_S)
      : new GradeRefusal(503, `the server is busy grading other students' exercises; nothing was stored. Send the records again in ${RETRY_AFTER_S} s`, RETRY_AFTER_S);
  }

  /** @param {object[]} records what grade-entry.ts's grade() takes
   * @param {{ client?: string, signal?: AbortSignal, timing?: { waitMs?: number, gradeMs?: number } }} [opts]
   * timing, when given, gets how long the batch waited for its first record's turn and how
   * long its records took in the worker (VMEMLAB_SERVER_TIMING). */
  grade(records, { client = '', signal, timing } = {}) {
    if (this.closed) return Promise.reject(this.busy());
    if (signal?.aborted) { this.dropped += records.length; return Promise.reject(new GradeRefusal(499, 'the request went away')); }
    let c = this.clients.get(client);
    const waiting = c?.pending ?? 0;
    if (waiting + records.length > this.clientMax) {
      return Promise.reject(new GradeRefusal(429, `you have ${waiting} records waiting to be graded already (at most ${this.clientMax}); nothing was stored. Send these again in ${RETRY_AFTER_S} s`, RETRY_AFTER_S));
    }
    if (this.total + records.length > this.totalMax) return Promise.reject(this.busy());
    if (!records.length) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      if (!c) { c = { jobs: [], pending: 0, used: this.vtime }; this.clients.set(client, c); }
      const job = { client, records, results: new Array(records.length), next: 0, done: 0, inFlight: 0, resolve, reject, over: false, timing, since: performance.now() };
      if (timing) timing.gradeMs = 0;
      c.jobs.push(job); c.pending += records.length; this.total += records.length;
      if (c.jobs.length === 1) this.ring.push(client);
      if (signal) {
        const drop = () => this.finish(job, new GradeRefusal(499, 'the request went away'));
        signal.addEventListener('abort', drop, { once: true });
        job.unlisten = () => signal.removeEventListener('abort', drop);
      }
      this.pump();
    });
  }

  /** Ends a job (all graded, failed or dropped): its records not yet sent are never sent. */
  finish(job, err) {
    if (job.over) return;
    job.over = true;
    job.unlisten?.();
    const c = this.clients.get(job.client);
    const unsent = job.records.length - job.next;
    if (err && unsent) this.dropped += unsent;
    // a record under way is counted off when its answer comes
    const off = job.records.length - job.done - job.inFlight;
    this.total -= off;
    if (c) {
      c.pending -= off;
      const i = c.jobs.indexOf(job);
      if (i !== -1) c.jobs.splice(i, 1);
      if (!c.jobs.length) this.ring = this.ring.filter((x) => x !== job.client);
      if (!c.pending && !c.jobs.length) this.clients.delete(job.client);
    }
    if (err) job.reject(err); else job.resolve(job.results);
  }

  pump() {
    while (this.ring.length && !this.closed) {
      // A worker with nothing posted, or a new one, else one grading a record with room for
      // the next (WORKER_DEPTH).
      let w = null;
      for (const x of this.workers) if (!x.dying && x.tasks.length < WORKER_DEPTH && (!w || x.tasks.length < w.tasks.length)) w = x;
      if ((!w || w.tasks.length) && this.workers.size < this.size) w = this.spawn(); // a record posted while it loads waits in its port
      if (!w) return;
      // The client with records waiting that has had the least grading time goes next
      // (start-time fair queuing): one whose records are costly (new which-wins variants without the table)
      // waits while those with cheap records are served, and a client that comes with a
      // first record starts level with the least served, so it waits at most for the
      // record being graded and the one posted after it, each another client's. A client
      // with a record on this worker already is passed over here: one client's backlog
      // never holds two places ahead of a newcomer.
      let at = -1;
      for (let i = 0; i < this.ring.length; i++) {
        if (w.tasks.some((t) => t.job.client === this.ring[i])) continue;
        if (at < 0 || this.clients.get(this.ring[i]).used < this.clients.get(this.ring[at]).used) at = i;
      }
      if (at < 0) return; // only clients already on the worker: their next record waits for its answer
      const client = this.ring[at];
      const c = this.clients.get(client);
      this.vtime = Math.max(this.vtime, c.used);
      const job = c.jobs[0];
      const i = job.next++;
      const now = performance.now();
      if (job.timing && i === 0) job.timing.waitMs = now - job.since;
      job.inFlight++;
      if (job.next >= job.records.length) c.jobs.shift(); // every record sent: the next job's turn
      if (!c.jobs.length) this.ring.splice(at, 1);
      const task = { job, i, client: c, posted: now, sent: now };
      w.tasks.push(task);
      if (w.tasks.length === 1) this.started(w, now);
      w.postMessage({ records: [job.records[i]] });
    }
  }

  /** The worker's first posted record is being graded from `now`: its time limit runs. */
  started(w, now) {
    w.tasks[0].sent = now;
    clearTimeout(w.timer);
    w.timer = setTimeout(() => {
      w.failure = new GradeRefusal(503, `grading a record took longer than ${Math.round(this.timeoutMs / 1000)} s (the server is busy); nothing was stored. Send the records again later`, RETRY_AFTER_S);
      w.dying = true;
      w.terminate();
    }, this.timeoutMs);
  }

  /** A record's answer came (or its worker died): count it off, and answer its batch when
   * it was the last. */
  settle(task, result, failure) {
    const { job } = task;
    job.inFlight--;
    const now = performance.now();
    task.client.used += now - task.sent;
    if (job.timing) job.timing.gradeMs += now - task.posted;
    const c = this.clients.get(job.client);
    if (c) { c.pending--; if (!c.pending && !c.jobs.length) this.clients.delete(job.client); }
    this.total--;
    this.graded++;
    if (job.over) return; // dropped meanwhile: its answer goes nowhere
    job.done++;
    if (failure) { this.finish(job, failure); return; }
    job.results[task.i] = result;
    if (job.done === job.records.length) this.finish(job, null);
  }

  spawn() {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { vmemlabGrade: true, table: this.table },
      // a which-wins check without the table runs three streams of some 2,000 accesses
      // each (about 65 MB of heap at its peak with whole results); past this the worker
      // dies and only its batch fails
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    w.unref();
    w.tasks = []; // posted, in order: the first is being graded
    this.workers.add(w);
    w.on('message', (m) => {
      if ('ready' in m) {
        if (!m.ready) { w.fatal = m.fatal; return; }
        if (m.table !== this.whichWinsTable && m.table !== 'loaded' && this.table) {
          console.warn(`vmemlab grading: the which-wins table ${fileURLToPath(this.table)} is ${m.table}; which-wins is graded with the engine instead (40-160 ms a variant the first time, then kept). make build makes the table`);
        }
        this.whichWinsTable = m.table;
        return;
      }
      if (typeof m.engineRuns === 'number') { this.engineRuns += m.engineRuns - (w.engineRuns ?? 0); w.engineRuns = m.engineRuns; }
      const task = w.tasks.shift();
      if (!task) return;
      clearTimeout(w.timer);
      if (w.tasks.length) this.started(w, performance.now());
      this.settle(task, m.results?.[0], m.fatal ? new GradeRefusal(500, m.fatal) : null);
      if (w.fatal) { w.dying = true; w.terminate(); return; } // tried again with the next record, in a new worker
      if (!this.closed) this.pump();
    });
    w.on('error', (e) => { w.lastError = e; });
    w.on('exit', () => {
      this.workers.delete(w);
      clearTimeout(w.timer);
      // the record being graded fails with why the worker stopped; one posted after it,
      // never begun, is answered busy (nothing stored, sent again after Retry-After)
      w.tasks.splice(0).forEach((task, k) => this.settle(task, null, k === 0
        ? w.failure ?? new GradeRefusal(500, `internal error: the grader stopped while grading these records${w.lastError ? ` (${w.lastError.message})` : ''}; nothing was stored`)
        : this.busy()));
      if (!this.closed) { this.restarts++; if (this.ring.length) setTimeout(() => this.pump(), Math.min(2000, 100 * this.restarts)).unref(); }
    });
    return w;
  }

  /** Stops the workers; batches still waiting are answered 503. */
  async close() {
    this.closed = true;
    for (const c of [...this.clients.values()]) for (const job of [...c.jobs]) this.finish(job, this.busy());
    await Promise.all([...this.workers].map((w) => { w.failure = this.busy(); w.dying = true; return w.terminate(); }));
  }
}
