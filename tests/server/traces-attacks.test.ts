/* Attacks on trace uploads (POST /api/classes/:code/traces) that once froze, slowed or
 * killed the class server, each kept as a named regression test: a report with 1.9 million
 * empty modes (5.7 MB) held the event loop for 40 s and ran the process out of heap (the
 * schema collected every error); a 408 KB gzip of zeros whose header claims 20 M accesses
 * inflated to 400 MiB in one synchronous call (1.9 s, 950 MB peak), and three clients
 * sending it held a plain class GET at 1.5 s; a 19 KB trace of 20 M one-byte records with
 * a forged report was stored; a header's label was never checked; VMEMLAB_UPLOAD_RATE=0
 * answered every upload 429; the list had no pages. Where time or memory is measured, the
 * server is web/server/main.mjs in a child process (web/scripts/class-server.mjs), as
 * `make start` runs it. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGzip, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { BODY_MAX, INFLATE_RATIO_MAX, POOL_SIZE, QUEUE_MAX, TraceCheckPool } from '../../web/server/trace-check.mjs';
import { startClassServer } from '../../web/scripts/class-server.mjs';
import { root } from './helpers';
import { writeTrace } from '../../web/src/test/traceFiles';
import { listClassTraces, shareLabel } from '../../web/src/trace/share';

type App = Awaited<ReturnType<typeof buildServer>>;
type Json = Record<string, unknown>;
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const dirs: string[] = [];
const apps: App[] = [];
const tmp = () => { const d = mkdtempSync(join(tmpdir(), 'vmemlab-trace-attack-')); dirs.push(d); return d; };
afterAll(async () => {
  for (const a of apps) await a.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const replay = (path: string): Json => JSON.parse(execFileSync(vmsim, ['replay', path, '--quiet', '--format', 'json'], { encoding: 'utf8' }));
const accesses = (n: number, pages = 40): [number, number][] => Array.from({ length: n }, (_, i) => [i % 4, 0x400000 + 4096 * ((i * 7) % pages) + ((i * 40) % 4096)]);
/** A trace file: the prefix, this header as JSON, this gzip body. */
function pack(header: Json, gz: Buffer): Buffer {
  const text = Buffer.from(JSON.stringify({ ...header, body: { compression: 'gzip', bytes: gz.length } }));
  const pre = Buffer.alloc(16);
  Buffer.from([0x89, 0x56, 0x4d, 0x54, 0x52, 0x43, 0x0d, 0x0a]).copy(pre);
  pre.writeUInt16LE(1, 8); pre.writeUInt32LE(text.length, 12);
  return Buffer.concat([pre, text, gz]);
}
const headerOf = (file: Buffer): Json => JSON.parse(file.subarray(16, 16 + file.readUInt32LE(12)).toString());
/** A report forged to match a header of n loads on one page (what the checks compare). */
function forged(rep: Json, n: number): Json {
  const r = structuredClone(rep) as { trace: Json; modes: Json[] };
  Object.assign(r.trace, { accesses: n, pages: 1, counts: { load: n, store: 0, fetch: 0, modify: 0 } });
  for (const m of r.modes) m.accesses = n;
  return r as unknown as Json;
}
/** An uncompressed body of n one-byte records (a load at offset 0 of page 0) and the end record. */
function oneByteRecords(n: number): Buffer {
  const raw = Buffer.alloc(n + 10);
  raw[n] = 31 << 3;
  let i = n + 1; let v = n;
  while (v >= 128) { raw[i++] = (v & 127) | 128; v = Math.floor(v / 128); }
  raw[i++] = v;
  return raw.subarray(0, i);
}
/** gzip of `mib` MiB of zeros, streamed (never held whole). */
async function gzipZeros(mib: number): Promise<Buffer> {
  const z = createGzip({ level: 9 });
  const parts: Buffer[] = [];
  z.on('data', (c: Buffer) => parts.push(c));
  const done = new Promise((r) => z.on('end', r));
  const mb = Buffer.alloc(1 << 20);
  for (let i = 0; i < mib; i++) z.write(mb);
  z.end();
  await done;
  return Buffer.concat(parts);
}
/**
 * A trace of n accesses spread over `pages` pages at random offsets, near the most a class
 * keeps (about 3.7 MB for 800,000 accesses), with a report forged to match its header: the
 * body of the largest uploads a class sends. Encoded here (the format of
 * wasm-core/docs/replay.md) because hw-lab's Python writer takes half a minute for it.
 */
