// The check of a trace upload (POST /api/classes/:code/traces), off the event loop. The
// body parser of traces.mjs hands the raw request body to a worker thread (transferred,
// not copied); the worker decodes and parses it, runs the document checks of limits.mjs,
// checks the fields, reads and schema-checks the trace header, inflates the gzip body as a
// stream and walks it record by record (web/src/trace/format.mjs), schema-checks the
// report and compares it with the header. The main thread gets back only what it stores
// (the label, the header and report as JSON text, the trace as base64), so an upload of
// any shape costs the event loop that answers everyone else nothing but the transfer.
//
// Every step stops at its first problem: the body's shape is bounded before JSON.parse
// builds anything (a report with 1.9 million empty modes once held the event loop for
// 40 s and ran the process out of heap while ajv collected every error), the schemas run
// with allErrors off, and the inflated body is never held whole: it is walked chunk by
// chunk and cut off at what the header can take or INFLATE_RATIO_MAX times its
// compressed size (a 408 KB gzip of zeros once inflated to 420 MB in one synchronous call).
import { readFileSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { createGunzip } from 'node:zlib';
import Ajv2020 from 'ajv/dist/2020.js';
import { ACCESS_MAX_BYTES, BodyChecker, END_MAX_BYTES, readHeader, TraceFormatError } from '../src/trace/format.mjs';
import { RETRY_AFTER_S } from './faults.mjs';
import { checkJson, textProblem } from './limits.mjs';

/** The largest trace file a class keeps: a whole program recorded by hw-lab/run trace
 * (python3 -c "sum(range(10**6))", 232 M accesses, is 26.5 MB; sum(range(5*10**6)), 984 M
 * accesses, 38 MB). */
export const TRACE_MAX_BYTES = Number(process.env.VMEMLAB_TRACE_MAX_BYTES ?? 64 * 2 ** 20);
/** The most accesses an uploaded trace may hold (the recorder's default --limit). */
export const TRACE_MAX_ACCESSES = 2_000_000_000;
/** The most distinct pages an uploaded trace may touch (8 GiB of memory): the walk keeps
 * every page number it has seen, 16 to 32 bytes each (format.mjs's PageSet). */
export const TRACE_MAX_PAGES = 2 ** 21;
/** The request body: the trace in base64 and the report. */
export const BODY_MAX = Math.ceil(TRACE_MAX_BYTES * 4 / 3) + 256 * 1024;
/**
 * How many times its compressed size a trace body may inflate to. Measured on traces
 * hw-lab/run trace recorded (gzip level 6): ls / 6.3, python3 -c 'print(sum(range(100000)))'
 * 5.3 (stopped at the recorder's 20 M accesses), the page's examples pointer-chase 15.6
 * and sequential-scan 93.3, a C loop adding to a volatile 88. The most a recording
 * reaches is a program that does nothing but spin on one instruction (`for (;;);`) until
 * the recorder stops it at 20 M accesses: 273 dynamically linked, 599 static (only its
 * start-up accesses do not compress away). A body of one record repeated, which no
 * recording is, inflates about 1,030 times (deflate's most): 20 M one-byte records fit in
 * 19 KB, a 420 MB run of zeros in 408 KB. 768 is 8 times what programs that do work
 * reach, above the spinning ones, and below the repeated records.
 */
export const INFLATE_RATIO_MAX = 768;
/** Small bodies may inflate to this much whatever their ratio (a tiny file cannot cost more). */
export const INFLATE_FLOOR_BYTES = 2 ** 20;
/** Worker threads checking uploads: one, for a server on two cores (the other answers requests). */
export const POOL_SIZE = 1;
/** Uploads waiting for a worker; one more is answered 503 with Retry-After. Uploads in
 * flight (their bodies read, waiting, checked, stored) are at most POOL_SIZE + QUEUE_MAX,
 * which bounds the memory they take: with 20 bodies of 4.9 MB (a 3.6 MB trace) sent at
 * once, the server's peak RSS was 254-266 MB with 3 in flight, 294-299 MB with 5, and 313
 * MB with 9 of 4.7 MB stored at once. A check takes 0.1-0.7 s, so 3 in flight still take
 * a class's uploads a few a second; the page sends a refused one again after Retry-After. */
export const QUEUE_MAX = 2;
/** A check that runs longer than this is stopped (its worker is replaced) and answered 503:
 * walking a whole program's body takes its time (984 M accesses, 1.9 GB inflated: 12 s of
 * CPU here), a bad one is refused at its first problem. */
export const JOB_TIMEOUT_MS = 120_000;
/** The most objects and arrays, and the most values in them, a trace upload's JSON may
 * hold: a real one has about 20 objects and arrays (the report's sections and its modes)
 * and a few dozen values, plus the program's arguments (at most 4096, the schemas' bound). */
const CONTAINERS_MAX = 64;
const COMMAS_MAX = 8192;
const B64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const INFLATE_CHUNK = 64 * 1024;

/** A refusal with its HTTP status; retryAfter (seconds) goes out as Retry-After. */
export class TraceRefusal extends Error {
  constructor(statusCode, message, retryAfter) { super(message); this.statusCode = statusCode; if (retryAfter) this.retryAfter = retryAfter; }
}
const fail = (status, message) => { throw new TraceRefusal(status, message); };

/**
 * Refuses a body with more objects, arrays or values than a trace upload has, from its
 * bytes, before JSON.parse builds them (strings are skipped whole with indexOf).
 */
function checkShape(bytes) {
  let containers = 0; let commas = 0;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i];
    if (c === 0x22 /* " */) {
      let j = bytes.indexOf(0x22, i + 1);
      for (;;) {
        if (j === -1) return; // an unterminated string: JSON.parse says where
        let b = 0;
        while (bytes[j - 1 - b] === 0x5c) b++;
        if (b % 2 === 0) break;
        j = bytes.indexOf(0x22, j + 1);
      }
      i = j;
    } else if (c === 0x7b || c === 0x5b) {
      if (++containers > CONTAINERS_MAX) fail(400, `the upload holds more than ${CONTAINERS_MAX} objects and lists; a trace upload ({"label", "report", "trace"}) holds about 20`);
    } else if (c === 0x2c && ++commas > COMMAS_MAX) {
      fail(400, `the upload holds more than ${COMMAS_MAX} values in its objects and lists; a trace upload ({"label", "report", "trace"}) holds a few dozen and the program's arguments`);
    }
  }
}

