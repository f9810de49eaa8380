/* What the class server refuses before a store sees a document (web/server/limits.mjs) and
 * how it reads its settings (web/server/config.mjs). checkJson (a walk of the parsed value)
 * and checkJsonText (a scan of the text) are two implementations of the same rules: on a
 * seeded stream of random documents, hostile ones included, they must agree. */
import { describe, expect, it } from 'vitest';
import { MAX_DEPTH, checkJson, checkJsonText, displayName, idempotencyKey } from '../../web/server/limits.mjs';
import { ConfigError, parseTrustProxy, rateLimitFromEnv, readConfig } from '../../web/server/config.mjs';
import { resultWith } from './helpers';

const refusal = (text: string): string | null => {
  try { checkJson(text, JSON.parse(text)); return null; } catch (e) { return (e as Error).message; }
};
const scanRefusal = (text: string): string | null => {
  try { checkJsonText(text); return null; } catch (e) { return (e as Error).message; }
};
const nest = (n: number, inner = '1') => '['.repeat(n) + inner + ']'.repeat(n);

describe('JSON documents: I-JSON, depth, text', () => {
  it('accepts a real hw-lab result', () => {
    expect(refusal(resultWith())).toBeNull();
    expect(scanRefusal(resultWith())).toBeNull();
  });

  it.each([
    ['a name given twice, with its path', '{"probe":{"cpu":{"model_name":"a","model_name":"b"}}}', /^\/probe\/cpu\/model_name: the field "model_name" appears twice/],
    ['the same name spelled with an escape', '{"a":1,"\\u0061":2}', /^\/a: the field "a" appears twice/],
    ['a duplicate inside an array of objects', '{"b":[{"x":1},{"y":1,"y":2}]}', /^\/b\/1\/y: /],
    ['1e309', '{"timer":{"freq_hz":1e309}}', /^\/timer\/freq_hz: .*64-bit float/],
    ['-1e400 in an array', '{"a":[0,-1e400]}', /^\/a\/1: .*64-bit float/],
    [`nesting ${MAX_DEPTH + 1} deep`, nest(MAX_DEPTH + 1), new RegExp(`^(/0){${MAX_DEPTH}}: is nested more than ${MAX_DEPTH} levels deep`)],
    ['nesting 100,000 deep', nest(100_000), /nested more than 32 levels/],
    ['NUL in a value', '{"probe":{"cpu":{"model_name":"AMD\\u0000EPYC"}}}', /^\/probe\/cpu\/model_name: contains the control character U\+0000/],
    ['a backspace escape', '{"a":"x\\by"}', /^\/a: contains the control character U\+0008/],
    ['a raw DEL', '{"a":"x\u007fy"}', /U\+007F/],
    ['a raw C1 control', '{"a":"x\u0085y"}', /U\+0085/],
    ['a bidi override', '{"a":"\u202egnp.exe"}', /U\+202E/],
    ['a line break in a name', '{"a\\nb":1}', /: the field name "a\\nb" contains the control character U\+000A/],
    ['an unpaired surrogate', '{"a":"\\ud800x"}', /^\/a: contains an unpaired UTF-16 surrogate/],
  ])('refuses %s', (_name, text, message) => {
    expect(() => JSON.parse(text)).not.toThrow();
    expect(refusal(text)).toMatch(message);
    expect(scanRefusal(text)).toMatch(message);
    // the same when the server knows the body is all ASCII (bytes = characters)
    if (Buffer.byteLength(text) === text.length) expect(() => checkJson(text, JSON.parse(text), { ascii: true })).toThrow(message);
  });

  it.each([
    ['nesting exactly 32 deep', nest(MAX_DEPTH)],
    ['1e308 and 5e-324', '{"a":1e308,"b":5e-324,"c":-0}'],
    ['tabs and line breaks in values', '{"notes":["a\\tb\\nc\\r"]}'],
    ['a surrogate pair (emoji) and CJK', '{"name":"\\ud83d\\ude00 学生 😀"}'],
    ['escaped quotes and backslashes around colons', '{"a\\\\":"b\\":c","d":"\\\\\\":"}'],
    ['the same name in sibling objects', '{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}'],
  ])('accepts %s', (_name, text) => {
    expect(refusal(text)).toBeNull();
    expect(scanRefusal(text)).toBeNull();
  });

  it('the walk and the scan agree on 3,000 random documents (seeded)', () => {
    let s = 12345;
    const rnd = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
    const pick = <T,>(a: T[]): T => a[Math.floor(rnd() * a.length)];
    const strs = ['a', 'b', 'a:b', '"', '\\', ':', '\u0000', '\t', '\u007f', '\u202e', '\ud800', '😀', '学', ''];
    const lit = (): string => pick([
      () => JSON.stringify(pick(strs)), () => String(Math.floor(rnd() * 1000)), () => pick(['1e309', '-1e999', '1e308', '0.5', 'true', 'null']),
      () => JSON.stringify(pick(strs)).replace(/[a-z]/, (c) => `\\u00${c.charCodeAt(0).toString(16)}`),
    ])();
    const gen = (depth: number): string => {
      if (depth > 36 || rnd() < 0.3) return lit();
      if (rnd() < 0.5) return `[${Array.from({ length: Math.floor(rnd() * 3) }, () => gen(depth + 1)).join(',')}]`;
      const keys = Array.from({ length: Math.floor(rnd() * 4) }, () => (rnd() < 0.8 ? pick(['x', 'y', 'z', 'a:b']) : pick(strs)));
      return `{${keys.map((k) => `${JSON.stringify(k)} : ${gen(depth + 1)}`).join(',')}}`;
    };
    let refused = 0; let kept = 0;
    for (let i = 0; i < 3000; i++) {
      const text = gen(rnd() < 0.05 ? 30 : 0);
      const a = refusal(text); const b = scanRefusal(text);
      expect(a === null, `${text}\nwalk: ${a}\nscan: ${b}`).toBe(b === null);
      if (a) refused++; else kept++;
    }
    expect(refused).toBeGreaterThan(300);
    expect(kept).toBeGreaterThan(300);
  });
});

