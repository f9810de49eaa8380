/* The class server against clients that are slow, forge their address or find the
 * database away: a trickled body gets 408 and its socket closed; rate limits follow their
 * variables (0: that limit off) and key on the address TRUST_PROXY allows, so a forged
 * X-Forwarded-For buys nothing; a database that is away or full gives 503 with Retry-After,
 * never a 500 or a crash. */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { parseTrustProxy } from '../../web/server/config.mjs';
import { resultWith } from './helpers';

type App = Awaited<ReturnType<typeof buildServer>>;
const dirs: string[] = [];
const apps: App[] = [];
afterAll(async () => { for (const a of apps) await a.close(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

async function server(opts: Parameters<typeof buildServer>[0]): Promise<{ app: App; code: string; teacher: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-clients-')); dirs.push(dataDir);
  const app = await buildServer({ dataDir, serveApp: false, ...opts });
  apps.push(app);
  const c = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'lab' } })).json();
  return { app, code: c.code, teacher: c.teacher_token };
}
const upload = (app: App, code: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/api/results', payload: resultWith(), headers: { 'content-type': 'application/json', 'x-vmemlab-class': code, ...headers } });
const randomIp = () => Array.from({ length: 4 }, () => Math.floor(Math.random() * 254) + 1).join('.');

describe('slow clients', () => {
  it('a body trickled a byte at a time gets 408 and the socket is closed', async () => {
    const { app, code } = await server({ rateLimit: false, bodyTimeoutMs: 1000 });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const sock = connect(port, '127.0.0.1');
    let got = '';
    sock.on('data', (d) => { got += d; });
    const t0 = Date.now();
    sock.write(`POST /api/results HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Vmemlab-Class: ${code}\r\nContent-Length: 10000\r\n\r\n{`);
    const drip = setInterval(() => { if (!sock.destroyed) sock.write(' '); }, 200);
    await new Promise((r) => sock.once('close', r));
    clearInterval(drip);
    const took = Date.now() - t0;
    expect(got).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(got).toContain('Connection: close');
    expect(JSON.parse(got.slice(got.indexOf('\r\n\r\n') + 4)).message).toMatch(/did not arrive within 1 s; send the whole body at once/);
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(4000);
    expect(await app.store.totalResults()).toBe(0);
    // a client that sends its body in time is served as before
    const ok = await fetch(`http://127.0.0.1:${port}/api/results`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-vmemlab-class': code }, body: resultWith() });
    expect(ok.status).toBe(201);
  });
});

describe('rate limits', () => {
  it('VMEMLAB_UPLOAD_RATE=0 turns the upload limit off and leaves the others', async () => {
    const { app, code } = await server({ rateLimit: { max: 5, uploadMax: 0, createMax: 0, timeWindow: '1 minute' } });
    const ups = [];
    for (let i = 0; i < 12; i++) ups.push((await upload(app, code)).statusCode);
    expect(ups.every((s) => s === 201)).toBe(true);
    const gets = [];
    for (let i = 0; i < 6; i++) gets.push((await app.inject({ method: 'GET', url: `/api/classes/${code}` })).statusCode);
    expect(gets).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('VMEMLAB_RATE_MAX=0 turns the general limit off and leaves the upload limit', async () => {
    const { app, code } = await server({ rateLimit: { max: 0, uploadMax: 3, createMax: 0, timeWindow: '1 minute' } });
    for (let i = 0; i < 30; i++) expect((await app.inject({ method: 'GET', url: `/api/classes/${code}` })).statusCode).toBe(200);
    const ups = [];
    for (let i = 0; i < 4; i++) ups.push((await upload(app, code)).statusCode);
    expect(ups).toEqual([201, 201, 201, 429]);
  });
});

describe('TRUST_PROXY', () => {
  const limits = { max: 1000, uploadMax: 5, createMax: 0, timeWindow: '1 minute' };
  // What a reverse proxy passes on: whatever the client wrote, then the address it saw.
  const viaProxy = (client: string) => ({ 'x-forwarded-for': `${randomIp()}, ${randomIp()}, ${client}` });

  it('a hop count reads the address the proxy saw; forged entries before it buy nothing', async () => {
    const { app, code } = await server({ rateLimit: limits, trustProxy: parseTrustProxy('1') });
    const mallory = [];
    for (let i = 0; i < 8; i++) mallory.push((await upload(app, code, viaProxy('203.0.113.7'))).statusCode);
    expect(mallory).toEqual([201, 201, 201, 201, 201, 429, 429, 429]);
    expect((await upload(app, code, viaProxy('198.51.100.9'))).statusCode).toBe(201); // another student
  });

  it('an address list trusts X-Forwarded-For only from those peers', async () => {
    const fromProxy = await server({ rateLimit: limits, trustProxy: parseTrustProxy('127.0.0.1') }); // inject's peer is 127.0.0.1
    const a = [];
    for (let i = 0; i < 7; i++) a.push((await upload(fromProxy.app, fromProxy.code, viaProxy('203.0.113.7'))).statusCode);
    expect(a.slice(4)).toEqual([201, 429, 429]);
    const notAProxy = await server({ rateLimit: limits, trustProxy: parseTrustProxy('10.0.0.1, 192.168.0.0/16') });
    const b = [];
    for (let i = 0; i < 7; i++) b.push((await upload(notAProxy.app, notAProxy.code, { 'x-forwarded-for': randomIp() })).statusCode);
    expect(b.slice(4)).toEqual([201, 429, 429]);
  });

  it('(trusting every hop, which TRUST_PROXY no longer allows, let a forged header through)', async () => {
    const { app, code } = await server({ rateLimit: limits, trustProxy: true as never });
    const s = [];
    for (let i = 0; i < 8; i++) s.push((await upload(app, code, { 'x-forwarded-for': randomIp() })).statusCode);
    expect(s.every((x) => x === 201)).toBe(true);
  });
});

describe('database away or full', () => {
  const lost = (code: string, message: string) => Object.assign(new Error(message), { code });
  const classRow = { code: 'ABCD-EFGH', name: 'lab', teacher_hash: 'x'.repeat(64), created_at: '2026-01-01T00:00:00Z' };
  const store = (over: Record<string, unknown>) => ({
    kind: 'postgres', file: null, receiptKey: Buffer.alloc(32), close: async () => {}, ping: async () => {},
    getClass: async () => classRow, findByIdem: async () => undefined, insertResult: async () => true, countResults: async () => 0,
    ...over,
  });

  it.each([
    ['PostgreSQL stopped', lost('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), /database is not reachable right now/],
    ['a backend terminated', lost('57P01', 'terminating connection due to administrator command'), /database is not reachable right now/],
    ['a connection dropped mid-query', new Error('Connection terminated unexpectedly'), /database is not reachable right now/],
    ['the pool timing out', new Error('timeout exceeded when trying to connect'), /database is not reachable right now/],
    ['PostgreSQL out of disk', lost('53100', 'could not extend file: No space left on device'), /storage is full/],
    ['SQLite out of disk', lost('SQLITE_FULL', 'database or disk is full'), /storage is full/],
    ['SQLite busy', lost('SQLITE_BUSY', 'database is locked'), /database is not reachable right now/],
  ])('%s: 503 with Retry-After, the upload may be sent again', async (_n, error, message) => {
    const app = await buildServer({ store: store({ insertResult: async () => { throw error; } }) as never, rateLimit: false, serveApp: false, traces: false });
    apps.push(app);
    const r = await upload(app, 'ABCD-EFGH');
    expect(r.statusCode).toBe(503);
    expect(r.headers['retry-after']).toBe('5');
    expect(r.json().message).toMatch(message);
    expect(r.json().message).toMatch(/send the upload again \(with the same Idempotency-Key it is stored once\)/);
    const health = await app.inject({ method: 'GET', url: '/api/health' });
    expect(health.json()).toMatchObject({ ok: true, database: 'up' });
  });

  it('a read with the database away is a 503 too; health says the database is down', async () => {
    const down = async () => { throw lost('ECONNREFUSED', 'connect ECONNREFUSED'); };
    const app = await buildServer({ store: store({ getClass: down, ping: down }) as never, rateLimit: false, serveApp: false, traces: false });
    apps.push(app);
    const r = await app.inject({ method: 'GET', url: '/api/classes/ABCD-EFGH' });
    expect([r.statusCode, r.headers['retry-after']]).toEqual([503, '5']);
    expect((await app.inject({ method: 'GET', url: '/api/health' })).json()).toMatchObject({ ok: true, database: 'down' });
  });

  it('any other failure stays a 500 that says nothing was stored', async () => {
    const app = await buildServer({ store: store({ insertResult: async () => { throw new TypeError('x is undefined'); } }) as never, rateLimit: false, serveApp: false, traces: false });
    apps.push(app);
    const r = await upload(app, 'ABCD-EFGH');
    expect(r.statusCode).toBe(500);
    expect(r.headers['retry-after']).toBeUndefined();
    expect(r.json().message).toBe('internal error; the request was not stored');
  });
});