/** The problems ajv found, as "field: problem" (allErrors is off: the first one). */
const problems = (errors) => (errors ?? []).filter((e) => e.keyword !== 'if').slice(0, 6)
  .map((e) => `${e.instancePath || '(top)'}: ${e.keyword === 'additionalProperties' ? `has an unknown field "${e.params.additionalProperty}"` : e.message}`).join('; ');

let validators = null;
/** The header and report schemas, compiled on first use (in the worker). */
function schemas() {
  if (validators) return validators;
  const headerSchema = JSON.parse(readFileSync(new URL('../../hw-lab/schema/trace.schema.json', import.meta.url), 'utf8'));
  const reportSchema = JSON.parse(readFileSync(new URL('../../wasm-core/schema/replay.schema.json', import.meta.url), 'utf8'));
  // allErrors off: an untrusted document is never checked by collecting every error
  const ajv = new Ajv2020({ allErrors: false, strict: false });
  validators = {
    header: ajv.compile(headerSchema), report: ajv.compile(reportSchema),
    modesMax: reportSchema.properties.modes.maxItems, argsMax: reportSchema.properties.trace.properties.args.maxItems,
  };
  return validators;
}

/** A label as text a list can show: at most 80 characters, no control, bidi or line
 * separator characters (limits.mjs's rule for names). */
const labelProblem = (s) => textProblem(s, { name: true });
const cut = (s, n) => Array.from(s).slice(0, n).join(''); // whole code points

