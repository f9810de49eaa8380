// The class server's settings, read once from the environment and checked: a value that
// is not what its variable takes stops the server with one line that names the variable,
// the value and what it takes (main.mjs prints it). Every variable is described in
// web/server/README.md.
import { isIP } from 'node:net';

export class ConfigError extends Error {}

const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** A whole number in [min, max]; unset or empty gives `dflt`. */
function whole(env, name, dflt, { min = 0, max = Number.MAX_SAFE_INTEGER, takes } = {}) {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return dflt;
  const v = raw.trim();
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
    throw new ConfigError(`${name}=${JSON.stringify(raw)}: ${takes ?? `takes a whole number from ${min} to ${max}`}`);
  }
  return Number(v);
}

/** A requests-per-minute limit: a whole number, 0 turns that limit off. */
const perMinute = (env, name, dflt) => whole(env, name, dflt, { max: 1_000_000, takes: 'takes a whole number of requests per minute per client; 0 turns this limit off' });

/**
 * TRUST_PROXY: unset, "" or "0": no proxy (the socket's address is the client).
 * A whole number n >= 1: trust the nearest n hops of X-Forwarded-For (only safe when every
 * request comes through the proxy, e.g. the server listens on 127.0.0.1 behind it).
 * A comma-separated list of addresses, CIDR ranges and the names loopback, linklocal,
 * uniquelocal: X-Forwarded-For is read only from those peers.
 * "true" / "*" (trust every hop) is refused: any client could then pick its own address.
 * Returns what Fastify's trustProxy option takes: false, a function or a list of strings.
 */
export function parseTrustProxy(raw) {
  const v = (raw ?? '').trim();
  if (v === '' || v === '0' || /^false$/i.test(v)) return false;
  if (/^(true|yes|on|all|\*)$/i.test(v)) {
    throw new ConfigError(`TRUST_PROXY=${JSON.stringify(raw)}: trusting every hop lets any client choose its address (and bypass rate limits); give the number of proxies in front of the server (1 for one reverse proxy) or their addresses (e.g. 127.0.0.1 or 10.0.0.0/8)`);
  }
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops > 16) throw new ConfigError(`TRUST_PROXY=${JSON.stringify(raw)}: a hop count is 1 to 16`);
    // proxy-addr calls this with each address from the socket outwards and its index.
    const trust = (_addr, i) => i < hops;
    trust.description = `${hops} hop${hops > 1 ? 's' : ''}`;
    return trust;
  }
  const list = v.split(',').map((s) => s.trim()).filter(Boolean);
  for (const item of list) {
    if (PROXY_RANGES.has(item)) continue;
    const [addr, bits, extra] = item.split('/');
    const fam = isIP(addr);
    const okBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (fam === 6 ? 128 : 32));
    if (!fam || !okBits || extra !== undefined) {
      throw new ConfigError(`TRUST_PROXY=${JSON.stringify(raw)}: ${JSON.stringify(item)} is not an address, a CIDR range (10.0.0.0/8) or one of loopback, linklocal, uniquelocal; or give a hop count`);
    }
  }
  return list;
}

/** Rate limits from the environment (per client address, per minute; 0 = that limit off). */
export function rateLimitFromEnv(env = process.env) {
  return {
    max: perMinute(env, 'VMEMLAB_RATE_MAX', 600),
    uploadMax: perMinute(env, 'VMEMLAB_UPLOAD_RATE', 60),
    createMax: perMinute(env, 'VMEMLAB_CREATE_RATE', 20),
    // the write budget (budget.mjs; progress.mjs's and the course's routes): records and joins per minute per client address, and
    // joins per class per client address per hour
    writeMax: whole(env, 'VMEMLAB_WRITE_RATE', 1200, { max: 1_000_000, takes: 'takes a whole number of progress records and joins per minute per client address; 0 turns this limit off' }),
    joinMax: whole(env, 'VMEMLAB_JOIN_MAX', 120, { max: 1_000_000, takes: 'takes a whole number of joins per class per client address per hour; 0 turns this limit off' }),
    timeWindow: '1 minute',
  };
}

/** VMEMLAB_CLASS_KEY: unset or empty: anyone who reaches the server may create a class;
 * else 8 to 200 printable ASCII characters without spaces (sent in a header). */
function classKey(env) {
  const v = (env.VMEMLAB_CLASS_KEY ?? '').trim();
  if (v === '') return null;
  if (!/^[\x21-\x7e]{8,200}$/.test(v)) throw new ConfigError('VMEMLAB_CLASS_KEY: takes 8 to 200 printable ASCII characters without spaces (a passphrase teachers type once); unset: anyone who reaches the server may create classes');
  return v;
}

/** A switch: unset, "" or "0" off, "1" on. */
function onOff(env, name, takes) {
  const v = (env[name] ?? '').trim();
  if (v !== '' && v !== '0' && v !== '1') throw new ConfigError(`${name}=${JSON.stringify(env[name])}: ${takes}`);
  return v === '1';
}

/** Is `host` (what the server listens on) reachable only from this machine? */
export const loopbackOnly = (host) => /^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$/i.test(host);

/** Every setting main.mjs needs; throws ConfigError on the first bad one. */
export function readConfig(env = process.env) {
  const sync = (env.VMEMLAB_SQLITE_SYNC ?? 'FULL').trim().toUpperCase() || 'FULL';
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new ConfigError(`VMEMLAB_SQLITE_SYNC=${JSON.stringify(env.VMEMLAB_SQLITE_SYNC)}: takes FULL (a commit survives a power cut) or NORMAL (survives a crash of the server)`);
  const log = (env.VMEMLAB_LOG ?? '').trim();
  if (log !== '' && log !== '0' && log !== '1') throw new ConfigError(`VMEMLAB_LOG=${JSON.stringify(env.VMEMLAB_LOG)}: takes 1 (log every request as JSON lines) or 0`);
  const url = (env.DATABASE_URL ?? '').trim();
  if (url && !/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('DATABASE_URL: takes postgres://user@host:port/database (unset for SQLite)');
  return {
    port: whole(env, 'PORT', 8080, { max: 65535 }),
    host: (env.HOST ?? '').trim() || '127.0.0.1',
    databaseUrl: url,
    dataDir: env.VMEMLAB_DATA_DIR || undefined,
    sqliteSync: sync,
    sqliteMaxMiB: whole(env, 'VMEMLAB_SQLITE_MAX_MB', 0, { max: 1 << 24, takes: 'takes a whole number of MiB; 0 or unset: no cap' }),
    pgPool: whole(env, 'VMEMLAB_PG_POOL', 10, { min: 1, max: 1000 }),
    bodyTimeoutMs: 1000 * whole(env, 'VMEMLAB_BODY_TIMEOUT_S', 30, { min: 1, max: 3600, takes: 'takes a whole number of seconds from 1 to 3600' }),
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    rateLimit: rateLimitFromEnv(env),
    logger: log === '1',
    serverTiming: onOff(env, 'VMEMLAB_SERVER_TIMING', 'takes 1 (progress answers carry a Server-Timing header; the process prints its event loop delay and database pool waits when it stops) or 0'),
    classKey: classKey(env),
    // Classes with no write for this many days are deleted with everything in them
    // (retention.mjs, checked hourly); 0: kept until their teacher deletes them.
    retentionDays: whole(env, 'VMEMLAB_RETENTION_DAYS', 0, { max: 36500, takes: 'takes a whole number of days from 0 to 36500: a class with no upload or change for that long is deleted with everything in it; 0 or unset: classes are kept until their teacher deletes them' }),
  };
}
