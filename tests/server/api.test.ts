/* The class server's API against SQLite and against a real PostgreSQL: create a class,
 * upload, list, export, delete; every bad input gets the right status and a clear JSON
 * message and stores nothing, the same on both stores; repeated uploads with one
 * Idempotency-Key are stored once; students' display names reach only the teacher.
 * Requests go through Fastify's inject (no sockets). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, hashToken } from '../../web/server/app.mjs';
import { METRICS } from '../../web/src/results/extract.mjs';
import { resultWith, startPostgres, type Pg } from './helpers';

type App = Awaited<ReturnType<typeof buildServer>>;
let pg: Pg | null = null;
const dirs: string[] = [];

beforeAll(async () => { pg = await startPostgres(); pg.createDb('api'); }, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

describe.each(['sqlite', 'postgres'] as const)('class server API on %s', (kind) => {
  let app: App;
  let code: string; let teacher: string;
  const json = { 'content-type': 'application/json' };
  const up = (body: string, headers: Record<string, string> = {}) => app.inject({ method: 'POST', url: '/api/results', payload: body, headers: { ...json, 'x-vmemlab-class': code, ...headers } });
  const count = () => app.store.totalResults();

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-api-')); dirs.push(dataDir);
    app = await buildServer({ databaseUrl: kind === 'postgres' ? pg!.url('api') : '', dataDir, rateLimit: false, serveApp: false });
    const r = await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'CS 101 <b>lab</b>' } });
    expect(r.statusCode).toBe(201);
    ({ code, teacher_token: teacher } = r.json());
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  it('creates a class with a join code, a 128-bit teacher token stored only as a hash', async () => {
    expect(code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}$/);
    expect(Buffer.from(teacher, 'base64url').length).toBe(16);
    const cls = await app.store.getClass(code);
    expect(cls!.teacher_hash).toBe(hashToken(teacher));
    expect(JSON.stringify(cls)).not.toContain(teacher);
    const r = await app.inject({ method: 'GET', url: `/api/classes/${code.toLowerCase()}` });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ code, name: 'CS 101 <b>lab</b>', uploads: 0 });
  });

  it('uploads, lists, fetches, exports and deletes (receipt and teacher)', async () => {
    const body = resultWith((r) => { r.probe.cpu.model_name = '=HYPERLINK("http://evil")'; });
    const a = await up(body);
    expect(a.statusCode, a.body).toBe(201);
    const A = a.json();
    expect(A.id).toBeTruthy(); expect(Buffer.from(A.receipt, 'base64url').length).toBe(16);
    expect(A.url).toContain(`class=${code}`);
    const b = await up(resultWith((r) => { r.probe.kvm.tdp = 'N'; r.probe.cpu.vendor = 'GenuineIntel'; r.probe.virtualization.in_vm = false; }));
    expect(b.statusCode).toBe(201);
    const B = b.json();

    const list = (await app.inject({ method: 'GET', url: `/api/classes/${code}/results` })).json();
    expect(list.results.map((r: { id: string }) => r.id).sort()).toEqual([A.id, B.id].sort());
    expect(JSON.stringify(list)).not.toContain(A.receipt);
    const rb = list.results.find((r: { id: string }) => r.id === B.id);
    expect(rb).toMatchObject({ cpu_model: 'AMD EPYC', hypervisor: 'none (bare metal)', tdp: 'EPT off' });
    expect(rb.metrics.cpuid_exit_cycles).toBeGreaterThan(0);

    // the file as uploaded, byte for byte: for the teacher and the uploader, no one else
    for (const tok of [teacher, A.receipt]) {
      const one = await app.inject({ method: 'GET', url: `/api/classes/${code}/results/${A.id}`, headers: { authorization: `Bearer ${tok}` } });
      expect(one.body).toBe(body);
    }
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/results/${A.id}` })).statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/results/${A.id}`, headers: { authorization: `Bearer ${B.receipt}` } })).statusCode).toBe(403);

    const csv = await app.inject({ method: 'GET', url: `/api/classes/${code}/export.csv`, headers: { authorization: `Bearer ${teacher}` } });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toContain('text/csv');
    expect(csv.body).toContain(`"'=HYPERLINK(""http://evil"")"`);
    expect(csv.body).not.toMatch(/(^|,)=HYPERLINK/m);
    expect(csv.body.trim().split('\r\n')).toHaveLength(3);

    // wrong tokens: nothing is deleted
    const wrong = await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${A.id}`, headers: { authorization: `Bearer ${B.receipt}` } });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().message).toMatch(/neither the teacher token/);
    const none = await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${A.id}` });
    expect(none.statusCode).toBe(401);
    const csvNo = await app.inject({ method: 'GET', url: `/api/classes/${code}/export.csv`, headers: { authorization: `Bearer ${A.receipt}` } });
    expect(csvNo.statusCode).toBe(403);
    expect(await count()).toBe(2);

    const delA = await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${A.id}`, headers: { authorization: `Bearer ${A.receipt}` } });
    expect(delA.statusCode).toBe(200); expect(delA.json()).toEqual({ deleted: A.id, by: 'student' });
    const again = await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${A.id}`, headers: { authorization: `Bearer ${A.receipt}` } });
    expect(again.statusCode).toBe(404);
    const delB = await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${B.id}`, headers: { authorization: `Bearer ${teacher}` } });
    expect(delB.json()).toEqual({ deleted: B.id, by: 'teacher' });
    expect(await count()).toBe(0);
  });

  const bad: [string, () => Promise<{ statusCode: number; json: () => { message: string; statusCode: number } }>, number, RegExp][] = [
    ['malformed JSON', () => up('{"format": "vmemlab-hw-lab-result",'), 400, /malformed JSON/],
    ['empty body', () => up(''), 400, /empty/],
    ['not UTF-8', () => app.inject({ method: 'POST', url: '/api/results', payload: Buffer.from([0x7b, 0xff, 0x7d]), headers: { ...json, 'x-vmemlab-class': code } }), 400, /UTF-8/],
    ['a JSON array', () => up('[1,2]'), 422, /JSON object/],
    ['wrong schema version', () => up(resultWith((r) => { r.schema_version = 2; })), 422, /schema_version: 2 is not supported/],
    ['not a hw-lab result', () => up('{"hello": 1}'), 422, /\/format/],
    ['a schema violation names the field', () => up(resultWith((r) => { r.timer.freq_hz = -1; delete r.probe.cpu.model_name; })), 422, /\/timer\/freq_hz: must be > 0.*|\/probe\/cpu\/model_name: is required/],
    ['an unknown top-level field', () => up(resultWith((r) => { (r as Record<string, unknown>).__proto__x = 1; })), 422, /__proto__x: is not a field/],
    ['oversize body', () => up(resultWith((r) => { r.benchmarks[0].notes = ['x'.repeat(300_000)]; })), 413, /larger than 256 KiB/],
    ['wrong join code', () => up(resultWith(), { 'x-vmemlab-class': 'NOPE-NOPE' }), 404, /no class with the code "NOPE-NOPE"/],
    ['malformed join code', () => up(resultWith(), { 'x-vmemlab-class': '../../etc' }), 400, /class code is 2-64/],
    ['missing class header', () => app.inject({ method: 'POST', url: '/api/results', payload: resultWith(), headers: json }), 400, /X-Vmemlab-Class header/],
    ['wrong content type', () => app.inject({ method: 'POST', url: '/api/results', payload: resultWith(), headers: { 'content-type': 'text/plain', 'x-vmemlab-class': code } }), 415, /application\/json/],
    ['unknown API route', () => app.inject({ method: 'GET', url: '/api/nope' }), 404, /no API route/],
    ['NUL in the CPU model', () => up(resultWith((r) => { r.probe.cpu.model_name = 'AMD\u0000EPYC'; })), 400, /^\/probe\/cpu\/model_name: contains the control character U\+0000/],
    ['a bidi override in the hypervisor', () => up(resultWith((r) => { r.probe.virtualization.hypervisor = 'kvm\u202e'; })), 400, /^\/probe\/virtualization\/hypervisor: contains the control character U\+202E/],
    ['NUL in a class name', () => app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'CS\u0000101' } }), 400, /^\/name: contains the control character U\+0000/],
    ['a line break in a class name', () => app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'CS\n101' } }), 400, /^\/name: contains the control character U\+000A/],
    ['a timer frequency of 1e309', () => up(resultWith().replace(/"freq_hz":[0-9.e+]+/, '"freq_hz":1e309')), 400, /^\/timer\/freq_hz: is a number beyond what a 64-bit float holds/],
    ['params nested 40 deep', () => up(resultWith((r) => { let v: Record<string, unknown> = {}; for (let i = 0; i < 40; i++) v = { a: v }; r.benchmarks[0].cases[0].params = v as never; })), 400, /^\/benchmarks\/0\/cases\/0\/params(\/a){27}: is nested more than 32 levels deep/],
    ['a field given twice (validated one way, stored another)', () => up(resultWith().replace('"mode":"quick"', '"mode":"quick","mode":"full"')), 400, /^\/mode: the field "mode" appears twice in one object/],
    ['a malformed Idempotency-Key', () => up(resultWith(), { 'idempotency-key': 'no spaces please' }), 400, /Idempotency-Key header takes 8 to 128/],
    ['a display name of 61 characters', () => up(resultWith(), { 'x-vmemlab-name': encodeURIComponent('é'.repeat(61)) }), 400, /X-Vmemlab-Name: at most 60 characters \(this one has 61\)/],
    ['a display name that is not percent-encoded UTF-8', () => up(resultWith(), { 'x-vmemlab-name': '%C3%28' }), 400, /X-Vmemlab-Name: not percent-encoded UTF-8/],
    ['a display name with a control character', () => up(resultWith(), { 'x-vmemlab-name': 'Ana%07' }), 400, /X-Vmemlab-Name: contains the control character U\+0007/],
    ['a class listing with a wrong teacher token', () => app.inject({ method: 'GET', url: `/api/classes/${code}/results`, headers: { authorization: 'Bearer AAAAAAAAAAAAAAAAAAAAAA' } }), 403, /not the teacher token/],
    ['class with no name', () => app.inject({ method: 'POST', url: '/api/classes', payload: { name: '  ' } }), 400, /name/],
    ['class with extra fields', () => app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'x', admin: true } }), 400, /unknown field "admin"/],
    ['export with a wrong token', () => app.inject({ method: 'GET', url: `/api/classes/${code}/export.csv`, headers: { authorization: 'Bearer AAAAAAAAAAAAAAAAAAAAAA' } }), 403, /not the teacher token/],
    ['export of a class that does not exist', () => app.inject({ method: 'GET', url: '/api/classes/ZZZZ-ZZZZ/export.csv', headers: { authorization: `Bearer ${teacher}` } }), 404, /no class/],
    ['delete with a malformed Authorization', () => app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/abc`, headers: { authorization: 'Basic Zm9vOmJhcg==' } }), 401, /Bearer/],
    ['delete of an unknown upload', () => app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/abc`, headers: { authorization: `Bearer ${teacher}` } }), 404, /no such upload/],
  ];
  it.each(bad)('%s → right status, clear JSON message, nothing stored', async (_name, send, status, message) => {
    const before = await count();
    const r = await send();
    expect(r.statusCode).toBe(status);
    const j = r.json();
    expect(j.statusCode).toBe(status);
    expect(j.message).toMatch(message);
    expect(await count()).toBe(before);
  });

  it('takes application/json with any charset parameter, and +json types', async () => {
    for (const type of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON; Charset="utf-8"', 'application/json; charset=latin1', 'application/vnd.vmemlab+json', 'application/problem+json; charset=utf-8']) {
      const r = await up(resultWith(), { 'content-type': type });
      expect(r.statusCode, `${type}: ${r.body}`).toBe(201);
      await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${r.json().id}`, headers: { authorization: `Bearer ${teacher}` } });
    }
    for (const type of ['text/json', 'application/jsonp', 'application/x-json']) expect((await up(resultWith(), { 'content-type': type })).statusCode, type).toBe(415);
  });

  it('stores an upload once per Idempotency-Key and answers a repeat with the same id and receipt', async () => {
    const body = resultWith((r) => { r.created_utc = '2026-01-02T03:04:05Z'; });
    const key = `key-${kind}-0123456789`;
    const first = await up(body, { 'idempotency-key': key });
    expect(first.statusCode).toBe(201);
    const again = await up(body, { 'idempotency-key': key });
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toMatchObject({ id: first.json().id, receipt: first.json().receipt, class: code });
    expect(Object.keys(again.json()).sort()).toEqual(['class', 'id', 'message', 'receipt', 'url']);
    expect(await count()).toBe(1);
    // the same key with another file: refused, nothing stored
    const other = await up(resultWith(), { 'idempotency-key': key });
    expect(other.statusCode).toBe(422);
    expect(other.json().message).toMatch(/already used in this class for a different result file/);
    // a double click: ten at once with one key store one upload, all answered with its id
    const burst = await Promise.all(Array.from({ length: 10 }, () => up(resultWith(), { 'idempotency-key': `burst-${kind}-key` })));
    expect(burst.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    expect(new Set(burst.map((r) => r.json().id)).size).toBe(1);
    expect(new Set(burst.map((r) => r.json().receipt)).size).toBe(1);
    expect(await count()).toBe(2);
    // the receipt of a repeat deletes the upload; after that the key stores anew
    const del = await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${first.json().id}`, headers: { authorization: `Bearer ${again.json().receipt}` } });
    expect(del.json()).toEqual({ deleted: first.json().id, by: 'student' });
    const anew = await up(body, { 'idempotency-key': key });
    expect(anew.statusCode).toBe(201);
    expect(anew.json().id).not.toBe(first.json().id);
    // keys are per class: the same key in another class is another upload
    const c2 = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'second' } })).json();
    const elsewhere = await up(body, { 'idempotency-key': key, 'x-vmemlab-class': c2.code });
    expect(elsewhere.statusCode).toBe(201);
    for (const id of [anew.json().id, burst[0].json().id]) await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${id}`, headers: { authorization: `Bearer ${teacher}` } });
    await app.inject({ method: 'DELETE', url: `/api/classes/${c2.code}/results/${elsewhere.json().id}`, headers: { authorization: `Bearer ${c2.teacher_token}` } });
    expect(await count()).toBe(0);
  });

  it('keeps a student\'s display name for the teacher and the CSV, not for everyone', async () => {
    const named = await up(resultWith(), { 'x-vmemlab-name': encodeURIComponent(' 山田 =SUM(A1) ') });
    const anon = await up(resultWith());
    expect([named.statusCode, anon.statusCode]).toEqual([201, 201]);
    const open = (await app.inject({ method: 'GET', url: `/api/classes/${code}/results` })).json();
    expect(JSON.stringify(open)).not.toContain('山田');
    expect(open.results.every((r: Record<string, unknown>) => !('name' in r))).toBe(true);
    const asTeacher = (await app.inject({ method: 'GET', url: `/api/classes/${code}/results`, headers: { authorization: `Bearer ${teacher}` } })).json();
    const byId = Object.fromEntries(asTeacher.results.map((r: { id: string; name: string | null }) => [r.id, r.name]));
    expect(byId).toEqual({ [named.json().id]: '山田 =SUM(A1)', [anon.json().id]: null });
    expect(asTeacher.results[0]).toMatchObject({ mode: 'quick', mem_mib: 64 });
    const csv = (await app.inject({ method: 'GET', url: `/api/classes/${code}/export.csv`, headers: { authorization: `Bearer ${teacher}` } })).body;
    const lines = csv.trim().split('\r\n');
    expect(lines[0]).toBe(['id,name,uploaded_utc,cpu_model,arch,hypervisor,tdp,mode,mem_mib,created_utc', ...Object.keys(METRICS)].join(','));
    // an id is base64url: one that starts with "-" is written '-... (no formula)
    const cell = (id: string) => (id.startsWith('-') ? `'${id}` : id);
    const line = (id: string) => lines.find((l) => l.startsWith(cell(id)));
    expect(line(named.json().id)).toMatch(new RegExp(`^'?${named.json().id},山田 =SUM\\(A1\\),`));
    expect(line(anon.json().id)).toMatch(new RegExp(`^'?${anon.json().id},,`));
    expect(line(named.json().id)).toContain(',quick,64,');
    for (const r of [named, anon]) await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${r.json().id}`, headers: { authorization: `Bearer ${teacher}` } });
  });

  it('serves the OpenAPI description and security headers', async () => {
    const r = await app.inject({ method: 'GET', url: '/api/openapi.json' });
    expect(r.json().openapi).toBe('3.1.0');
    expect(r.headers['content-security-policy']).toContain("default-src 'self'");
    expect(r.headers['content-security-policy']).toContain("object-src 'none'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
  });
});

describe('rate limiting', () => {
  it('answers 429 with a JSON message once a client goes over the limit', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-rl-')); dirs.push(dataDir);
    const app = await buildServer({ dataDir, serveApp: false, rateLimit: { max: 100, uploadMax: 3, createMax: 2, timeWindow: '1 minute' } });
    try {
      const codes: number[] = [];
      for (let i = 0; i < 3; i++) codes.push((await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'x' } })).statusCode);
      expect(codes).toEqual([201, 201, 429]);
      const r = await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'x' } });
      expect(r.json().message).toMatch(/rate limit/);
    } finally { await app.close(); }
  });
});