function largeTrace(n: number, pages: number): { body: string; bytes: number } {
  let seed = 12345;
  const rnd = () => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed; };
  const zig = (v: number) => (v >= 0 ? 2 * v : -2 * v - 1);
  const out = Buffer.alloc(n * 12 + 16); let o = 0;
  const varint = (v: number) => { while (v >= 128) { out[o++] = (v % 128) | 128; v = Math.floor(v / 128); } out[o++] = v; };
  const last = [[0, 0], [0, 0]]; const counts = [0, 0, 0, 0]; const touched = new Set<number>();
  for (let i = 0; i < n; i++) {
    const kind = rnd() % 4; const s = kind === 2 ? 1 : 0;
    const page = 0x400 + (rnd() % pages); const off = rnd() % 4096;
    const dp = page - last[s][0]; const od = zig(off - last[s][1]);
    out[o++] = kind | (dp ? 4 : 0) | (Math.min(od, 30) << 3);
    if (dp) varint(zig(dp));
    if (od >= 30) varint(od);
    last[s] = [page, off]; counts[kind]++; touched.add(page);
  }
  out[o++] = 31 << 3; varint(n);
  const gz = gzipSync(out.subarray(0, o), { level: 1 });
  const names = ['load', 'store', 'fetch', 'modify'];
  const h = { ...header, accesses: n, pages: touched.size, counts: Object.fromEntries(names.map((k, j) => [k, counts[j]])) };
  const r = structuredClone(rep) as { trace: Json; modes: Json[] };
  Object.assign(r.trace, { accesses: n, pages: touched.size, counts: h.counts });
  for (const m of r.modes) m.accesses = n;
  const file = pack(h, gz);
  return { body: JSON.stringify({ report: r, trace: file.toString('base64') }), bytes: file.length };
}
const p99 = (xs: number[]) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(0.99 * (s.length - 1))]; };

let work: string;
let base: Buffer; let rep: Json; let header: Json;
let zerosBomb: string; let recordsBomb: string; let emptyModes: string; let wholeBomb: string;
beforeAll(async () => {
  work = tmp();
  const f = writeTrace(work, 'base.vmtrace', accesses(500));
  base = readFileSync(f); rep = replay(f); header = headerOf(base);
  const claim = { ...header, accesses: 20_000_000, pages: 1, counts: { load: 20_000_000, store: 0, fetch: 0, modify: 0 } };
  // 400 MiB of zeros in 408 KB; zero bytes read as loads at offset 0 of page 0
  zerosBomb = JSON.stringify({ report: forged(rep, 20_000_000), trace: pack(claim, await gzipZeros(400)).toString('base64') });
  // 20 M one-byte records and their end record in 19 KB: a trace its header describes exactly
  recordsBomb = JSON.stringify({ report: forged(rep, 20_000_000), trace: pack(claim, gzipSync(oneByteRecords(20_000_000), { level: 9 })).toString('base64') });
  // 1 GiB of zeros in about 1 MB, its header claiming 2 G accesses (what a whole program may
  // hold): the ceilings of the whole body (21 bytes an access, 768 times 1 MB) let 768 MB through
  const whole = { ...header, accesses: 2_000_000_000, pages: 1, counts: { load: 2_000_000_000, store: 0, fetch: 0, modify: 0 } };
  wholeBomb = JSON.stringify({ report: forged(rep, 2_000_000_000), trace: pack(whole, await gzipZeros(1024)).toString('base64') });
  emptyModes = JSON.stringify({ report: { ...rep, modes: Array.from({ length: 1_900_000 }, () => ({})) }, trace: base.toString('base64') });
}, 60_000);