/**
 * Inflates the gzip body as a stream and feeds each chunk to format.mjs's BodyChecker,
 * stopping at once when the output passes what the header's accesses can take or
 * INFLATE_RATIO_MAX times the compressed size (at least INFLATE_FLOOR_BYTES), or, on the
 * way, INFLATE_RATIO_MAX times the compressed bytes inflated so far plus
 * INFLATE_FLOOR_BYTES: a header may claim up to 2 G accesses, and a bomb is then refused
 * within its first megabytes rather than after 768 times its whole size.
 */
function inflateAndWalk(gz, header) {
  const declared = ACCESS_MAX_BYTES * header.accesses + END_MAX_BYTES;
  const byRatio = Math.max(INFLATE_RATIO_MAX * gz.length, INFLATE_FLOOR_BYTES);
  const ceiling = Math.min(declared, byRatio);
  const checker = new BodyChecker(header);
  return new Promise((resolve, reject) => {
    const z = createGunzip({ chunkSize: INFLATE_CHUNK });
    let out = 0; let done = false;
    const stop = (e) => {
      if (done) return;
      done = true;
      z.destroy();
      if (e) reject(e); else resolve();
    };
    const asRefusal = (e) => (e instanceof TraceFormatError ? new TraceRefusal(422, e.message) : e);
    z.on('data', (chunk) => {
      if (done) return;
      out += chunk.length;
      if (out > ceiling || out > INFLATE_RATIO_MAX * z.bytesWritten + INFLATE_FLOOR_BYTES) {
        return stop(new TraceRefusal(422, out > declared
          ? 'the trace is corrupt: its body inflates to more than its accesses can take'
          : `the trace body inflates to more than ${INFLATE_RATIO_MAX} times its compressed size (${gz.length} bytes); a trace hw-lab/run recorded inflates 5 to 600 times, so this body is not one`));
      }
      try { checker.push(chunk); } catch (e) { stop(asRefusal(e)); }
    });
    z.on('end', () => { try { checker.end(); stop(); } catch (e) { stop(asRefusal(e)); } });
    z.on('error', (e) => stop(new TraceRefusal(422, `the trace body is not valid gzip data, or it is cut short (${e.message}): the file is corrupt or truncated`)));
    z.end(gz);
  });
}

/**
 * The whole check of one upload's body (the raw bytes of the request). Resolves with what
 * is stored: { label, header, report, trace } (header and report as JSON text, trace as
 * the base64 text that came); rejects with a TraceRefusal saying what is wrong.
 * @param {Uint8Array} bytes
 */
