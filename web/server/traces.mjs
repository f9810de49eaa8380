// Traces shared with a class (the "Your program" panel of the Results tab): a trace file
// recorded with hw-lab/run trace, uploaded with the replay report the uploader's page
// computed, so that the class compares programs. A Fastify plugin of its own (its table,
// its body parser and limit, its error messages); app.mjs registers it in one line.
//
//   POST   /api/classes/:code/traces            {"label", "report", "trace": base64} -> {id, receipt}
//   GET    /api/classes/:code/traces            the class's traces: label, header, report
//   GET    /api/classes/:code/traces/:id/file   the trace as uploaded (application/octet-stream)
//   DELETE /api/classes/:code/traces/:id        the teacher token or the upload's receipt
//
// An upload is checked from end to end before it is stored: the size limit, the prefix and
// the header (hw-lab/schema/trace.schema.json), the gzip body inflated with a ceiling (no
// zip bomb) and every record walked (web/src/trace/format.mjs), the report against
// wasm-core/schema/replay.schema.json, and the report's trace figures against the trace's.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import Ajv2020 from 'ajv/dist/2020.js';
import { Migrator } from 'kysely';
import { checkBody, readHeader, TraceFormatError } from '../src/trace/format.mjs';
import { unavailableAnswer } from './faults.mjs';
import { checkJson, JSON_TYPE } from './limits.mjs';

export const TRACE_MAX_BYTES = Number(process.env.VMEMLAB_TRACE_MAX_BYTES ?? 4 * 2 ** 20);
/** The most accesses an uploaded trace may hold (the recorder's default limit). */
export const TRACE_MAX_ACCESSES = 20_000_000;
const BODY_MAX = Math.ceil(TRACE_MAX_BYTES * 4 / 3) + 256 * 1024;   // base64 and the report
const CODE_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$/;
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const B64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

const headerSchema = JSON.parse(readFileSync(new URL('../../hw-lab/schema/trace.schema.json', import.meta.url), 'utf8'));
const reportSchema = JSON.parse(readFileSync(new URL('../../wasm-core/schema/replay.schema.json', import.meta.url), 'utf8'));
const ajv = new Ajv2020({ allErrors: true, strict: false });
const validHeader = ajv.compile(headerSchema);
const validReport = ajv.compile(reportSchema);
export { headerSchema as traceHeaderSchema, reportSchema as replayReportSchema };

const REASONS = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable' };
class TraceHttpError extends Error {
  constructor(statusCode, message) { super(message); this.statusCode = statusCode; }
}
const fail = (status, message) => { throw new TraceHttpError(status, message); };
const hash = (t) => createHash('sha256').update(t).digest('hex');
const sameHash = (a, b) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

