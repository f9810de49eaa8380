// The class server: the built app (web/dist) plus the results API. buildServer() returns
// a Fastify instance that is not listening yet (tests use inject(); main.mjs listens).
import { createHmac, randomBytes, randomInt } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import helmet from '@fastify/helmet';
import rateLimit from '@fastify/rate-limit';
import fastifyStatic from '@fastify/static';
import Ajv2020 from 'ajv/dist/2020.js';
import { bearerHash, classLoader, CODE_RE, hashToken, sameHash } from './classes.mjs';
import { loopbackOnly, rateLimitFromEnv } from './config.mjs';
import { bomParam, csvExport } from './csv.mjs';
import { openStore } from './db.mjs';
export { hashToken }; // the tests compare stored hashes with it
import { unavailable, unavailableAnswer } from './faults.mjs';
import { JSON_TYPE, checkJson, clientErrorHandler, displayName, idempotencyKey, textProblem } from './limits.mjs';
import { openapi } from './openapi.mjs';
import { Pacer } from './pacer.mjs';
import { studentAddresses } from './netinfo.mjs';
import { pageParams } from './paging.mjs';
import { summarize, METRICS } from '../src/results/extract.mjs';
import { traceRoutes } from './traces.mjs';
import { ServerTiming } from './timing.mjs';
import { progressRoutes } from './progress.mjs';
import { WriteBudget } from './budget.mjs';
import { dashboardRoutes } from './dashboard.mjs';
import { courseRoutes, OPEN_WHEN_CLOSED } from './course/routes.mjs';

export const BODY_LIMIT = 256 * 1024;
export const BODY_TIMEOUT_MS = 30_000;
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const CODE_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const distDir = fileURLToPath(new URL('../dist/', import.meta.url));
const guestDir = fileURLToPath(new URL('../../public/guest/', import.meta.url));

const resultSchema = JSON.parse(readFileSync(new URL('../../hw-lab/schema/result.schema.json', import.meta.url), 'utf8'));
// allErrors: false: an untrusted document is refused at its first problem; collecting
// every error of 80,000 bad list items once froze the server for minutes.
const ajv = new Ajv2020({ allErrors: false, strict: false });
const validateResult = ajv.compile(resultSchema);
/** The longest list (and object) and text a JSON body may hold anywhere, checked with the
 * document checks before any schema runs. A hw-lab result has lists of a few dozen items
 * and texts of a few hundred characters; the schema has each field's own bound. */
export const DOC_MAX_ITEMS = 1024;
export const DOC_MAX_STRING = 16384;

const newToken = () => randomBytes(16).toString('base64url'); // 128 bits
const newId = () => randomBytes(9).toString('base64url');
function newCode() {
  let s = '';
  for (let i = 0; i < 8; i++) s += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return `${s.slice(0, 4)}-${s.slice(4)}`;
}

export class HttpError extends Error {
  /** need: a word the page acts on (class_key: ask for the class key). */
  constructor(statusCode, message, error, need) { super(message); this.statusCode = statusCode; this.error = error; this.need = need; }
}
const REASONS = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 408: 'Request Timeout', 409: 'Conflict', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable' };