export async function checkTraceUpload(bytes) {
  checkShape(bytes);
  let text; let b;
  try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytes); } catch { fail(400, 'the body is not valid UTF-8 text'); }
  if (text.trim() === '') fail(400, 'the body is empty; send {"label", "report", "trace"}');
  try { b = JSON.parse(text); } catch (e) { fail(400, `malformed JSON: ${e.message}`); }
  // The same document checks as every other upload (I-JSON, depth, control characters).
  checkJson(text, b, { ascii: bytes.length === text.length });
  text = null;

  if (!b || typeof b !== 'object' || Array.isArray(b)) fail(400, 'send {"label": "...", "report": {...}, "trace": "<the .vmtrace file, base64>"} as application/json');
  const extra = Object.keys(b).filter((k) => !['label', 'report', 'trace'].includes(k));
  if (extra.length) fail(400, `unknown field ${JSON.stringify(extra[0])}; send {"label", "report", "trace"}`);
  if (b.label !== undefined && (typeof b.label !== 'string' || b.label.length > 80)) fail(400, '/label: must be a string of at most 80 characters');
  const given = (b.label ?? '').trim();
  const bad = labelProblem(given);
  if (bad) fail(422, `/label: ${bad}`);
  if (typeof b.trace !== 'string' || !b.trace || b.trace.length % 4 || !B64_RE.test(b.trace)) fail(400, '/trace: must be the trace file in base64');
  const report = b.report;
  if (!report || typeof report !== 'object') fail(400, '/report: is required (the replay report of this trace)');

  const trace = Buffer.from(b.trace, 'base64');
  if (trace.length > TRACE_MAX_BYTES) fail(413, `the trace is ${trace.length} bytes, more than this server keeps (${TRACE_MAX_BYTES} bytes); record a shorter run (hw-lab/run trace --limit N)`);
  let header; let bodyOffset;
  try {
    ({ header, bodyOffset } = readHeader(trace, trace.length));
  } catch (e) { if (e instanceof TraceFormatError) fail(422, e.message); throw e; }
  const v = schemas();
  if (!v.header(header)) fail(422, `the trace header does not match the trace schema: ${problems(v.header.errors)}`);
  // What the class's list shows of the header: a label that reads as what it is, and no
  // control characters in any other text (tab and line breaks aside: arguments hold them).
  if (header.label !== undefined) {
    const p = labelProblem(header.label);
    if (p) fail(422, `the trace header's label: ${p}`);
  }
  try { checkJson(JSON.stringify(header), header); } catch (e) { fail(422, `the trace header: ${e.message}`); }
  if (header.accesses > TRACE_MAX_ACCESSES) fail(413, `the trace holds ${header.accesses} accesses, more than the ${TRACE_MAX_ACCESSES} this server keeps; record a shorter run (hw-lab/run trace --limit N)`);
  if (header.pages > TRACE_MAX_PAGES) fail(413, `the trace touches ${header.pages} distinct pages, more than the ${TRACE_MAX_PAGES} this server keeps; record a shorter run (hw-lab/run trace --limit N)`);

  await inflateAndWalk(trace.subarray(bodyOffset), header);

  // Lists longer than the schema takes are refused before it runs.
  if (Array.isArray(report.modes) && report.modes.length > v.modesMax) fail(422, `/report/modes: has ${report.modes.length} entries; a replay report has at most ${v.modesMax} (one per mode)`);
  if (Array.isArray(report.trace?.args) && report.trace.args.length > v.argsMax) fail(422, `/report/trace/args: has ${report.trace.args.length} entries; at most ${v.argsMax}`);
  if (!v.report(report)) fail(422, `the report does not match the replay report schema: ${problems(v.report.errors)}`);
  const rt = report.trace;
  const same = rt.program === header.program && JSON.stringify(rt.args) === JSON.stringify(header.args) && rt.accesses === header.accesses &&
    rt.pages === header.pages && rt.partial === header.partial && ['load', 'store', 'fetch', 'modify'].every((k) => rt.counts[k] === header.counts[k]);
  if (!same) fail(422, 'the report is not the replay of this trace: its trace figures (program, arguments, accesses, pages, counts, partial) differ from the trace header\'s');
  if (report.modes.some((m) => m.accesses !== header.accesses)) fail(422, 'the report is not the replay of this trace: a mode counts another number of accesses than the trace holds');

  // The label the list shows: the one given, else the header's, else the command line
  // (its tabs and line breaks as spaces).
  const label = given || header.label || cut([header.program, ...header.args].join(' ').replace(/[\t\n\r\u2028\u2029]+/g, ' '), 80);
  return { label, header: JSON.stringify(header), report: JSON.stringify(report), trace: b.trace };
}

// The worker: one job at a time, { body: ArrayBuffer } in, { ok } or { status, message } out.
if (!isMainThread && workerData?.vmemlabTraceCheck) {
  parentPort.on('message', async ({ body }) => {
    try {
      parentPort.postMessage({ ok: await checkTraceUpload(new Uint8Array(body)) });
    } catch (e) {
      if (e?.statusCode >= 400 && e.statusCode < 500) parentPort.postMessage({ status: e.statusCode, message: e.message });
      else parentPort.postMessage({ status: 500, message: 'internal error while checking the trace; the trace was not stored', detail: String(e?.stack ?? e) });
    }
  });
}