describe('headers', () => {
  it('Idempotency-Key: 8-128 of [A-Za-z0-9_-], a quoted form unquoted', () => {
    expect(idempotencyKey({})).toBeNull();
    expect(idempotencyKey({ 'idempotency-key': 'abcDEF12-_' })).toBe('abcDEF12-_');
    expect(idempotencyKey({ 'idempotency-key': '"8e03978e-40d5-43e8"' })).toBe('8e03978e-40d5-43e8');
    for (const bad of ['short', 'x'.repeat(129), 'has space x', 'émoji-key-1', '../../etc/x']) expect(() => idempotencyKey({ 'idempotency-key': bad })).toThrow(/Idempotency-Key header takes 8 to 128/);
  });

  it('X-Vmemlab-Name: percent-encoded UTF-8, at most 60 characters, no controls', () => {
    expect(displayName({})).toBeNull();
    expect(displayName({ 'x-vmemlab-name': encodeURIComponent('  Ana María  ') })).toBe('Ana María');
    expect(displayName({ 'x-vmemlab-name': encodeURIComponent('山田 太郎') })).toBe('山田 太郎');
    expect(displayName({ 'x-vmemlab-name': '%20%20' })).toBeNull();
    expect(displayName({ 'x-vmemlab-name': encodeURIComponent('😀'.repeat(60)) })).toBe('😀'.repeat(60));
    expect(() => displayName({ 'x-vmemlab-name': encodeURIComponent('x'.repeat(61)) })).toThrow(/at most 60 characters \(this one has 61\)/);
    expect(() => displayName({ 'x-vmemlab-name': '%E0%A4%A' })).toThrow(/not percent-encoded UTF-8/);
    expect(() => displayName({ 'x-vmemlab-name': '%FF' })).toThrow(/not percent-encoded UTF-8/);
    expect(() => displayName({ 'x-vmemlab-name': encodeURIComponent('a\u0000b') })).toThrow(/U\+0000/);
    expect(() => displayName({ 'x-vmemlab-name': encodeURIComponent('a\nb') })).toThrow(/U\+000A/);
    expect(() => displayName({ 'x-vmemlab-name': encodeURIComponent('\u202eevil') })).toThrow(/U\+202E/);
    expect(() => displayName({ 'x-vmemlab-name': encodeURIComponent('two\u2028lines') })).toThrow(/U\+2028/);
  });
});