/** ajv errors as "field: problem" lines that name the field. */
export function schemaProblems(errors) {
  const seen = new Set(); const out = [];
  for (const e of errors ?? []) {
    if (e.keyword === 'if') continue;
    let where = e.instancePath || '(the document)';
    let msg = e.message ?? 'is invalid';
    if (e.keyword === 'required') { where = `${e.instancePath}/${e.params.missingProperty}`; msg = 'is required but missing'; }
    else if (e.keyword === 'additionalProperties') { where = `${e.instancePath}/${e.params.additionalProperty}`; msg = 'is not a field of this schema'; }
    else if (e.keyword === 'const') msg = `must be ${JSON.stringify(e.params.allowedValue)}`;
    else if (e.keyword === 'enum') msg = `must be one of ${e.params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    const line = `${where}: ${msg}`;
    if (!seen.has(line)) { seen.add(line); out.push(line); }
  }
  return out;
}

/**
 * Why a request target that names an API path is not written the one way the API takes, or
 * null (also for every path outside /api). The router decodes percent-escapes before it
 * matches a route, so without this `/%61pi/results` was a second spelling of the upload
 * route, and limits keyed on the raw URL did not count it.
 */
export function apiPathProblem(target) {
  const q = target.search(/[?#]/);
  let path = q === -1 ? target : target.slice(0, q);
  const absolute = /^[a-z][a-z0-9+.-]*:\/\/[^/]*/i.exec(path);
  if (absolute) path = path.slice(absolute[0].length) || '/';
  let decoded = path;
  try { decoded = decodeURIComponent(path); } catch { /* a bad escape: compare as sent */ }
  const segments = [];
  for (const seg of decoded.replace(/\\/g, '/').toLowerCase().split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') segments.pop(); else segments.push(seg);
  }
  if (segments[0] !== 'api') return null;
  if (absolute) return 'send the path alone (/api/...), not an absolute URL';
  if (/%|\/\/|\\|\/\.\.?(\/|$)/.test(path)) return `write the API path as it is documented (/api/openapi.json), without percent-escapes, doubled slashes, backslashes or dot segments`;
  if (!path.startsWith('/api/') && path !== '/api') return 'API paths start with /api/ in lower case';
  return null;
}

/**
 * @param {{ store?: import('./db.mjs').Store, databaseUrl?: string, dataDir?: string, logger?: boolean,
 *   rateLimit?: { max: number, uploadMax: number, createMax: number, timeWindow: string } | false, serveApp?: boolean,
 *   trustProxy?: false | string[] | ((addr: string, hop: number) => boolean), bodyTimeoutMs?: number,
 *   sqliteSync?: 'FULL'|'NORMAL', sqliteMaxMiB?: number, pgPool?: number }} opts
 * rateLimit: requests per minute per client address; 0 turns one limit off, false all of them
 * (default: VMEMLAB_RATE_MAX, VMEMLAB_UPLOAD_RATE, VMEMLAB_CREATE_RATE). trustProxy: what
 * config.mjs's parseTrustProxy returns (never "trust every hop"). classKey: when set,
 * POST /api/classes takes it in X-Vmemlab-Class-Key (VMEMLAB_CLASS_KEY). traces: false leaves out
 * the traces routes (traces.mjs), which need a store with a query builder (default true).
 * host: what main.mjs listens on (HOST), for GET /api/server's addresses.
 * dashboard: the dashboard event stream's timings and limits (dashboard.mjs's options;
 * tests shorten them). now: the store's clock (db.mjs; tests of retention move it on).
 */
export async function buildServer(opts = {}) {
  const bodyTimeoutMs = opts.bodyTimeoutMs ?? BODY_TIMEOUT_MS;
  const app = Fastify({
    logger: opts.logger ?? false,
    bodyLimit: BODY_LIMIT,
    trustProxy: opts.trustProxy ?? false,
    return503OnClosing: true,
    // The whole request (headers and body) must arrive within bodyTimeoutMs, else 408 and
    // the socket is closed: a client trickling a byte now and then holds nothing for long.
    requestTimeout: bodyTimeoutMs,
    http: { connectionsCheckingInterval: Math.min(5000, Math.max(100, Math.floor(bodyTimeoutMs / 4))), headersTimeout: bodyTimeoutMs },
    clientErrorHandler: clientErrorHandler(bodyTimeoutMs),
    ajv: { customOptions: { allErrors: false } },
  });
  const store = opts.store ?? await openStore({
    databaseUrl: opts.databaseUrl, dataDir: opts.dataDir, sqliteSync: opts.sqliteSync, sqliteMaxMiB: opts.sqliteMaxMiB, pgPool: opts.pgPool,
    log: (msg) => app.log.warn(msg), now: opts.now,
  });
  app.decorate('store', store);
  app.addHook('onClose', async () => { if (!opts.store) await store.close(); });

  const rl = opts.rateLimit === undefined ? rateLimitFromEnv(process.env) : opts.rateLimit;
  const limiting = rl && (rl.max > 0 || rl.uploadMax > 0 || rl.createMax > 0);

  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"], scriptSrc: ["'self'", "'wasm-unsafe-eval'"], styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:', 'blob:'], connectSrc: ["'self'"], workerSrc: ["'self'", 'blob:'], fontSrc: ["'self'"],
        objectSrc: ["'none'"], baseUri: ["'self'"], formAction: ["'self'"], frameAncestors: ["'none'"],
      },
    },
    // Cross-origin isolated (COOP same-origin, helmet's default, and COEP require-corp): the
    // trace replay's workers share one decoder through a SharedArrayBuffer (replay.md, "Modes
    // in parallel"). Everything the app loads is its own (scripts, wasm, fonts, guest
    // images, workers), so nothing is refused; CORP stays same-origin.
    crossOriginEmbedderPolicy: { policy: 'require-corp' },
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    referrerPolicy: { policy: 'no-referrer' },
  });
  if (limiting) {
    await app.register(rateLimit, {
      global: rl.max > 0, max: rl.max || 1, timeWindow: rl.timeWindow,
      // The app's own files are not limited: a classroom behind one address loads them
      // thirty times over in the first minute of a lab.
      // Keyed on the route that answers, not on the URL as sent: the router decodes
      // percent-escapes, so /%61pi/results reaches the upload route.
      allowList: (req) => !(req.routeOptions?.url ?? '/api/').startsWith('/api/'),
      errorResponseBuilder: (_req, ctx) => ({ statusCode: 429, error: 'Too Many Requests', message: `rate limit: at most ${ctx.max} requests per ${ctx.after} from one client; try again in ${Math.ceil(ctx.ttl / 1000)} s` }),
    });
  }

  // Every API path has one spelling: percent-escapes, doubled slashes, backslashes, dot
  // segments, another case or an absolute URL in front of an /api path are refused before
  // any route (and so before any limit is looked up) sees them.
  app.addHook('onRequest', async (req, reply) => {
    const problem = apiPathProblem(req.raw.url ?? '/');
    if (!problem) return undefined;
    reply.code(400).type('application/json').send({ statusCode: 400, error: 'Bad Request', message: problem });
    return reply;
  });

  // JSON bodies (application/json or */*+json, any parameters): kept as the exact text
  // (stored byte for byte), parsed once here and checked (limits.mjs) before any route sees
  // them, so that both stores get the same documents.
  // The parsing and checking run in the pacer's slices (pacer.mjs), as does the upload's
  // validation below.
  const pacer = new Pacer();
  const parseJson = (buf) => {
    let text; let json;
    try { text = new TextDecoder('utf-8', { fatal: true }).decode(buf); } catch { throw new HttpError(400, 'the body is not valid UTF-8 text (JSON is UTF-8 whatever the charset parameter says)'); }
    if (text.trim() === '') throw new HttpError(400, 'the body is empty; send a JSON document');
    try { json = JSON.parse(text); } catch (e) { throw new HttpError(400, `malformed JSON: ${e.message}`); }
    checkJson(text, json, { ascii: buf.length === text.length, maxItems: DOC_MAX_ITEMS, maxString: DOC_MAX_STRING }); // as many bytes as characters: all ASCII
    return { text, json };
  };
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (_req, buf, done) => {
    pacer.run(() => parseJson(buf)).then((body) => done(null, body), (e) => done(e));
  });

  app.setErrorHandler((err, req, reply) => {
    let status = err.statusCode ?? 500;
    let message = err.message;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') message = `the body is larger than ${BODY_LIMIT / 1024} KiB; a hw-lab result is a few tens of KiB`;
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') { status = 415; message = `send Content-Type: application/json (got ${JSON.stringify(req.headers['content-type'] ?? 'none')})`; }
    else if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') message = 'the body is empty; send a JSON document';
    else if (err.validation) { status = 400; message = `bad request: ${err.message}`; }
    const away = status >= 500 && unavailableAnswer(err, reply);
    if (away) {
      // The database is away or full: nothing is wrong with the request; it may be sent again.
      req.log.warn({ err }, 'database unavailable');
      status = 503;
      message = away;
      if (req.method === 'POST' && req.url.startsWith('/api/results')) message += '; send the upload again (with the same Idempotency-Key it is stored once)';
    } else if (status >= 500) { req.log.error(err); message = 'internal error; the request was not stored'; }
    if (status < 400 || status > 599) status = 500;
    reply.code(status).type('application/json').send({ statusCode: status, error: err.error ?? REASONS[status] ?? 'Error', message, ...(err.need && status < 500 ? { need: err.need } : {}) });
  });

  const fail = (status, message) => { throw new HttpError(status, message); };
  const bodyOf = (req) => {
    const b = req.body;
    if (!b || typeof b !== 'object' || !('json' in b)) fail(415, 'send the document with Content-Type: application/json');
    return b;
  };
  const loadClass = classLoader(store, fail);
  const bearer = (req) => bearerHash(req, fail);
  const teacherOnly = (req, cls) => {
    if (!sameHash(bearer(req), cls.teacher_hash)) fail(403, 'this token is not the teacher token of this class');
  };
  const origin = (req) => `${req.protocol}://${req.headers.host ?? 'localhost'}`;

  // A closed class takes no uploads: every POST, PUT or PATCH under /api/classes/{code}/
  // (results, traces, progress, joining: those of plugins too) but its reopening, and
  // POST /api/results to it, is refused before its body is read. Reads and deletions go on.
  const OPEN_ANYWAY = new Set(['/api/classes/:code/close', '/api/classes/:code/reopen', '/api/classes/:code/students/:id', ...OPEN_WHEN_CLOSED]);
  const classOfWrite = (req) => {
    const route = req.routeOptions?.url ?? '';
    if (route === '/api/results') { const h = req.headers['x-vmemlab-class']; return Array.isArray(h) ? h[0] : h; }
    return route.startsWith('/api/classes/:code') && !OPEN_ANYWAY.has(route) ? req.params?.code : undefined;
  };
  const known = (raw) => { const c = String(raw ?? '').trim(); return CODE_RE.test(c) ? c.toUpperCase() : null; };
  app.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'POST' && req.method !== 'PUT' && req.method !== 'PATCH') return undefined;
    const code = known(classOfWrite(req));
    if (!code) return undefined; // not a write in a class, or a code the route refuses itself
    const cls = await store.getClass(code);
    if (!cls?.closed_at) return undefined;
    reply.code(409).type('application/json').send({ statusCode: 409, error: 'Conflict', message: `class ${code} is closed: its teacher stopped uploads of results, traces and progress at ${cls.closed_at.slice(0, 10)} ${cls.closed_at.slice(11, 16)} UTC (what is stored can still be read); ask your teacher to reopen it`, need: 'open_class', closed_at: cls.closed_at });
    return reply;
  });
  // Each write in a class that succeeded (uploads, deletions, joining, progress: every
  // route's) is activity: VMEMLAB_RETENTION_DAYS counts from the last one. Recorded before
  // the answer goes out (db.mjs's touchClass writes at most once every few minutes per
  // class, so an upload seldom waits for it); a failure to record it fails nothing.
  app.addHook('onSend', async (req, reply, payload) => {
    if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS' || reply.statusCode >= 300) return payload;
    const route = req.routeOptions?.url ?? '';
    const code = known(route === '/api/results' ? classOfWrite(req) : route.startsWith('/api/classes/:code/') ? req.params?.code : undefined);
    if (code) await store.touchClass(code).catch((e) => req.log.warn({ err: e }, 'could not record the class\'s activity'));
    return payload;
  });

  // Writes in a class tell the class's dashboard streams (feed.mjs, set by dashboard.mjs):
  // on this process at once, on other instances through PostgreSQL's NOTIFY.
  const bus = { feeds: null, publish(code, what) { this.feeds?.publish(code, what); } };
  app.decorate('classEvents', bus); // the tests look at the feeds
  const perRoute = (max) => (limiting ? { config: { rateLimit: max > 0 ? { max, timeWindow: rl.timeWindow } : false } } : {});
  // Receipts of keyed uploads are derived, so that a repeat of the upload (same class, same
  // Idempotency-Key) gets the same receipt although only its hash is stored.
  const receiptFor = (code, key, id) => createHmac('sha256', store.receiptKey).update(`receipt\0${code}\0${key}\0${id}`).digest().subarray(0, 16).toString('base64url');

  // Answers within 1.5 s whatever the database does: a ping not answered by then says "down".
  app.get('/api/health', async () => {
    let database = 'up'; let timer;
    const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('no answer')), 1500); });
    try { await Promise.race([store.ping(), late]); } catch { database = 'down'; } finally { clearTimeout(timer); }
    return { ok: true, storage: store.kind, database };
  });
  app.get('/api/openapi.json', async () => openapi);

  // Where students can reach this server, for the page's join link and QR code: the
  // addresses of this machine's interfaces (netinfo.mjs; asked afresh each time, a laptop's
  // address changes with its network). Behind a reverse proxy (TRUST_PROXY) they are
  // addresses behind it, and the address the client used is the one to give students.
  app.get('/api/server', async (req) => {
    const host = opts.host ?? '127.0.0.1';
    const proxied = Array.isArray(opts.trustProxy) ? opts.trustProxy.length > 0 : !!opts.trustProxy;
    const port = app.server.address()?.port ?? opts.port ?? 8080;
    return {
      addresses: proxied ? [`${origin(req)}/`] : studentAddresses(host, port).map((a) => a.url),
      loopback_only: !proxied && loopbackOnly(host.replace(/^\[(.*)\]$/, '$1')),
      class_key: !!opts.classKey,
      proxied,
    };
  });

  // With VMEMLAB_CLASS_KEY set, creating a class takes the key (X-Vmemlab-Class-Key):
  // a server reachable by a whole network is not a place where anyone makes classes.
  const classKeyHash = opts.classKey ? hashToken(`class-key\0${opts.classKey}`) : null;
  app.post('/api/classes', perRoute(rl ? rl.createMax : 0), async (req, reply) => {
    if (classKeyHash) {
      const given = req.headers['x-vmemlab-class-key'];
      if (given === undefined || given === '') throw new HttpError(401, 'creating a class on this server needs its class key (the X-Vmemlab-Class-Key header; ask whoever runs the server: it is VMEMLAB_CLASS_KEY)', undefined, 'class_key');
      if (Array.isArray(given) || !sameHash(hashToken(`class-key\0${given}`), classKeyHash)) throw new HttpError(403, 'this is not the class key of this server; check it with whoever runs the server', undefined, 'class_key');
    }
    const { json } = bodyOf(req);
    if (!json || typeof json !== 'object' || Array.isArray(json)) fail(400, 'send {"name": "..."}');
    const extra = Object.keys(json).filter((k) => k !== 'name');
    if (extra.length) fail(400, `unknown field ${JSON.stringify(extra[0])}; send {"name": "..."}`);
    if (typeof json.name !== 'string' || !json.name.trim()) fail(400, '/name: is required (a non-empty string)');
    const name = json.name.trim();
    if (name.length > 200) fail(400, '/name: must be at most 200 characters');
    const bad = textProblem(name, { name: true });
    if (bad) fail(400, `/name: ${bad}`);
    const token = newToken();
    let code;
    for (let i = 0; ; i++) {
      code = newCode();
      try { await store.createClass({ code, name, teacher_hash: hashToken(token), created_at: new Date().toISOString() }); break; } catch (e) {
        if (i > 4 || unavailable(e)) throw e; // a code collision is retried; anything else after 5 tries is an error
      }
    }
    reply.code(201);
    return {
      code, name, teacher_token: token,
      join_url: `${origin(req)}/?view=results&class=${code}`,
      teacher_url: `${origin(req)}/?view=results&class=${code}#teacher=${token}`,
      message: 'Give students the join code. Keep the teacher link private: it is the only way to export or remove uploads.',
    };
  });

  app.post('/api/results', perRoute(rl ? rl.uploadMax : 0), async (req, reply) => {
    const header = req.headers['x-vmemlab-class'];
    if (header === undefined) fail(400, 'the X-Vmemlab-Class header with the class join code is missing');
    const cls = await loadClass(Array.isArray(header) ? header[0] : header);
    const key = idempotencyKey(req.headers);
    const studentName = displayName(req.headers);
    const { text, json } = bodyOf(req);
    const { s, summary, bodyHash } = await pacer.run(() => {
      if (!json || typeof json !== 'object' || Array.isArray(json)) fail(422, 'the document must be a JSON object (a hw-lab result)');
      if (json.format !== 'vmemlab-hw-lab-result') fail(422, `/format: must be "vmemlab-hw-lab-result"; this is not a hw-lab result file`);
      if (json.schema_version !== 1) fail(422, `/schema_version: ${JSON.stringify(json.schema_version ?? null)} is not supported; this server reads schema version 1`);
      if (!validateResult(json)) {
        const p = schemaProblems(validateResult.errors);
        fail(422, `the result does not match the hw-lab schema: ${p.slice(0, 8).join('; ')}${p.length > 8 ? `; and ${p.length - 8} more` : ''}`);
      }
      const sum = summarize(json);
      return { s: sum, summary: JSON.stringify(sum), bodyHash: hashToken(text) };
    });
    const idemHash = key ? hashToken(`${cls.code}\0${key}`) : null;
    const answer = (id, receipt, message) => ({ id, receipt, class: cls.code, url: `${origin(req)}/?view=results&class=${cls.code}&mine=${id}`, message });
    // A repeat (same class, same key) answers with the stored upload and stores nothing.
    const repeat = (prior) => {
      if (prior.body_hash !== bodyHash) fail(422, 'this Idempotency-Key was already used in this class for a different result file; send a new key with a new file');
      reply.code(200).header('Idempotent-Replayed', 'true');
      return answer(prior.id, receiptFor(cls.code, key, prior.id), `already stored in class ${cls.code} (this Idempotency-Key was sent before); nothing new was stored`);
    };
    // One round trip for a new upload: the insert stores nothing when the key is already
    // stored in this class, and only then is the stored upload looked up.
    const id = newId();
    const receipt = key ? receiptFor(cls.code, key, id) : newToken();
    const stored = await store.insertResult({
      id, class_code: cls.code, receipt_hash: hashToken(receipt), created_at: new Date().toISOString(),
      cpu_model: s.cpu_model, hypervisor: s.hypervisor, tdp: s.tdp, summary, body: text,
      student_name: studentName, idem_hash: idemHash, body_hash: bodyHash,
    }).catch((e) => {
      // The class was deleted (through another server instance) after it was looked up.
      if (e?.code === '23503' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') fail(404, `there is no class with the code "${cls.code}" any more; it was deleted`);
      throw e;
    });
    if (!stored) {
      // A repeat (a double click, a retry after a lost answer): the first one was stored.
      const prior = await store.findByIdem(cls.code, idemHash);
      if (!prior) throw new Error('an upload with this Idempotency-Key was neither stored nor found');
      return repeat(prior);
    }
    reply.code(201);
    return answer(id, receipt, `stored in class ${cls.code}; keep the receipt to delete this upload later`);
  });

  app.get('/api/classes/:code', async (req) => {
    const cls = await loadClass(req.params.code);
    return { code: cls.code, name: cls.name, created_at: cls.created_at, closed_at: cls.closed_at ?? null, uploads: await store.countResults(cls.code) };
  });

  // Everyone with the join code sees the distribution; students' names only the teacher
  // (the page sends the teacher token when it has one). A page at a time (paging.mjs:
  // `?limit=N&cursor=C`, at most 500 uploads); next_cursor is null on the last page.
  app.get('/api/classes/:code/results', async (req) => {
    const page = pageParams(req.query);
    const cls = await loadClass(req.params.code);
    const teacher = req.headers.authorization !== undefined;
    if (teacher) teacherOnly(req, cls);
    const { rows, next_cursor } = await store.listResultsPage(cls.code, page);
    return {
      class: { code: cls.code, name: cls.name, closed_at: cls.closed_at ?? null }, metrics: METRICS,
      results: rows.map((r) => ({ id: r.id, created_at: r.created_at, ...JSON.parse(r.summary), ...(teacher ? { name: r.student_name ?? null } : {}) })),
      next_cursor,
    };
  });

  const resultParam = (raw) => { const id = String(raw ?? ''); if (!ID_RE.test(id)) fail(400, 'an upload id is 1-32 letters, digits, "-" or "_"'); return id; };

  // The file as uploaded: for the teacher and for the uploader (its receipt). Not for the
  // whole class: hw-lab/run's Idempotency-Key is derived from the class code and the
  // file's bytes, and a repeat with key and body returns the receipt, so whoever could read
  // the bytes could delete the upload.
  app.get('/api/classes/:code/results/:id', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    const id = resultParam(req.params.id);
    const h = bearer(req);
    const row = await store.getResult(cls.code, id);
    if (!row) fail(404, 'no such upload in this class');
    if (!sameHash(h, cls.teacher_hash) && !sameHash(h, row.receipt_hash)) fail(403, 'this token is neither the teacher token of this class nor the receipt of this upload');
    reply.type('application/json');
    return row.body;
  });

  app.delete('/api/classes/:code/results/:id', async (req) => {
    const cls = await loadClass(req.params.code);
    const id = resultParam(req.params.id);
    const h = bearer(req);
    const row = await store.getResult(cls.code, id);
    const teacher = sameHash(h, cls.teacher_hash);
    if (!row) fail(404, 'no such upload in this class (already deleted?)');
    if (!teacher && !sameHash(h, row.receipt_hash)) fail(403, 'this token is neither the teacher token of this class nor the receipt of this upload');
    await store.deleteResult(cls.code, id);
    return { deleted: id, by: teacher ? 'teacher' : 'student' };
  });

  // Streamed a page of rows at a time (csv.mjs); a UTF-8 BOM first unless `?bom=0`.
  app.get('/api/classes/:code/export.csv', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    const bom = bomParam(req.query);
    const csv = await csvExport(store, cls.code, { bom });
    reply.type('text/csv; charset=utf-8').header('Content-Disposition', `attachment; filename="vmemlab-${cls.code}.csv"`);
    return reply.send(csv);
  });

  // The teacher closes a class (no more uploads of results, traces or progress; reads and
  // deletions go on), reopens it, or deletes it with everything in it: uploads, traces,
  // students' names and progress. Each takes the teacher token (none: 401, another: 403).
  app.post('/api/classes/:code/close', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    const closedAt = cls.closed_at ?? new Date(store.now()).toISOString();
    await store.setClosed(cls.code, closedAt);
    return { code: cls.code, closed_at: closedAt, message: `class ${cls.code} is closed: uploads are refused until you reopen it; everything stored can still be read` };
  });
  app.post('/api/classes/:code/reopen', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    await store.setClosed(cls.code, null);
    return { code: cls.code, closed_at: null, message: `class ${cls.code} is open for uploads again` };
  });
  app.delete('/api/classes/:code', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    const counts = await store.deleteClass(cls.code);
    if (!counts) fail(404, `there is no class with the code "${cls.code}" (already deleted?)`);
    bus.publish(cls.code, 'gone');
    return { deleted: cls.code, rows: counts, message: `class ${cls.code} was deleted with everything in it` };
  });

  // traces shared with a class (traces.mjs)
  if (opts.traces !== false) await app.register(traceRoutes, { store, rateLimit: rl });
  // students who joined a class and their exercise progress, graded again here (progress.mjs;
  // like the traces it needs a store with a query builder, so traces: false leaves it out too)
  // one write budget (budget.mjs) for the progress and the course routes: a client moving
  // from one to the other gains no room
  const writeBudget = new WriteBudget(rl);
  // VMEMLAB_SERVER_TIMING (timing.mjs): where a progress request's time goes.
  const serverTiming = opts.serverTiming ? new ServerTiming(store) : null;
  if (serverTiming) app.addHook('onClose', async () => { console.log(`vmemlab timing ${JSON.stringify(serverTiming.summary())}`); serverTiming.close(); });
  if (opts.traces !== false) await app.register(progressRoutes, { store, bus, rateLimit: rl, budget: writeBudget, serverTiming, ...opts.progress });
  // the teacher's dashboard of the students' progress (dashboard.mjs; reads progress.mjs's
  // tables, so it is there when they are)
  if (opts.traces !== false) await app.register(dashboardRoutes, { store, bus, ...opts.dashboard });
  // the course: roster, devices, grading settings and closing times, scores, the gradebook
  // (course/routes.mjs; its rows refer to progress.mjs's students)
  if (opts.traces !== false) await app.register(courseRoutes, { store, budget: writeBudget });

  // A class delete that a stop cut short (db.mjs: the class is marked first) is finished
  // now, once every plugin's tables exist; the class reads as gone meanwhile.
  app.addHook('onReady', async () => {
    if (typeof store.finishDeletes !== 'function') return; // a store a test made of parts
    store.finishDeletes((m) => app.log.warn(m)).catch((e) => app.log.warn({ err: e }, 'could not finish a class delete cut short; it is tried again at the next start'));
  });

  app.setNotFoundHandler((req, reply) => {
    const api = req.url.startsWith('/api/');
    reply.code(404).type('application/json').send({ statusCode: 404, error: 'Not Found', message: api ? `no API route ${req.method} ${req.url.split('?')[0]}; see /api/openapi.json` : 'not found' });
  });

  if (opts.serveApp !== false && existsSync(distDir)) {
    // Build-time brotli/gzip copies (web/scripts/compress.mjs) go out as they are. Hashed
    // assets never change under their name: cached for a year; the rest is revalidated.
    const statics = (root, prefix, extra) => app.register(fastifyStatic, {
      root, prefix, preCompressed: true, cacheControl: false, wildcard: true, ...extra,
      setHeaders: (reply, path) => reply.header('Cache-Control', /\/assets\/[^/]+-[\w-]{8}\.\w+(\.br|\.gz)?$/.test(path)
        ? 'public, max-age=31536000, immutable' : 'no-cache'),
    });
    await statics(distDir, '/', { index: ['index.html'] });
    // The live guest (make -C public guest): served from where it is built, not copied.
    if (existsSync(guestDir)) await statics(guestDir, '/guest/', { decorateReply: false, index: false });
  }
  return app;
}
