/* Property-based HTTP fuzzing of every route of the class server (fast-check), with
 * documents shaped near each limit: lists one item short of, at and past their bound and
 * past the document cap; texts around every maxLength; objects with many fields; nesting
 * around 32; bodies around 256 KiB; headers around their lengths; traces with reports of
 * many modes, labels around 80 characters and damaged bytes; pages around 500. Whatever
 * the request, the answer is not a 5xx (the store is never away here), comes within 1 s,
 * an error is JSON with a message, and the server's peak memory stays under 300 MB.
 *
 * The server is web/server/main.mjs in a child process, as `make start` runs it (limits
 * off, so every request reaches its route). `make test` runs a fixed seed; `make fuzz`
 * runs many more with a fresh seed it prints (FUZZ_SEED and FUZZ_RUNS set either). */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixture, root } from './helpers';
import { writeTrace } from '../../web/src/test/traceFiles';
import { BODY_MAX } from '../../web/server/trace-check.mjs';

const SEED = Number(process.env.FUZZ_SEED ?? 20261126);
const RUNS = Number(process.env.FUZZ_RUNS ?? 250);
const BODY_LIMIT = 256 * 1024;

let child: ChildProcess; let base: string; let work: string;
let code: string; let teacher: string; let resultId = 'none'; let traceId = 'none';
let trace: Buffer; let report: Record<string, unknown>; let student = 'none'; let studentId = 'none';
let other: { code: string; teacher_token: string }; // a second class, closed and reopened at random

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'vmemlab-prop-'));
  child = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', VMEMLAB_DATA_DIR: join(work, 'data'), DATABASE_URL: '', VMEMLAB_RATE_MAX: '0', VMEMLAB_UPLOAD_RATE: '0', VMEMLAB_CREATE_RATE: '0', VMEMLAB_WRITE_RATE: '0', VMEMLAB_JOIN_MAX: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 20 s:\n${out}`)), 20_000);
    const on = (b: Buffer) => { out += b; const m = /class server at (http:\/\/[^\s/]+)\//.exec(out); if (m) { clearTimeout(timer); resolve(m[1]); } };
    child.stdout!.on('data', on); child.stderr!.on('data', on);
    child.once('exit', (c) => { clearTimeout(timer); reject(new Error(`exited ${c}:\n${out}`)); });
  });
  ({ code, teacher_token: teacher } = await (await fetch(`${base}/api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"fuzz"}' })).json());
  const f = writeTrace(work, 'seed.vmtrace', Array.from({ length: 2000 }, (_, i) => [i % 4, 0x400000 + 4096 * ((i * 7) % 30) + ((i * 40) % 4096)]), { label: 'seed' });
  trace = readFileSync(f);
  report = JSON.parse(execFileSync(join(root, 'wasm-core', 'build', 'vmsim'), ['replay', f, '--quiet', '--format', 'json'], { encoding: 'utf8' }));
  const up = await fetch(`${base}/api/results`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-vmemlab-class': code }, body: JSON.stringify(fixture) });
  resultId = (await up.json()).id;
  const tr = await fetch(`${base}/api/classes/${code}/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ report, trace: trace.toString('base64') }) });
  traceId = (await tr.json()).id;
  other = await (await fetch(`${base}/api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"fuzz, closed at times"}' })).json();
  ({ receipt: student, student_id: studentId } = await (await fetch(`${base}/api/classes/${code}/students`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"fuzz student"}' })).json());
}, 60_000);
afterAll(() => { if (child && child.exitCode === null) child.kill('SIGKILL'); if (work) rmSync(work, { recursive: true, force: true }); });

// ---- values near the limits ----
/** Lengths around each bound a schema or the server sets (and a few far past them). */
const BOUNDS = [0, 1, 5, 8, 32, 60, 64, 80, 128, 200, 256, 400, 500, 512, 1024, 2000, 4000, 4096, 16384];
const nearLength = fc.oneof(fc.constantFrom(...BOUNDS).chain((b) => fc.integer({ min: Math.max(0, b - 1), max: b + 1 })), fc.constantFrom(20_000, 60_000, 80_000));
const CHARS = ['a', 'é', '字', '😀', '\u202e', '\n', '\u2028', '\u0000', '"', '\\', '=', ' '];
const text = (n: number, c: string) => c.repeat(Math.ceil(n / c.length)).slice(0, n);
const nearText = fc.tuple(nearLength, fc.constantFrom(...CHARS)).map(([n, c]) => text(Math.min(n, 300_000), c));
const item = fc.constantFrom<unknown>({}, 1, 'x', null, { x: 1 }, [], structuredClone(fixture.benchmarks[0]));
// a list of whole benchmarks stops at 300 (some 400 KB): past that no body fits any limit
const nearList = fc.tuple(nearLength, item).map(([n, it]) => Array.from({ length: typeof it === 'object' && it !== null && 'cases' in it ? Math.min(n, 300) : n }, () => structuredClone(it)));
const nearObject = nearLength.map((n) => Object.fromEntries(Array.from({ length: Math.min(n, 30_000) }, (_, i) => [`k${i}`, i])));
const nearNesting = fc.integer({ min: 30, max: 34 }).map((d) => { let v: unknown = 1; for (let i = 0; i < d; i++) v = i % 2 ? [v] : { a: v }; return v; });
const oddValue = fc.oneof(nearText, nearList, nearObject, nearNesting, fc.constantFrom<unknown>(-1, 1e308, 0.5, true, null, '', 2 ** 53 + 2));

type Path = (string | number)[];
function setAt(doc: unknown, path: Path, v: unknown): unknown {
  const copy = structuredClone(doc) as Record<string | number, unknown>;
  let o = copy as Record<string | number, unknown>;
  for (const k of path.slice(0, -1)) { if (o[k] === null || typeof o[k] !== 'object') o[k] = {}; o = o[k] as Record<string | number, unknown>; }
  o[path[path.length - 1]] = v;
  return copy;
}
const RESULT_PATHS: Path[] = [['benchmarks'], ['benchmarks', 0, 'cases'], ['benchmarks', 0, 'notes'], ['benchmarks', 0, 'teaches'], ['benchmarks', 0, 'cases', 0, 'params'],
  ['benchmarks', 0, 'cases', 0, 'metrics'], ['benchmarks', 0, 'cases', 0, 'facts'], ['probe', 'cpu', 'model_name'], ['probe', 'cpu_features', 'vmx_flags'], ['probe', 'virtualization', 'evidence'],
  ['probe', 'virtualization', 'dmi'], ['probe', 'kvm', 'modules'], ['probe', 'kernel', 'release'], ['tool', 'version'], ['probe', 'extra'], ['benchmarks', 0, 'cases', 0, 'kvm_stats', 'vcpu']];
const REPORT_PATHS: Path[] = [['modes'], ['trace', 'args'], ['trace', 'program'], ['trace', 'partial_reason'], ['machine'], ['modes', 0, 'exits_by_kind'], ['cost_model']];

/** A body: the document as JSON, sometimes padded (a trailing white space run) up to about the body limit. */
const asBody = (doc: unknown) => fc.constantFrom(0, 1, 2).map((pad) => {
  const s = JSON.stringify(doc) ?? 'null';
  if (pad === 0 || s.length >= BODY_LIMIT) return s;
  return s + ' '.repeat(BODY_LIMIT - s.length + (pad === 1 ? -1 : 1));
});

/** limit: the route's body limit; a client still sending past it may see the connection
 * closed under its feet after the 413 (EPIPE), which is how an oversized body ends. */
interface Req { method: string; path: string; headers: Record<string, string>; body?: string; what: string; limit?: number;
  /** made just before it is sent (a class of its own to delete) */
  prepare?: () => Promise<void>; stream?: boolean }
const TRACE_BODY_LIMIT = BODY_MAX;   // the trace route's own (trace-check.mjs)
const json = { 'content-type': 'application/json' };
const header = (n: number) => text(Math.min(n, 9000), 'A');

const createClass = fc.tuple(fc.oneof(nearText, oddValue), fc.boolean()).chain(([name, asName]) => asBody(asName ? { name } : name))
  .map((body): Req => ({ method: 'POST', path: '/api/classes', headers: json, body, what: 'create class' }));
const uploadResult = fc.tuple(fc.constantFrom(...RESULT_PATHS), oddValue, nearLength, fc.constantFrom('name', 'key', 'none'))
  .chain(([path, v, n, h]) => asBody(setAt(fixture, path, v)).map((body): Req => {
    const headers: Record<string, string> = { ...json, 'x-vmemlab-class': code };
    if (h === 'name') headers['x-vmemlab-name'] = encodeURIComponent(text(Math.min(n, 2000), '字'));
    if (h === 'key') headers['idempotency-key'] = header(n);
    return { method: 'POST', path: '/api/results', headers, body, what: `upload ${path.join('/')}` };
  }));
const uploadTrace = fc.tuple(fc.constantFrom(...REPORT_PATHS), oddValue, fc.oneof(nearText, fc.constant(undefined)), fc.constantFrom('whole', 'cut', 'flip', 'junk'), fc.integer({ min: 0, max: 1 << 20 }))
  .map(([path, v, label, damage, at]): Req => {
    let bytes = Buffer.from(trace);
    if (damage === 'cut') bytes = bytes.subarray(0, at % bytes.length);
    if (damage === 'flip') { bytes[at % bytes.length] ^= 0xff; }
    if (damage === 'junk') bytes = Buffer.alloc(Math.min(at, 300_000), 0);
    const doc: Record<string, unknown> = { report: setAt(report, path, v), trace: bytes.toString('base64') };
    if (label !== undefined) doc.label = label;
    return { method: 'POST', path: `/api/classes/${code}/traces`, headers: json, body: JSON.stringify(doc), what: `trace ${damage} ${path.join('/')}`, limit: TRACE_BODY_LIMIT };
  });
const page = fc.tuple(fc.constantFrom('results', 'traces'), fc.oneof(fc.constant(undefined), fc.integer({ min: -1, max: 502 }).map(String), nearText.map((s) => s.slice(0, 600))), fc.oneof(fc.constant(undefined), fc.string({ maxLength: 130 }), nearText.map((s) => s.slice(0, 600))))
  .map(([list, limit, cursor]): Req => {
    const q = new URLSearchParams();
    if (limit !== undefined) q.set('limit', limit);
    if (cursor !== undefined) q.set('cursor', cursor);
    return { method: 'GET', path: `/api/classes/${code}/${list}?${q}`, headers: {}, what: `list ${list}` };
  });
const token = fc.constantFrom(() => teacher, () => 'A'.repeat(22), () => 'x', () => header(5000));
const reads = fc.tuple(fc.constantFrom('class', 'result', 'delete-result', 'csv', 'trace-file', 'delete-trace', 'health', 'openapi'), token, fc.boolean())
  .map(([what, tok, withTok]): Req => {
    const headers: Record<string, string> = withTok ? { authorization: `Bearer ${tok()}` } : {};
    const paths: Record<string, [string, string]> = {
      class: ['GET', `/api/classes/${code}`], result: ['GET', `/api/classes/${code}/results/${resultId}`], 'delete-result': ['DELETE', `/api/classes/${code}/results/nope${resultId.slice(4)}`],
      csv: ['GET', `/api/classes/${code}/export.csv?bom=${withTok ? 1 : 0}`], 'trace-file': ['GET', `/api/classes/${code}/traces/${traceId}/file`], 'delete-trace': ['DELETE', `/api/classes/${code}/traces/nope${traceId.slice(4)}`],
      health: ['GET', '/api/health'], openapi: ['GET', '/api/openapi.json'],
    };
    const [method, path] = paths[what];
    return { method, path, headers, what };
  });
// Students and their progress (progress.mjs), the teacher's reads of it (dashboard.mjs) and
// the class's life (close and reopen; never delete, which would end the run's class).
const RECORD = { id: 'AAAAAAAAAAAAAAAAAAAAAA', type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs', seed: 7, answer: '24', tries: 1, hint: false, shown: false, at: '2026-01-01T00:00:00Z' };
const RECORD_PATHS: Path[] = [['id'], ['type'], ['lesson'], ['exercise'], ['kind'], ['seed'], ['answer'], ['tries'], ['at'], ['extra']];
const joinStudent = fc.oneof(nearText, oddValue).chain((name) => asBody({ name }))
  .map((body): Req => ({ method: 'POST', path: `/api/classes/${code}/students`, headers: json, body, what: 'join' }));
const sendProgress = fc.tuple(fc.constantFrom(...RECORD_PATHS), oddValue, nearLength, fc.boolean())
  .chain(([path, v, n, withReceipt]) => asBody({ records: Array.from({ length: Math.min(n, 2000) || 1 }, (_, i) => (i === 0 ? setAt(RECORD, path, v) : { ...RECORD, id: `r${String(i).padStart(21, '0')}` })) })
    .map((body): Req => ({ method: 'POST', path: `/api/classes/${code}/progress`, headers: { ...json, ...(withReceipt ? { authorization: `Bearer ${student}` } : {}) }, body, what: `progress ${path.join('/')}` })));
const teacherReads = fc.tuple(fc.constantFrom('progress', 'progress/students', 'progress.csv', 'progress/events', 'close', 'reopen'), fc.boolean(), fc.oneof(fc.constant(undefined), fc.integer({ min: -1, max: 502 }).map(String)))
  .map(([what, withTok, limit]): Req => {
    const life = what === 'close' || what === 'reopen';
    const headers: Record<string, string> = withTok ? { authorization: `Bearer ${life ? other.teacher_token : teacher}` } : {};
    // the event stream is only opened with Accept: text/event-stream; without it the answer is at once
    return { method: life ? 'POST' : 'GET', path: `/api/classes/${life ? other.code : code}/${what}${limit !== undefined && !life ? `?limit=${limit}` : ''}`, headers, what };
  });
// The event stream opened for real (Accept: text/event-stream) with odd positions: its
// headers must come within 1 s; it is closed after its first chunk.
const cursorish = fc.oneof(fc.constant(undefined), fc.string({ maxLength: 130 }), nearText.map((s) => s.slice(0, 600)),
  fc.tuple(fc.date({ min: new Date(0), max: new Date(4e12) }), fc.string({ maxLength: 40 })).map(([d, id]) => Buffer.from(`${Number.isNaN(d.getTime()) ? '' : d.toISOString()}\n${id}`).toString('base64url')));
const openEvents = fc.tuple(cursorish, fc.boolean(), fc.boolean())
  .map(([after, withTok, lastEventId]): Req => {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...(withTok ? { authorization: `Bearer ${teacher}` } : {}) };
    if (lastEventId && after !== undefined && /^[\x20-\x7e]*$/.test(after)) headers['last-event-id'] = after.slice(0, 200);
    return { method: 'GET', path: `/api/classes/${code}/progress/events${after !== undefined && !lastEventId ? `?after=${encodeURIComponent(after)}` : ''}`, headers, what: 'event stream', stream: true };
  });
// The teacher's hand: rename the run's student (odd names), remove students that are not
// there, with the teacher token or another.
const roster = fc.tuple(fc.constantFrom('PATCH', 'DELETE'), fc.oneof(fc.constant('real'), nearText.map((s) => s.slice(0, 80))), fc.oneof(nearText, oddValue), token, fc.boolean())
  .chain(([method, id, name, tok, withTok]) => asBody({ name }).map((body): Req => {
    const target = id === 'real' ? (method === 'DELETE' ? `gone${studentId.slice(4)}` : studentId) : encodeURIComponent(id);
    return { method, path: `/api/classes/${code}/students/${target || 'x'}`, headers: { ...(method === 'PATCH' ? json : {}), ...(withTok ? { authorization: `Bearer ${tok()}` } : {}) }, body: method === 'PATCH' ? body : undefined, what: `roster ${method}` };
  }));
// Deletes: a class of its own with a few records, deleted with its token, another or none;
// a student leaving with odd receipts.
const deletes = fc.tuple(fc.constantFrom('class', 'me'), fc.constantFrom('teacher', 'other', 'none', 'junk'), fc.integer({ min: 0, max: 60 }))
  .map(([what, who, records]): Req => {
    const req: Req = { method: 'DELETE', path: '', headers: {}, what: `delete ${what} (${who}, ${records} records)` };
    req.prepare = async () => {
      const c = await (await fetch(`${base}/api/classes`, { method: 'POST', headers: json, body: '{"name":"fuzz, to delete"}' })).json();
      const s = await (await fetch(`${base}/api/classes/${c.code}/students`, { method: 'POST', headers: json, body: '{"name":"doomed"}' })).json();
      if (records) {
        await fetch(`${base}/api/classes/${c.code}/progress`, { method: 'POST', headers: { ...json, authorization: `Bearer ${s.receipt}` },
          body: JSON.stringify({ records: Array.from({ length: records }, (_, i) => ({ ...RECORD, id: `d${String(i).padStart(21, '0')}` })) }) });
      }
      const tok = who === 'teacher' ? (what === 'class' ? c.teacher_token : s.receipt) : who === 'other' ? (what === 'class' ? s.receipt : c.teacher_token) : who === 'junk' ? 'x' : null;
      req.path = what === 'class' ? `/api/classes/${c.code}` : `/api/classes/${c.code}/students/me`;
      if (tok) req.headers.authorization = `Bearer ${tok}`;
    };
    return req;
  });
const anyRequest = fc.oneof(createClass, uploadResult, uploadTrace, page, reads, joinStudent, sendProgress, teacherReads, openEvents, roster, deletes);

describe(`property-based HTTP fuzzing (fast-check, seed ${SEED}, ${RUNS} runs)`, () => {
  it('every answer is a non-5xx within 1 s, errors are JSON with a message, and the server stays under 300 MB', async () => {
    const statuses: Record<string, number> = {};
    let slowest = 0;
    const run = await fc.check(fc.asyncProperty(anyRequest, async (req) => {
      await req.prepare?.();
      const t0 = performance.now();
      let r: Response;
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(), 5000);
      try {
        r = await fetch(base + req.path, { method: req.method, headers: req.headers, body: req.body, signal: ac.signal });
      } catch (e) {
        const over = (req.body?.length ?? 0) > (req.limit ?? BODY_LIMIT);
        const closed = /EPIPE|ECONNRESET|other side closed/.test(String((e as Error & { cause?: Error }).cause?.message ?? (e as Error).message));
        expect(over && closed, `${req.method} ${req.path.slice(0, 80)} (${req.what}, ${req.body?.length ?? 0} bytes): ${(e as Error & { cause?: Error }).cause?.message ?? e}`).toBe(true);
        statuses.closed = (statuses.closed ?? 0) + 1;
        return;
      }
      let body: string;
      if (req.stream && r.status === 200) {
        // an open stream: its first chunk (the ': live' comment) must come within the second
        const first = await r.body!.getReader().read();
        body = new TextDecoder().decode(first.value ?? new Uint8Array());
        ac.abort();
      } else body = await r.text();
      clearTimeout(timer);
      const ms = performance.now() - t0;
      slowest = Math.max(slowest, ms);
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
      const where = `${req.method} ${req.path.slice(0, 80)} (${req.what}, ${req.body?.length ?? 0} bytes) -> ${r.status} in ${ms.toFixed(0)} ms: ${body.slice(0, 200)}`;
      expect(r.status, where).toBeLessThan(500);
      expect(ms, where).toBeLessThan(1000);
      if (r.status >= 400) expect(typeof JSON.parse(body).message, where).toBe('string');
    }), { seed: SEED, numRuns: RUNS, endOnFailure: true });
    // fast-check's own report prints the whole failing request (megabytes); this one says
    // what failed and how to run it again
    if (run.failed) throw new Error(`failed after ${run.numRuns} requests (FUZZ_SEED=${run.seed}, path ${run.counterexamplePath}): ${String((run.errorInstance as Error)?.message ?? run.errorInstance).slice(0, 3000)}`);
    const peak = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
    console.log(`fuzz: ${RUNS} requests, statuses ${JSON.stringify(statuses)}, slowest ${slowest.toFixed(0)} ms, server peak RSS ${peak.toFixed(0)} MiB`);
    expect(peak).toBeLessThan(300);
    // the answers were not all the same refusal: valid requests went through as well
    expect(Object.keys(statuses).length).toBeGreaterThanOrEqual(4);
    expect((await fetch(`${base}/api/health`)).status).toBe(200);
  }, Math.max(600_000, RUNS * 100));
});