describe('settings', () => {
  const err = (f: () => unknown) => { try { f(); return null; } catch (e) { expect(e).toBeInstanceOf(ConfigError); return (e as Error).message; } };

  it('rate limits: whole numbers, 0 turns each one off, anything else stops the server', () => {
    expect(rateLimitFromEnv({})).toEqual({ max: 600, uploadMax: 60, createMax: 20, writeMax: 1200, joinMax: 120, timeWindow: '1 minute' });
    expect(rateLimitFromEnv({ VMEMLAB_WRITE_RATE: '0', VMEMLAB_JOIN_MAX: '7' })).toMatchObject({ writeMax: 0, joinMax: 7 });
    expect(err(() => rateLimitFromEnv({ VMEMLAB_WRITE_RATE: 'many' }))).toBe('VMEMLAB_WRITE_RATE="many": takes a whole number of progress records and joins per minute per client address; 0 turns this limit off');
    expect(err(() => rateLimitFromEnv({ VMEMLAB_JOIN_MAX: '-2' }))).toMatch(/^VMEMLAB_JOIN_MAX="-2": takes a whole number of joins per class per client address per hour/);
    expect(rateLimitFromEnv({ VMEMLAB_RATE_MAX: '0', VMEMLAB_UPLOAD_RATE: '0', VMEMLAB_CREATE_RATE: ' 5 ' })).toMatchObject({ max: 0, uploadMax: 0, createMax: 5 });
    for (const v of ['abc', '-1', '1.5', '1e3', '0x10']) {
      expect(err(() => rateLimitFromEnv({ VMEMLAB_RATE_MAX: v }))).toBe(`VMEMLAB_RATE_MAX=${JSON.stringify(v)}: takes a whole number of requests per minute per client; 0 turns this limit off`);
    }
    expect(err(() => rateLimitFromEnv({ VMEMLAB_UPLOAD_RATE: 'lots' }))).toMatch(/^VMEMLAB_UPLOAD_RATE="lots": /);
  });

  it('TRUST_PROXY: off, a hop count or trusted addresses; never every hop', () => {
    for (const v of [undefined, '', '0', 'false']) expect(parseTrustProxy(v)).toBe(false);
    const one = parseTrustProxy('1') as (a: string, i: number) => boolean;
    expect([one('10.0.0.1', 0), one('6.6.6.6', 1)]).toEqual([true, false]);
    const two = parseTrustProxy('2') as (a: string, i: number) => boolean;
    expect([two('x', 0), two('x', 1), two('x', 2)]).toEqual([true, true, false]);
    expect(parseTrustProxy(' 127.0.0.1, 10.0.0.0/8 ,::1,fd00::/8,loopback ')).toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', 'loopback']);
    for (const v of ['1', 'true', 'TRUE', '*', 'all']) if (v !== '1') expect(err(() => parseTrustProxy(v))).toMatch(/trusting every hop lets any client choose its address/);
    expect(err(() => parseTrustProxy('10.0.0.0/33'))).toMatch(/"10.0.0.0\/33" is not an address, a CIDR range/);
    expect(err(() => parseTrustProxy('proxy.example'))).toMatch(/"proxy.example" is not an address/);
    expect(err(() => parseTrustProxy('17'))).toMatch(/a hop count is 1 to 16/);
  });

  it('the rest: ports, sync modes, timeouts, database URLs', () => {
    const c = readConfig({});
    expect(c).toMatchObject({ port: 8080, host: '127.0.0.1', databaseUrl: '', sqliteSync: 'FULL', bodyTimeoutMs: 30_000, trustProxy: false, pgPool: 10, logger: false });
    expect(readConfig({ PORT: '0', VMEMLAB_SQLITE_SYNC: 'normal', VMEMLAB_BODY_TIMEOUT_S: '5' })).toMatchObject({ port: 0, sqliteSync: 'NORMAL', bodyTimeoutMs: 5000 });
    expect(err(() => readConfig({ PORT: '70000' }))).toBe('PORT="70000": takes a whole number from 0 to 65535');
    expect(err(() => readConfig({ VMEMLAB_SQLITE_SYNC: 'OFF; drop table results' }))).toMatch(/^VMEMLAB_SQLITE_SYNC=.*takes FULL .* or NORMAL/);
    expect(err(() => readConfig({ VMEMLAB_BODY_TIMEOUT_S: '0' }))).toMatch(/^VMEMLAB_BODY_TIMEOUT_S="0": takes a whole number of seconds/);
    expect(err(() => readConfig({ DATABASE_URL: 'mysql://x' }))).toMatch(/^DATABASE_URL: takes postgres:\/\//);
    expect(err(() => readConfig({ VMEMLAB_PG_POOL: '0' }))).toMatch(/^VMEMLAB_PG_POOL="0": takes a whole number from 1 to 1000/);
  });
});
