/* A seeded fuzzer driven by the served OpenAPI description: for every operation it builds
 * requests from the declared parameters and bodies, then mutates them (types, missing and
 * extra fields, odd strings, deep nesting, bad headers). No answer may be a 5xx, every error
 * is JSON with a message, and only 201 answers store anything. Seed: FUZZ_SEED (default 7). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { fixture } from './helpers';

const SEED = Number(process.env.FUZZ_SEED ?? 7);
const ROUNDS = Number(process.env.FUZZ_ROUNDS ?? 1500);
let s = SEED >>> 0 || 1;
const rnd = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
const pick = <T,>(a: T[]): T => a[Math.floor(rnd() * a.length)];

const STRINGS = ['', ' ', 'a', '0', '-1', 'null', 'true', '<img src=x onerror=alert(1)>', '=cmd|calc', "'; DROP TABLE results;--", '../../etc/passwd', '%00', '\u0000', '😀', 'x'.repeat(300), 'ABCD-EFGH', '__proto__', 'constructor'];
const odd = (): unknown => pick<() => unknown>([
  () => pick(STRINGS), () => Math.floor(rnd() * 2 ** 40) - 2 ** 39, () => -0.5, () => 1e308, () => null, () => true, () => [], () => ({}),
  () => [pick(STRINGS), 1], () => ({ __proto__: { admin: true } }), () => JSON.parse('{"__proto__":{"x":1}}'),
  () => { let v: unknown = 1; for (let i = 0; i < 200; i++) v = [v]; return v; },
])();

function mutate(v: unknown, depth = 0): unknown {
  if (rnd() < 0.15 || depth > 6) return odd();
  if (Array.isArray(v)) {
    const a = v.map((x) => (rnd() < 0.3 ? mutate(x, depth + 1) : x));
    if (rnd() < 0.2) a.push(odd()); if (rnd() < 0.2) a.splice(0, 1);
    return a;
  }
  if (v && typeof v === 'object') {
    const o: Record<string, unknown> = { ...(v as Record<string, unknown>) };
    for (const k of Object.keys(o)) {
      const r = rnd();
      if (r < 0.05) delete o[k]; else if (r < 0.3) o[k] = mutate(o[k], depth + 1);
    }
    if (rnd() < 0.1) o[pick(STRINGS) || 'extra'] = odd();
    return o;
  }
  return rnd() < 0.5 ? odd() : v;
}

type App = Awaited<ReturnType<typeof buildServer>>;
let app: App; let dir: string; let code: string; let teacher: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vmemlab-fuzz-'));
  app = await buildServer({ dataDir: dir, rateLimit: false, serveApp: false });
  ({ code, teacher_token: teacher } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'fuzz' } })).json());
});
afterAll(async () => { await app?.close(); rmSync(dir, { recursive: true, force: true }); });

describe(`fuzzing every operation of /api/openapi.json (seed ${SEED})`, () => {
  it(`${ROUNDS} mutated requests: no 5xx, JSON errors, nothing stored without a 201`, async () => {
    const spec = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const ops: { method: string; path: string; op: { parameters?: { name: string; in: string }[]; requestBody?: unknown } }[] = [];
    for (const [path, item] of Object.entries(spec.paths as Record<string, Record<string, unknown>>)) {
      // Closing and deleting the class would end the fuzzing of everything else in it
      // (lifecycle.test.ts tests them).
      for (const [method, op] of Object.entries(item)) if (!['closeClass', 'deleteClass'].includes((op as { operationId?: string }).operationId ?? '')) ops.push({ method: method.toUpperCase(), path, op: op as never });
    }
    expect(ops.length).toBeGreaterThanOrEqual(9);
    const ids: string[] = ['abc'];
    let created = 0; let deleted = 0; const statuses: Record<number, number> = {};
    for (let i = 0; i < ROUNDS; i++) {
      const { method, path, op } = pick(ops);
      const url = path.replace('{code}', () => encodeURIComponent(String(rnd() < 0.7 ? code : pick(STRINGS)))).replace('{id}', () => encodeURIComponent(String(rnd() < 0.7 ? pick(ids) : pick(STRINGS)))) || '/';
      const headers: Record<string, string> = {};
      for (const p of op.parameters ?? []) if (p.in === 'header' && rnd() < 0.9) headers[p.name.toLowerCase()] = rnd() < 0.7 ? code : String(pick(STRINGS)).replace(/[^\x20-\x7e]/g, '');
      if (rnd() < 0.5) headers.authorization = pick([`Bearer ${teacher}`, 'Bearer AAAAAAAAAAAAAAAAAAAAAA', 'Bearer', 'Basic x', `Bearer ${'A'.repeat(200)}`]);
      let payload: string | Buffer | undefined;
      if (op.requestBody) {
        const base = path === '/api/results' ? fixture : { name: 'class' };
        const doc = rnd() < 0.1 ? base : mutate(base);
        const text = JSON.stringify(doc) ?? 'null';
        const r = rnd();
        payload = r < 0.05 ? text.slice(0, Math.floor(rnd() * text.length)) : r < 0.08 ? Buffer.from([0xff, 0xfe, 0x00]) : text;
        headers['content-type'] = rnd() < 0.9 ? 'application/json' : pick(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'multipart/form-data']);
      }
      const res = await app.inject({ method, url, headers, payload });
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      expect(res.statusCode, `${method} ${url} → ${res.body.slice(0, 300)}`).toBeLessThan(500);
      if (res.statusCode >= 400) expect(typeof res.json().message, `${method} ${url}`).toBe('string');
      if (method === 'POST' && path === '/api/results' && res.statusCode === 201) { created++; ids.push(res.json().id); }
      if (method === 'DELETE' && res.statusCode === 200) deleted++;
    }
    expect(await app.store.totalResults()).toBe(created - deleted);
    expect(created).toBeGreaterThan(0); // some valid uploads got through
    expect(Object.keys(statuses).length).toBeGreaterThan(4);
  }, Math.max(90_000, ROUNDS * 20));
});
