/* The class server's API against SQLite and against a real PostgreSQL: create a class,
 * upload, list, export, delete; every bad input gets the right status and a clear JSON
 * message and stores nothing. Requests go through Fastify's inject (no sockets). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, hashToken } from '../../web/server/app.mjs';
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
    const b = await up(resultWith((r) => { r.probe.kvm.tdp = 'N'; r.probe.cpu.vendor = 'GenuineIntel'; }));
    expect(b.statusCode).toBe(201);
    const B = b.json();

    const list = (await app.inject({ method: 'GET', url: `/api/classes/${code}/results` })).json();
    expect(list.results.map((r: { id: string }) => r.id).sort()).toEqual([A.id, B.id].sort());
    expect(JSON.stringify(list)).not.toContain(A.receipt);
    const rb = list.results.find((r: { id: string }) => r.id === B.id);
    expect(rb).toMatchObject({ cpu_model: 'AMD EPYC', hypervisor: 'kvm', tdp: 'EPT off' });
    expect(rb.metrics.cpuid_exit_cycles).toBeGreaterThan(0);

    const one = await app.inject({ method: 'GET', url: `/api/classes/${code}/results/${A.id}` });
    expect(one.body).toBe(body); // byte for byte as uploaded

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
