/* Traces shared with a class (web/server/traces.mjs), on SQLite and PostgreSQL: a trace with
 * its replay report is stored, listed, fetched byte for byte and deleted with the receipt or
 * the teacher token; truncated, corrupt, oversized and wrong-version traces, and reports
 * that are not the replay of the trace, are refused with a clear message and store nothing.
 * Traces are written by hw-lab's Python writer (hwlab.tracefile), reports by `vmsim replay`. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { TRACE_MAX_BYTES } from '../../web/server/traces.mjs';
import { root, startPostgres, type Pg } from './helpers';
import { writeTrace as writeTraceIn } from '../../web/src/test/traceFiles';
import { BodyChecker, checkBody, readHeader } from '../../web/src/trace/format.mjs';

const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
let pg: Pg | null = null;
const dirs: string[] = [];
let work: string;

const writeTrace = (name: string, accesses: [number, number][], fields: Record<string, unknown> = {}) => writeTraceIn(work, name, accesses, fields);
const report = (path: string) => JSON.parse(execFileSync(vmsim, ['replay', path, '--quiet', '--format', 'json'], { encoding: 'utf8' }));
const accesses = (n: number, pages = 40): [number, number][] => Array.from({ length: n }, (_, i) => [i % 4, 0x400000 + 4096 * ((i * 7) % pages) + ((i * 40) % 4096)]);

beforeAll(async () => { pg = await startPostgres(); pg.createDb('traces'); work = mkdtempSync(join(tmpdir(), 'vmemlab-traces-')); }, 60_000);
afterAll(() => { pg?.stop(); rmSync(work, { recursive: true, force: true }); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe.each(['sqlite', 'postgres'] as const)('traces shared with a class on %s', (kind) => {
  type App = Awaited<ReturnType<typeof buildServer>>;
  let app: App; let code: string; let teacher: string;
  const post = (payload: unknown, c = code, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    app.inject({ method: 'POST', url: `/api/classes/${c}/traces`, payload: typeof payload === 'string' ? payload : JSON.stringify(payload), headers });
  const stored = async () => (await app.inject({ method: 'GET', url: `/api/classes/${code}/traces` })).json().traces.length as number;

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-tr-')); dirs.push(dataDir);
    app = await buildServer({ databaseUrl: kind === 'postgres' ? pg!.url('traces') : '', dataDir, rateLimit: false, serveApp: false });
    ({ code, teacher_token: teacher } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'traces' } })).json());
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  it('stores a trace with its report, lists it, sends the file back byte for byte, deletes with the receipt and the teacher token', async () => {
    const f = writeTrace(`ok-${kind}.vmtrace`, accesses(3000), { program: '/usr/bin/sort', args: ['-n', 'data.txt'], label: 'my sort' });
    const bytes = readFileSync(f);
    const rep = report(f);
    const a = await post({ report: rep, trace: bytes.toString('base64') });
    expect(a.statusCode, a.body).toBe(201);
    const A = a.json();
    expect(Buffer.from(A.receipt, 'base64url').length).toBe(16);
    const b = await post({ label: 'second <b>copy</b>', report: rep, trace: bytes.toString('base64') });
    expect(b.statusCode).toBe(201);
    const list = (await app.inject({ method: 'GET', url: `/api/classes/${code.toLowerCase()}/traces` })).json();
    expect(list.traces.map((t: { label: string }) => t.label)).toEqual(['my sort', 'second <b>copy</b>']);
    expect(list.traces[0].report).toEqual(rep);
    expect(list.traces[0].header).toMatchObject({ program: '/usr/bin/sort', args: ['-n', 'data.txt'], accesses: 3000 });
    expect(JSON.stringify(list)).not.toContain(A.receipt);
    expect(list.next_cursor).toBe(null);
    // a page at a time: the cursor of the first page gives the second, the last says null
    const page = async (q: string) => (await app.inject({ method: 'GET', url: `/api/classes/${code}/traces${q}` })).json();
    const p1 = await page('?limit=1');
    expect(p1.traces.map((t: { id: string }) => t.id)).toEqual([A.id]);
    const p2 = await page(`?limit=1&cursor=${p1.next_cursor}`);
    expect(p2.traces.map((t: { id: string }) => t.id)).toEqual([b.json().id]);
    expect(p2.next_cursor).toBe(null);
    const file = await app.inject({ method: 'GET', url: `/api/classes/${code}/traces/${A.id}/file` });
    expect(file.statusCode).toBe(200);
    expect(file.headers['content-type']).toBe('application/octet-stream');
    expect(file.rawPayload.equals(bytes)).toBe(true);
    const del = (id: string, token: string) => app.inject({ method: 'DELETE', url: `/api/classes/${code}/traces/${id}`, headers: { authorization: `Bearer ${token}` } });
    expect((await del(A.id, 'A'.repeat(22))).statusCode).toBe(403);
    expect((await del(A.id, A.receipt)).json()).toEqual({ deleted: A.id, by: 'student' });
    expect((await del(A.id, A.receipt)).statusCode).toBe(404);
    expect((await del(b.json().id, teacher)).json()).toEqual({ deleted: b.json().id, by: 'teacher' });
    expect(await stored()).toBe(0);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/traces/${A.id}/file` })).statusCode).toBe(404);
  });

  it('refuses truncated, corrupt, oversized and wrong-version traces, and reports of another trace, storing nothing', async () => {
    const f = writeTrace(`base-${kind}.vmtrace`, accesses(2000));
    const bytes = readFileSync(f);
    const rep = report(f);
    const hlen = bytes.readUInt32LE(12);
    const header = JSON.parse(bytes.subarray(16, 16 + hlen).toString());
    const pack = (h: object, body: Buffer, version = 1) => {
      const text = Buffer.from(JSON.stringify(h));
      const pre = Buffer.alloc(16);
      Buffer.from([0x89, 0x56, 0x4d, 0x54, 0x52, 0x43, 0x0d, 0x0a]).copy(pre);
      pre.writeUInt16LE(version, 8); pre.writeUInt32LE(text.length, 12);
      return Buffer.concat([pre, text, body]);
    };
    const body = bytes.subarray(16 + hlen);
    const cases: [string, Buffer, object, number, string][] = [
      ['truncated file', bytes.subarray(0, bytes.length - 20), rep, 422, 'the trace is truncated: its header announces'],
      ['truncated body', pack({ ...header, body: { ...header.body, bytes: body.length - 20 } }, body.subarray(0, body.length - 20)), rep, 422, 'cut short'],
      ['corrupt body', (() => { const c = Buffer.from(bytes); c[16 + hlen + 30] ^= 0xff; return c; })(), rep, 422, 'corrupt'],
      ['miscounted body', (() => { const g = gzipSync(Buffer.from([0, 31 << 3, 2])); return pack({ ...header, accesses: 1, pages: 1, counts: { load: 1, store: 0, fetch: 0, modify: 0 }, body: { compression: 'gzip', bytes: g.length } }, g); })(), rep, 422, 'its end record counts 2 accesses where the body holds 1'],
      ['wrong version (prefix)', (() => { const c = Buffer.from(bytes); c.writeUInt16LE(3, 8); return c; })(), rep, 422, 'this trace is format version 3; this vmemlab reads version 1'],
      ['wrong version (header)', pack({ ...header, version: 2 }, body), rep, 422, 'format version 2'],
      ['not a trace', Buffer.from('{"format": "vmemlab-hw-lab-result"}'), rep, 422, 'this is a JSON file, not a vmemlab trace'],
      ['header off schema', pack({ ...header, extra: 1 }, body), rep, 422, 'unknown field "extra"'],
      ['too many accesses', pack({ ...header, accesses: 2_100_000_000, counts: { ...header.counts, load: header.counts.load + 2_100_000_000 - header.accesses } }, body), rep, 413, 'more than the 2000000000 this server keeps'],
      ['too many bytes', Buffer.concat([bytes, Buffer.alloc(TRACE_MAX_BYTES)]), rep, 413, 'more than this server keeps'],
      ['a report of another trace', bytes, { ...rep, trace: { ...rep.trace, accesses: rep.trace.accesses + 1 } }, 422, 'the report is not the replay of this trace'],
      ['a report off schema', bytes, { ...rep, modes: [] }, 422, 'the report does not match the replay report schema'],
    ];
    for (const [what, data, r, status, needle] of cases) {
      const res = await post({ report: r, trace: data.toString('base64') });
      expect(res.statusCode, `${what}: ${res.body}`).toBe(status);
      expect(res.json().message, what).toContain(needle);
    }
    // a body that inflates beyond what its accesses can take (a zip bomb) is cut off
    const bomb = gzipSync(Buffer.alloc(50_000_000));
    const r = await post({ report: rep, trace: pack({ ...header, body: { compression: 'gzip', bytes: bomb.length } }, bomb).toString('base64') });
    expect(r.statusCode).toBe(422);
    expect(r.json().message).toContain('inflates to more than its accesses can take');
    expect(await stored()).toBe(0);
  });

  it('says what is wrong with the request itself', async () => {
    const f = writeTrace(`req-${kind}.vmtrace`, accesses(100));
    const trace = readFileSync(f).toString('base64');
    const rep = report(f);
    const cases: [unknown, number, string, string?, Record<string, string>?][] = [
      [{ report: rep, trace: 'not base64!' }, 400, '/trace: must be the trace file in base64'],
      [{ trace }, 400, '/report: is required'],
      [{ report: rep, trace, extra: 1 }, 400, 'unknown field "extra"'],
      [{ report: rep, trace, label: 'x'.repeat(81) }, 400, '/label: must be a string of at most 80 characters'],
      ['{not json', 400, 'malformed JSON'],
      [{ report: rep, trace }, 404, 'there is no class with the code "NOPE-NOPE"', 'NOPE-NOPE'],
      [{ report: rep, trace }, 415, 'send Content-Type: application/json', undefined, { 'content-type': 'text/plain' }],
      // the same document checks as a result upload (limits.mjs)
      [{ report: rep, trace, label: 'a\u202ebc' }, 400, '/label: contains the control character U+202E'],
      [`{"report": ${JSON.stringify(rep)}, "trace": "${trace}", "label": "a", "label": "b"}`, 400, 'appears twice'],
    ];
    for (const [payload, status, needle, c, headers] of cases) {
      const res = await post(payload, c ?? code, headers);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json().message).toContain(needle);
    }
    const big = await app.inject({ method: 'POST', url: `/api/classes/${code}/traces`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ report: rep, trace: 'A'.repeat(Math.ceil(TRACE_MAX_BYTES * 4 / 3) + 2 ** 20) }) });
    expect(big.statusCode).toBe(413);
    expect(big.json().message).toContain('a trace may be at most');
    expect(await stored()).toBe(0);
  });

  it('answers 503 with Retry-After when the database is away or full, and stores nothing', async () => {
    const f = writeTrace(`away-${kind}.vmtrace`, accesses(100));
    const body = { report: report(f), trace: readFileSync(f).toString('base64') };
    const full = Object.assign(new Error('database or disk is full'), { code: kind === 'sqlite' ? 'SQLITE_FULL' : '53100' });
    const store = app.store as unknown as { writer?: { run: (...a: unknown[]) => Promise<unknown> }; db: { insertInto: unknown } };
    const target = store.writer ?? store.db;
    const key = store.writer ? 'run' : 'insertInto';
    const saved = (target as Record<string, unknown>)[key];
    (target as Record<string, unknown>)[key] = () => { throw full; };
    try {
      const res = await post(body);
      expect(res.statusCode, res.body).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json().message).toMatch(/storage is full; nothing was stored/);
    } finally { (target as Record<string, unknown>)[key] = saved; }
    expect(await stored()).toBe(0);
    expect((await post(body)).statusCode).toBe(201);
  });
});

describe('format.mjs\'s BodyChecker (the server walks a body as it inflates)', () => {
  /** The answer (the counts, or the error's message) for a body fed in chunks of `size`. */
  const walk = (raw: Uint8Array, header: unknown, size: number) => {
    try {
      const c = new BodyChecker(header);
      for (let i = 0; i < raw.length; i += size) c.push(raw.subarray(i, i + size));
      return c.end();
    } catch (e) { return (e as Error).message; }
  };
  it('gives the same answer for a body in chunks of any size as for the whole body (records straddle chunks), valid or not', () => {
    // pages far apart (page deltas of several bytes) and offsets that need the escape
    const acc: [number, number][] = Array.from({ length: 4000 }, (_, i) => [i % 4, (i % 3 === 0 ? 0x7f0000000000 : 0x400000) + 4096 * ((i * 7919) % 997) + ((i * 1237) % 4096)]);
    const file = readFileSync(writeTrace('chunks.vmtrace', acc));
    const { header, bodyOffset } = readHeader(file, file.length);
    const raw = gunzipSync(file.subarray(bodyOffset));
    const bodies: [string, Uint8Array, unknown][] = [
      ['valid', raw, header],
      ['cut inside a record', raw.subarray(0, raw.length - 7), header],
      ['cut before the end record', raw.subarray(0, raw.length - 3), header],
      ['data after the end record', Buffer.concat([raw, Buffer.from([0])]), header],
      ['more pages than announced', raw, { ...header, pages: 10 }],
      ['fewer accesses announced', raw, { ...header, accesses: 100 }],
    ];
    for (const [what, body, h] of bodies) {
      const whole = (() => { try { return checkBody(body, h); } catch (e) { return (e as Error).message; } })();
      if (what === 'valid') expect(whole).toMatchObject({ accesses: 4000, pages: header.pages });
      else expect(typeof whole, what).toBe('string');
      for (const size of [1, 2, 3, 5, 7, 20, 21, 22, 64, 4096, 65536]) expect(walk(body, h, size), `${what}, chunks of ${size}`).toEqual(whole);
    }
  });
});