/**
 * The main thread's side: check(buf) queues the body for a worker and resolves with what
 * to store, or rejects with a TraceRefusal. At most `size` workers (started when first
 * needed), at most `queueMax` bodies waiting (then 503 with Retry-After). A worker that
 * dies or runs past timeoutMs fails only the upload it was checking and is replaced.
 */
export class TraceCheckPool {
  constructor({ size = POOL_SIZE, queueMax = QUEUE_MAX, timeoutMs = JOB_TIMEOUT_MS } = {}) {
    this.size = size; this.queueMax = queueMax; this.timeoutMs = timeoutMs;
    this.workers = new Set(); this.idle = []; this.queue = []; this.closed = false;
    this.restarts = 0; this.admitted = 0;
  }

  /** Takes a place for an upload whose body is about to be read: false when size +
   * queueMax uploads are in flight already (the caller answers busy() without keeping the
   * body). Each place taken is given back with release(). */
  admit() {
    if (this.closed || this.admitted >= this.size + this.queueMax) return false;
    this.admitted++;
    return true;
  }

  release() { this.admitted = Math.max(0, this.admitted - 1); }

  /** The answer to an upload that finds the checker busy. */
  busy() {
    return this.closed
      ? new TraceRefusal(503, 'the server is shutting down; the trace was not stored', RETRY_AFTER_S)
      : new TraceRefusal(503, `the server is busy checking other traces; the trace was not stored. Send it again in ${RETRY_AFTER_S} s`, RETRY_AFTER_S);
  }

  /** @param {Buffer} buf the request body (its memory is handed to the worker) */
  check(buf) {
    if (this.closed || (this.queue.length >= this.queueMax && this.idle.length === 0)) return Promise.reject(this.busy());
    // Transferred when the Buffer owns its memory whole, else (a small body in Node's
    // shared pool) copied first: the pool must stay with this thread.
    const body = buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength
      ? buf.buffer : buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength);
    return new Promise((resolve, reject) => {
      this.queue.push({ body, resolve, reject });
      this.pump();
    });
  }

  pump() {
    while (this.queue.length) {
      let w = this.idle.pop();
      if (!w) {
        if (this.workers.size >= this.size) return;
        w = this.spawn();
      }
      const job = this.queue.shift();
      w.job = job;
      job.timer = setTimeout(() => {
        w.failure = new TraceRefusal(503, `checking this trace took longer than ${Math.round(this.timeoutMs / 1000)} s (the server is busy); the trace was not stored. Send it again later`, RETRY_AFTER_S);
        w.terminate();
      }, this.timeoutMs);
      w.postMessage({ body: job.body }, [job.body]);
    }
  }

  spawn() {
    const w = new Worker(new URL(import.meta.url), {
      workerData: { vmemlabTraceCheck: true },
      // a heap far above what a check needs (a few tens of MB): past it the worker dies and
      // only its upload fails. A small young generation: the inflated chunks, dead once
      // walked, are freed by frequent scavenges instead of piling up (10 MB less at peak).
      resourceLimits: { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 4 },
    });
    w.unref();
    this.workers.add(w);
    w.on('message', (m) => {
      const job = w.job;
      if (!job) return;
      w.job = null;
      clearTimeout(job.timer);
      if (m.ok) job.resolve(m.ok);
      else job.reject(Object.assign(new TraceRefusal(m.status, m.message), m.detail ? { detail: m.detail } : {})); // detail: for the log only
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
        job.reject(w.failure ?? new TraceRefusal(500, `internal error: the trace checker stopped while checking this trace${w.lastError ? ` (${w.lastError.message})` : ''}; the trace was not stored`));
      }
      if (!this.closed) { this.restarts++; this.pump(); }
    });
    return w;
  }

  /** Stops the workers; uploads still waiting are answered 503. */
  async close() {
    this.closed = true;
    const closing = () => new TraceRefusal(503, 'the server is shutting down; the trace was not stored', RETRY_AFTER_S);
    for (const job of this.queue.splice(0)) job.reject(closing());
    await Promise.all([...this.workers].map((w) => { w.failure = closing(); return w.terminate(); }));
  }
}