const migrations = {
  '001_traces': {
    async up(db) {
      await db.schema.createTable('traces')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('class_code', 'varchar(64)', (c) => c.notNull().references('classes.code').onDelete('cascade'))
        .addColumn('receipt_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('label', 'varchar(200)', (c) => c.notNull())
        .addColumn('header', 'text', (c) => c.notNull())
        .addColumn('report', 'text', (c) => c.notNull())
        .addColumn('trace', 'text', (c) => c.notNull())      // base64: the same column type in SQLite and PostgreSQL
        .execute();
      await db.schema.createIndex('traces_class').on('traces').columns(['class_code', 'created_at']).execute();
    },
    async down(db) { await db.schema.dropTable('traces').execute(); },
  },
};

/** The problems ajv found, as "field: problem" (at most 6). */
const problems = (errors) => (errors ?? []).filter((e) => e.keyword !== 'if').slice(0, 6)
  .map((e) => `${e.instancePath || '(top)'}: ${e.keyword === 'additionalProperties' ? `has an unknown field "${e.params.additionalProperty}"` : e.message}`).join('; ');

/** Checks an uploaded trace and the report that came with it; returns the header. */
export function checkUpload(bytes, report) {
  if (bytes.length > TRACE_MAX_BYTES) fail(413, `the trace is ${bytes.length} bytes, more than this server keeps (${TRACE_MAX_BYTES} bytes); record a shorter run (hw-lab/run trace --limit N)`);
  let header, bodyOffset;
  try {
    ({ header, bodyOffset } = readHeader(bytes, bytes.length));
  } catch (e) { if (e instanceof TraceFormatError) fail(422, e.message); throw e; }
  if (!validHeader(header)) fail(422, `the trace header does not match the trace schema: ${problems(validHeader.errors)}`);
  if (header.accesses > TRACE_MAX_ACCESSES) fail(413, `the trace holds ${header.accesses} accesses, more than the ${TRACE_MAX_ACCESSES} this server keeps; record a shorter run (hw-lab/run trace --limit N)`);
  let raw;
  try {
    // an access takes at most 21 bytes, the end record 11: a body that inflates further is refused
    raw = gunzipSync(bytes.subarray(bodyOffset), { maxOutputLength: 21 * header.accesses + 11 });
  } catch (e) {
    if (e.code === 'ERR_BUFFER_TOO_LARGE' || e.code === 'ERR_OUT_OF_RANGE') fail(422, 'the trace is corrupt: its body inflates to more than its accesses can take');
    fail(422, `the trace body is not valid gzip data, or it is cut short (${e.message}): the file is corrupt or truncated`);
  }
  try {
    checkBody(raw, header);
  } catch (e) { if (e instanceof TraceFormatError) fail(422, e.message); throw e; }
  if (!validReport(report)) fail(422, `the report does not match the replay report schema: ${problems(validReport.errors)}`);
  const rt = report.trace;
  const same = rt.program === header.program && JSON.stringify(rt.args) === JSON.stringify(header.args) && rt.accesses === header.accesses &&
    rt.pages === header.pages && rt.partial === header.partial && ['load', 'store', 'fetch', 'modify'].every((k) => rt.counts[k] === header.counts[k]);
  if (!same) fail(422, 'the report is not the replay of this trace: its trace figures (program, arguments, accesses, pages, counts, partial) differ from the trace header\'s');
  if (report.modes.some((m) => m.accesses !== header.accesses)) fail(422, 'the report is not the replay of this trace: a mode counts another number of accesses than the trace holds');
  return header;
}

/** @param {import('fastify').FastifyInstance} app @param {{ store: import('./db.mjs').Store, rateLimit?: false | { uploadMax: number, timeWindow: string } }} opts */
export async function traceRoutes(app, opts) {
  const { store } = opts;
  const db = store.db;
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableName: 'vmemlab_trace_migration', migrationLockTableName: 'vmemlab_trace_migration_lock' });
  const { error } = await migrator.migrateToLatest();
  if (error) throw new Error(`database migration of the traces table failed: ${error.message ?? error}`);

  // This plugin's own JSON parser: a trace upload is larger than a hw-lab result.
  app.removeAllContentTypeParsers();
  // The same document checks as every other upload (limits.mjs: I-JSON, depth, control
  // characters), so that a label reads the same on both stores.
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer', bodyLimit: BODY_MAX }, (_req, buf, done) => {
    let text; let json;
    try { text = new TextDecoder('utf-8', { fatal: true }).decode(buf); } catch { return done(new TraceHttpError(400, 'the body is not valid UTF-8 text')); }
    try { json = JSON.parse(text); } catch (e) { return done(new TraceHttpError(400, `malformed JSON: ${e.message}`)); }
    try { checkJson(text, json, { ascii: buf.length === text.length }); } catch (e) { return done(e); }
    done(null, json);
  });
  app.setErrorHandler((err, req, reply) => {
    let status = err.statusCode ?? 500;
    let message = err.message;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') { status = 413; message = `the upload is larger than ${BODY_MAX} bytes; a trace may be at most ${TRACE_MAX_BYTES} bytes (record a shorter run: hw-lab/run trace --limit N)`; }
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') { status = 415; message = `send Content-Type: application/json (got ${JSON.stringify(req.headers['content-type'] ?? 'none')})`; }
    else if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') { status = 400; message = 'the body is empty; send {"label", "report", "trace"}'; }
    const away = status >= 500 && unavailableAnswer(err, reply);
    if (away) { req.log.warn({ err }, 'database unavailable'); status = 503; message = away; }
    else if (status >= 500) { req.log.error(err); message = 'internal error; the trace was not stored'; }
    if (status < 400 || status > 599) status = 500;
    reply.code(status).type('application/json').send({ statusCode: status, error: REASONS[status] ?? 'Error', message });
  });

  const loadClass = async (raw) => {
    const code = String(raw ?? '').trim();
    if (!CODE_RE.test(code)) fail(400, 'a class code is 2-64 letters, digits, "-" or "_"');
    const cls = await store.getClass(code.toUpperCase());
    if (!cls) fail(404, `there is no class with the code "${code.toUpperCase()}"; check the code your teacher gave you`);
    return cls;
  };
  const idParam = (raw) => { const id = String(raw ?? ''); if (!ID_RE.test(id)) fail(400, 'a trace id is 1-32 letters, digits, "-" or "_"'); return id; };
  const limit = opts.rateLimit ? { config: { rateLimit: { max: opts.rateLimit.uploadMax, timeWindow: opts.rateLimit.timeWindow } } } : {};
  const origin = (req) => `${req.protocol}://${req.headers.host ?? 'localhost'}`;

  app.post('/api/classes/:code/traces', limit, async (req, reply) => {
    const cls = await loadClass(req.params.code);
    const b = req.body;
    if (!b || typeof b !== 'object' || Array.isArray(b)) fail(b === undefined ? 415 : 400, 'send {"label": "...", "report": {...}, "trace": "<the .vmtrace file, base64>"} as application/json');
    const extra = Object.keys(b).filter((k) => !['label', 'report', 'trace'].includes(k));
    if (extra.length) fail(400, `unknown field ${JSON.stringify(extra[0])}; send {"label", "report", "trace"}`);
    if (b.label !== undefined && (typeof b.label !== 'string' || b.label.length > 80)) fail(400, '/label: must be a string of at most 80 characters');
    if (typeof b.trace !== 'string' || !b.trace || !B64_RE.test(b.trace) || b.trace.length % 4) fail(400, '/trace: must be the trace file in base64');
    if (!b.report || typeof b.report !== 'object') fail(400, '/report: is required (the replay report of this trace)');
    const bytes = Buffer.from(b.trace, 'base64');
    const header = checkUpload(bytes, b.report);
    const label = (b.label ?? '').trim() || header.label || [header.program, ...header.args].join(' ').slice(0, 80);
    const id = randomBytes(9).toString('base64url');
    const receipt = randomBytes(16).toString('base64url');
    const row = {
      id, class_code: cls.code, receipt_hash: hash(receipt), created_at: new Date().toISOString(), label,
      header: JSON.stringify(header), report: JSON.stringify(b.report), trace: b.trace,
    };
    // SQLite: through the writer thread, like every other write (sqlite-writer.mjs).
    if (store.writer) await store.writer.run('insertTrace', row);
    else await db.insertInto('traces').values(row).execute();
    reply.code(201);
    return { id, receipt, class: cls.code, url: `${origin(req)}/?view=results&class=${cls.code}`, message: `trace stored in class ${cls.code}; keep the receipt to delete it later` };
  });

  app.get('/api/classes/:code/traces', async (req) => {
    const cls = await loadClass(req.params.code);
    const rows = await db.selectFrom('traces').select(['id', 'created_at', 'label', 'header', 'report'])
      .where('class_code', '=', cls.code).orderBy('created_at').orderBy('id').execute();
    return { class: { code: cls.code, name: cls.name }, traces: rows.map((r) => ({ id: r.id, created_at: r.created_at, label: r.label, header: JSON.parse(r.header), report: JSON.parse(r.report) })) };
  });

  app.get('/api/classes/:code/traces/:id/file', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    const row = await db.selectFrom('traces').select(['id', 'trace']).where('class_code', '=', cls.code).where('id', '=', idParam(req.params.id)).executeTakeFirst();
    if (!row) fail(404, 'no such trace in this class');
    reply.type('application/octet-stream').header('Content-Disposition', `attachment; filename="${row.id}.vmtrace"`);
    return Buffer.from(row.trace, 'base64');
  });

  app.delete('/api/classes/:code/traces/:id', async (req) => {
    const cls = await loadClass(req.params.code);
    const id = idParam(req.params.id);
    const h = req.headers.authorization;
    if (!h) fail(401, 'this needs a token: send "Authorization: Bearer <teacher token or receipt>"');
    const m = /^Bearer\s+([A-Za-z0-9_-]{10,100})$/.exec(h);
    if (!m) fail(401, 'the Authorization header must be "Bearer <token>"');
    const row = await db.selectFrom('traces').select(['id', 'receipt_hash']).where('class_code', '=', cls.code).where('id', '=', id).executeTakeFirst();
    const teacher = sameHash(hash(m[1]), cls.teacher_hash);
    if (!row) fail(404, 'no such trace in this class (already deleted?)');
    if (!teacher && !sameHash(hash(m[1]), row.receipt_hash)) fail(403, 'this token is neither the teacher token of this class nor the receipt of this trace');
    if (store.writer) await store.writer.run('deleteTrace', { class_code: cls.code, id });
    else await db.deleteFrom('traces').where('class_code', '=', cls.code).where('id', '=', id).execute();
    return { deleted: id, by: teacher ? 'teacher' : 'student' };
  });
}