describe('attacks on a running server (web/server/main.mjs): refused at once, the server answers everyone else, memory stays bounded', () => {
  let server: Awaited<ReturnType<typeof startClassServer>>;
  let url: string; let code: string;
  beforeAll(async () => {
    server = await startClassServer({ env: { VMEMLAB_RATE_MAX: '0', VMEMLAB_UPLOAD_RATE: '0', VMEMLAB_CREATE_RATE: '0' } });
    url = server.url.replace(/\/$/, '');
    code = (await (await fetch(`${url}/api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"attacks"}' })).json()).code;
    // the checker's worker starts with the first upload
    expect((await upload(JSON.stringify({ report: rep, trace: base.toString('base64') }))).status).toBe(201);
  }, 60_000);
  afterAll(async () => { await server?.close(); });

  async function upload(body: string): Promise<{ status: number; message: string; retryAfter: string | null; ms: number }> {
    const t0 = performance.now();
    const r = await fetch(`${url}/api/classes/${code}/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const j = await r.json() as { message: string };
    return { status: r.status, message: j.message, retryAfter: r.headers.get('retry-after'), ms: performance.now() - t0 };
  }
  async function classGet(): Promise<number> {
    const t0 = performance.now();
    const r = await fetch(`${url}/api/classes/${code}`);
    await r.arrayBuffer();
    expect(r.status).toBe(200);
    return performance.now() - t0;
  }
  const peakRssMiB = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) / 1024;

  it('a report with 1.9 million empty modes (5.7 MB; held the event loop 40 s, then the heap ran out): 4xx within 1 s, the server alive', async () => {
    expect(emptyModes.length).toBeGreaterThan(5_700_000);
    expect(emptyModes.length).toBeLessThan(BODY_MAX);
    const [r, get] = await Promise.all([upload(emptyModes), (async () => { await new Promise((s) => setTimeout(s, 5)); return classGet(); })()]);
    console.log(`1.9 M empty modes: ${r.status} in ${r.ms.toFixed(0)} ms (a class GET meanwhile ${get.toFixed(0)} ms)`);
    expect(r.status).toBe(400);
    expect(r.message).toMatch(/more than \d+ objects and lists; a trace upload/);
    expect(r.ms).toBeLessThan(1000);
    expect(get).toBeLessThan(1000);
    expect(server.child.exitCode).toBe(null);
    expect((await fetch(`${url}/api/health`)).status).toBe(200);
  });

  it('a 408 KB gzip of zeros claiming 20 M accesses (inflated to 400 MiB in one call): 422 quickly, peak memory under 300 MB', async () => {
    expect(zerosBomb.length).toBeLessThan(600_000);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await upload(zerosBomb);
      expect(r.status, r.message).toBe(422);
      expect(r.message).toMatch(/the trace is corrupt: its body holds more than the 20000000 accesses|inflates to more than/);
      times.push(r.ms);
    }
    console.log(`zeros bomb: 422 in ${times.map((t) => t.toFixed(0)).join(', ')} ms; server peak RSS ${peakRssMiB().toFixed(0)} MiB`);
    expect(Math.max(...times)).toBeLessThan(2000);
    expect(peakRssMiB()).toBeLessThan(300);
  });

  it(`1 GiB of zeros in 1 MB claiming 2 G accesses: refused within its first megabytes (${INFLATE_RATIO_MAX} times what was inflated so far), in under a second`, async () => {
    expect(wholeBomb.length).toBeLessThan(2_000_000);
    const r = await upload(wholeBomb);
    console.log(`1 GiB zeros bomb claiming 2 G accesses: ${r.status} in ${r.ms.toFixed(0)} ms: ${r.message}`);
    expect(r.status).toBe(422);
    expect(r.message).toContain(`inflates to more than ${INFLATE_RATIO_MAX} times its compressed size`);
    expect(r.ms).toBeLessThan(1000);
  });

  it(`20 M one-byte records in 19 KB with a report forged to match (stored after 451 ms): refused, the body inflates past ${INFLATE_RATIO_MAX} times its size`, async () => {
    expect(recordsBomb.length).toBeLessThan(40_000);
    const r = await upload(recordsBomb);
    console.log(`20 M one-byte records: ${r.status} in ${r.ms.toFixed(0)} ms: ${r.message}`);
    expect(r.status).toBe(422);
    expect(r.message).toContain(`inflates to more than ${INFLATE_RATIO_MAX} times its compressed size`);
    expect(r.ms).toBeLessThan(1000);
  });

  it('three clients sending zip bombs in a loop for 4 s (a class GET took 1.5 s at p50): class GETs meanwhile have p99 < 100 ms, bombs get 422 or 503 with Retry-After', async () => {
    for (let i = 0; i < 20; i++) await classGet(); // warm
    const until = performance.now() + 4000;
    const answers: Record<number, number> = {};
    const bomber = async () => {
      while (performance.now() < until) {
        const r = await upload(zerosBomb);
        answers[r.status] = (answers[r.status] ?? 0) + 1;
        expect([422, 503], r.message).toContain(r.status);
        if (r.status === 503) { expect(r.retryAfter).toBe('5'); expect(r.message).toContain('busy checking other traces'); }
      }
    };
    const gets: number[] = [];
    const getter = async () => {
      while (performance.now() < until) { gets.push(await classGet()); await new Promise((s) => setTimeout(s, 5)); }
    };
    await Promise.all([bomber(), bomber(), bomber(), getter()]);
    const sorted = [...gets].sort((a, b) => a - b);
    console.log(`under 3 bombing clients: ${gets.length} class GETs, p50 ${sorted[Math.floor(gets.length / 2)].toFixed(1)} ms, p99 ${p99(gets).toFixed(1)} ms, max ${sorted[sorted.length - 1].toFixed(1)} ms; bombs answered ${JSON.stringify(answers)}; server peak RSS ${peakRssMiB().toFixed(0)} MiB`);
    expect(gets.length).toBeGreaterThan(50);
    expect(p99(gets)).toBeLessThan(100);
    expect(answers[422]).toBeGreaterThan(0);
    expect(peakRssMiB()).toBeLessThan(300);
  }, 30_000);

  it(`20 uploads of a 4 MB trace at once: ${POOL_SIZE + QUEUE_MAX} at a time are taken in (the rest 503, their bodies read and dropped), peak memory under 300 MB`, async () => {
    const big = largeTrace(800_000, 20_000);
    expect(big.bytes).toBeGreaterThan(3_500_000);
    expect(big.bytes).toBeLessThan(4 * 2 ** 20);
    const t0 = performance.now();
    const answers = await Promise.all(Array.from({ length: 20 }, () => upload(big.body)));
    const count = (s: number) => answers.filter((r) => r.status === s).length;
    console.log(`20 uploads of a ${(big.bytes / 2 ** 20).toFixed(1)} MiB trace at once: ${count(201)} stored, ${count(503)} busy, in ${(performance.now() - t0).toFixed(0)} ms; server peak RSS ${peakRssMiB().toFixed(0)} MiB`);
    expect(count(201) + count(503)).toBe(20);
    expect(count(201)).toBeGreaterThanOrEqual(POOL_SIZE + QUEUE_MAX);
    for (const r of answers.filter((a) => a.status === 503)) expect(r.retryAfter).toBe('5');
    expect(peakRssMiB()).toBeLessThan(300);
  }, 60_000);

  it('after every attack the server still stores a real trace, and its peak memory stayed under 300 MB', async () => {
    const r = await upload(JSON.stringify({ label: 'after', report: rep, trace: base.toString('base64') }));
    expect(r.status, r.message).toBe(201);
    const peak = peakRssMiB();
    console.log(`server peak RSS over all attacks: ${peak.toFixed(0)} MiB`);
    expect(peak).toBeLessThan(300);
  });
});

describe('the checks on an in-process server (buildServer, SQLite in a temp folder)', () => {
  async function server(rateLimit: false | { max: number; uploadMax: number; createMax: number; timeWindow: string } = false) {
    const app = await buildServer({ dataDir: tmp(), rateLimit, serveApp: false });
    apps.push(app);
    const { code } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'checks' } })).json();
    const post = (payload: unknown) => app.inject({ method: 'POST', url: `/api/classes/${code}/traces`, headers: { 'content-type': 'application/json' }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });
    const list = async (q = '') => app.inject({ method: 'GET', url: `/api/classes/${code}/traces${q}` });
    return { app, code, post, list };
  }

  it('labels: a header label with U+202E ("evil\\u202etxt.exe" was stored and listed), JSON labels with \\n and U+2028, control characters in the header\'s program and arguments: 422 naming the field, nothing stored', async () => {
    const { post, list } = await server();
    const plain = writeTrace(work, 'plain.vmtrace', accesses(100));
    const ok = { report: replay(plain), trace: readFileSync(plain).toString('base64') };
    // the header is checked before the report is compared with it (a report holding the
    // same program would be refused by the document checks, 400, before that)
    const withHeader = (name: string, fields: Json) => ({ report: ok.report, trace: readFileSync(writeTrace(work, name, accesses(100), fields)).toString('base64') });
    const cases: [string, unknown, string][] = [
      ['header label U+202E', withHeader('bidi.vmtrace', { label: 'evil\u202etxt.exe' }), "the trace header's label: contains the control character U+202E"],
      ['header label U+2028', withHeader('ls.vmtrace', { label: 'a\u2028b' }), "the trace header's label: contains the control character U+2028"],
      ['header program BEL', withHeader('bel.vmtrace', { program: 'ls\u0007' }), 'the trace header: /program: contains the control character U+0007'],
      ['header argument U+202E', withHeader('arg.vmtrace', { args: ['-n', 'a\u202eb'] }), 'the trace header: /args/1: contains the control character U+202E'],
      ['JSON label \\n', { ...ok, label: 'my\nsort' }, '/label: contains the control character U+000A'],
      ['JSON label U+2028', { ...ok, label: 'my\u2028sort' }, '/label: contains the control character U+2028'],
    ];
    for (const [what, body, needle] of cases) {
      const r = await post(body);
      expect(r.statusCode, `${what}: ${r.body}`).toBe(422);
      expect(r.json().message, what).toContain(needle);
    }
    expect((await list()).json().traces).toHaveLength(0);
    // the page sends a file's name as the label with such characters as spaces
    expect(shareLabel('evil\u202etxt.exe\nx\u2028y')).toBe('evil txt.exe x y');
    expect(shareLabel('😀'.repeat(50))).toBe('😀'.repeat(40));
    // a label made of the command line shows its line breaks as spaces
    const f = writeTrace(work, 'cmd.vmtrace', accesses(100), { program: 'sh', args: ['-c', 'echo a\necho b'] });
    expect((await post({ report: replay(f), trace: readFileSync(f).toString('base64') })).statusCode).toBe(201);
    expect((await list()).json().traces.map((t: { label: string }) => t.label)).toEqual(['sh -c echo a echo b']);
  });

  it('VMEMLAB_UPLOAD_RATE=0 (uploadMax 0) turns the trace route\'s limit off: 70 traces in a minute without a 429 (every one was refused "at most 0 requests")', async () => {
    const { post, list } = await server({ max: 600, uploadMax: 0, createMax: 20, timeWindow: '1 minute' });
    const body = JSON.stringify({ report: rep, trace: base.toString('base64') });
    const statuses: number[] = [];
    for (let i = 0; i < 70; i++) statuses.push((await post(body)).statusCode);
    expect(statuses.filter((s) => s !== 201)).toEqual([]);
    expect((await list()).json().traces).toHaveLength(70);
    // a limit that is set still holds
    const limited = await server({ max: 600, uploadMax: 5, createMax: 20, timeWindow: '1 minute' });
    for (let i = 0; i < 5; i++) expect((await limited.post(body)).statusCode).toBe(201);
    const over = await limited.post(body);
    expect(over.statusCode).toBe(429);
  }, 60_000);

  it('the list comes a page at a time: 3 pages with limit=2 list every trace once, in upload order; a bad limit or cursor is 400', async () => {
    const { app, code, post, list } = await server();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await post({ label: `t${i}`, report: rep, trace: base.toString('base64') })).json().id);
    const seen: string[] = [];
    let cursor: string | null = null; let pages = 0;
    do {
      const r = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.statusCode, r.body).toBe(200);
      const j = r.json();
      seen.push(...j.traces.map((t: { id: string }) => t.id));
      expect(j.traces.length).toBe(++pages < 3 ? 2 : 1);
      cursor = j.next_cursor;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
    const whole = (await list()).json();
    expect(whole.traces.map((t: { label: string }) => t.label)).toEqual(['t0', 't1', 't2', 't3', 't4']);
    expect(whole.next_cursor).toBe(null);
    // the page's client (web/src/trace/share.ts) follows next_cursor to the last page
    const saved = globalThis.fetch;
    let requests = 0;
    globalThis.fetch = (async (url: string) => {
      requests++;
      const r = await app.inject({ method: 'GET', url: `${url}${url.includes('?') ? '&' : '?'}limit=2` });
      return new Response(r.body, { status: r.statusCode, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    try {
      expect((await listClassTraces(code)).map((t) => t.id)).toEqual(ids);
      expect(requests).toBe(3);
    } finally { globalThis.fetch = saved; }
    for (const q of ['?cursor=nope!', '?cursor=' + Buffer.from('yesterday\nabc').toString('base64url'), '?limit=0', '?limit=501', '?limit=x', '?limit=2&limit=3']) {
      const r = await list(q);
      expect(r.statusCode, `${q}: ${r.body}`).toBe(400);
      expect(r.json().message).toMatch(/^(cursor|limit): /);
    }
  });

  it(`uploads beyond the ${QUEUE_MAX} waiting for the checker are answered 503 with Retry-After, saying the server is busy checking other traces`, async () => {
    const { post } = await server();
    const answers = await Promise.all(Array.from({ length: QUEUE_MAX + 6 }, () => post(zerosBomb)));
    const busy = answers.filter((r) => r.statusCode === 503);
    expect(busy.length).toBeGreaterThan(0);
    for (const r of busy) {
      expect(r.headers['retry-after']).toBe('5');
      expect(r.json().message).toContain('the server is busy checking other traces');
    }
    expect(answers.filter((r) => r.statusCode === 422).length).toBeGreaterThanOrEqual(QUEUE_MAX);
    expect(answers.every((r) => r.statusCode === 422 || r.statusCode === 503)).toBe(true);
  }, 60_000);

  it(`uploads that stall until the body timeout or are cut off give their place back: after ${POOL_SIZE + QUEUE_MAX + 2} of them a trace is still stored`, async () => {
    const app = await buildServer({ dataDir: tmp(), rateLimit: false, serveApp: false, bodyTimeoutMs: 600 });
    apps.push(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    const { code } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'stalls' } })).json();
    /** Sends the headers and the start of a body, then nothing (or closes); resolves with the status line it got. */
    const stall = (cut: boolean) => new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1');
      let got = '';
      s.on('data', (d) => { got += d; });
      s.on('close', () => resolve(got.split('\r\n')[0]));
      s.on('error', () => {});
      s.write(`POST /api/classes/${code}/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"trace":"AAAA`);
      if (cut) setTimeout(() => s.destroy(), 200);
    });
    const lines = await Promise.all(Array.from({ length: POOL_SIZE + QUEUE_MAX + 2 }, (_, i) => stall(i % 2 === 1)));
    expect(lines.filter((l) => l !== '')).toEqual(lines.filter((l) => l !== '').map(() => 'HTTP/1.1 408 Request Timeout'));
    const r = await fetch(`http://127.0.0.1:${port}/api/classes/${code}/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ report: rep, trace: base.toString('base64') }) });
    expect(r.status, await r.text()).toBe(201);
  });

  it('the page\'s example traces (the most compressed real ones: 15.6 and 93.3 times) are stored', async () => {
    const examples = ['pointer-chase', 'sequential-scan'].map((n) => join(root, 'hw-lab', 'build', 'traces', `${n}.vmtrace`));
    if (!examples.every(existsSync)) throw new Error('record the example traces first: make build');
    const { post } = await server();
    for (const f of examples) {
      const r = await post({ report: replay(f), trace: readFileSync(f).toString('base64') });
      expect(r.statusCode, r.body).toBe(201);
    }
  });
});

describe('the checker\'s worker pool', () => {
  it('a worker that dies or runs too long fails only its upload and is replaced', async () => {
    const pool = new TraceCheckPool({ timeoutMs: 60_000 });
    try {
      const good = () => pool.check(Buffer.from(JSON.stringify({ report: rep, trace: base.toString('base64') })));
      expect((await good()).label).toBe('test');
      // killed while it checks
      const dying = pool.check(Buffer.from(zerosBomb));
      for (const w of (pool as unknown as { workers: Set<{ terminate: () => void }> }).workers) w.terminate();
      await expect(dying).rejects.toMatchObject({ statusCode: 500, message: expect.stringContaining('the trace checker stopped') });
      expect((await good()).label).toBe('test');
      // past its time
      pool.timeoutMs = 1;
      await expect(pool.check(Buffer.from(zerosBomb))).rejects.toMatchObject({ statusCode: 503, retryAfter: 5 });
      pool.timeoutMs = 60_000;
      expect((await good()).label).toBe('test');
    } finally { await pool.close(); }
  }, 60_000);
});