// The routes above in the server's OpenAPI description (openapi.mjs spreads these in).
const err = (...codes) => Object.fromEntries(codes.map((c) => [String(c), { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]));
const codeParam = { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$' } };
const idParamSpec = { name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 32 } };
export const traceOpenapi = {
  schemas: {
    TraceHeader: headerSchema,
    ReplayReport: reportSchema,
    TraceUpload: {
      type: 'object', required: ['report', 'trace'], additionalProperties: false,
      properties: {
        label: { type: 'string', maxLength: 80, description: 'a short name for the program (default: the trace header\'s label or command line)' },
        report: { $ref: '#/components/schemas/ReplayReport' },
        trace: { type: 'string', contentEncoding: 'base64', description: `the .vmtrace file as hw-lab/run trace wrote it, base64 (at most ${TRACE_MAX_BYTES} bytes decoded, at most ${TRACE_MAX_ACCESSES} accesses)` },
      },
    },
  },
  paths: {
    '/api/classes/{code}/traces': {
      post: {
        operationId: 'uploadTrace', summary: 'Share a program\'s trace with a class, with the replay report the page computed (checked against the trace, record by record)', parameters: [codeParam],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/TraceUpload' } } } },
        responses: {
          201: { description: 'stored; keep the receipt to delete it later', content: { 'application/json': { schema: { type: 'object', required: ['id', 'receipt', 'message'], properties: { id: { type: 'string' }, receipt: { type: 'string' }, class: { type: 'string' }, url: { type: 'string' }, message: { type: 'string' } } } } } },
          ...err(400, 404, 413, 415, 422, 429),
        },
      },
      get: {
        operationId: 'listTraces', summary: 'The class\'s traces: label, header and report of each (no files, no tokens)', parameters: [codeParam],
        responses: { 200: { description: 'traces', content: { 'application/json': { schema: { type: 'object' } } } }, ...err(400, 404) },
      },
    },
    '/api/classes/{code}/traces/{id}/file': {
      get: { operationId: 'getTraceFile', summary: 'One trace file, as uploaded', parameters: [codeParam, idParamSpec], responses: { 200: { description: 'the .vmtrace file', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }, ...err(400, 404) } },
    },
    '/api/classes/{code}/traces/{id}': {
      delete: {
        operationId: 'deleteTrace', summary: 'Remove a trace: the teacher token or that upload\'s receipt', parameters: [codeParam, idParamSpec], security: [{ token: [] }],
        responses: { 200: { description: 'deleted', content: { 'application/json': { schema: { type: 'object' } } } }, ...err(400, 401, 403, 404) },
      },
    },
  },
};
