// Traces shared with a class (the "Your program" panel of the Results tab): a trace file
// recorded with hw-lab/run trace, uploaded with the replay report the uploader's page
// computed, so that the class compares programs. A Fastify plugin of its own (its table,
// its body parser and limit, its error messages); app.mjs registers it in one line.
//
//   POST   /api/classes/:code/traces            {"label", "report", "trace": base64} -> {id, receipt}
//   GET    /api/classes/:code/traces            the class's traces: label, header, report (?limit=N&cursor=C)
//   GET    /api/classes/:code/traces/:id/file   the trace as uploaded (application/octet-stream)
//   DELETE /api/classes/:code/traces/:id        the teacher token or the upload's receipt
//
// An upload is checked from end to end before it is stored, in a worker thread
// (trace-check.mjs): the size limit, the prefix and the header
// (hw-lab/schema/trace.schema.json), the gzip body inflated as a stream with a ceiling (no
// zip bomb) and every record walked (web/src/trace/format.mjs), the report against
// wasm-core/schema/replay.schema.json, and the report's trace figures against the trace's.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Transform } from 'node:stream';
import { Migrator } from 'kysely';
import { bearerHash, classLoader, hashToken, sameHash } from './classes.mjs';
import { unavailableAnswer } from './faults.mjs';
import { JSON_TYPE } from './limits.mjs';
import { keyset, PAGE_MAX, pageOf, pageParams } from './paging.mjs';
import { BODY_MAX, TRACE_MAX_ACCESSES, TRACE_MAX_BYTES, TraceCheckPool, TraceRefusal } from './trace-check.mjs';

export { TRACE_MAX_ACCESSES, TRACE_MAX_BYTES };
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;

const headerSchema = JSON.parse(readFileSync(new URL('../../hw-lab/schema/trace.schema.json', import.meta.url), 'utf8'));
const reportSchema = JSON.parse(readFileSync(new URL('../../wasm-core/schema/replay.schema.json', import.meta.url), 'utf8'));
export { headerSchema as traceHeaderSchema, reportSchema as replayReportSchema };

const REASONS = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 410: 'Gone', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable' };
const TraceHttpError = TraceRefusal;

/** A stream that reads a request body and passes none of it on (for a body that is
 * refused before it is read: the client may still send it whole and then get the answer).
 * receivedEncodedLength tells Fastify how much came, for its Content-Length check. */
function dropBody(payload) {
  const sink = new Transform({ transform(chunk, _enc, next) { sink.receivedEncodedLength += chunk.length; next(); } });
  sink.receivedEncodedLength = 0;
  payload.on('error', (e) => sink.destroy(e));
  return payload.pipe(sink);
}
const fail = (status, message) => { throw new TraceHttpError(status, message); };

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

/** @param {import('fastify').FastifyInstance} app @param {{ store: import('./db.mjs').Store, rateLimit?: false | { uploadMax: number, timeWindow: string } }} opts */
export async function traceRoutes(app, opts) {
  const { store } = opts;
  const db = store.db;
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableName: 'vmemlab_trace_migration', migrationLockTableName: 'vmemlab_trace_migration_lock' });
  const { error } = await migrator.migrateToLatest();
  if (error) throw new Error(`database migration of the traces table failed: ${error.message ?? error}`);

  // This plugin's own JSON parser: a trace upload is larger than a hw-lab result, and its
  // whole check (the same document checks as every other upload, limits.mjs, then the
  // trace and its report) runs in a worker thread (trace-check.mjs): the body goes there as
  // it came and what comes back is the row to store. The other trace routes take no body.
  const checker = new TraceCheckPool();
  app.addHook('onClose', async () => { await checker.close(); });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(JSON_TYPE, { parseAs: 'buffer', bodyLimit: BODY_MAX }, (req, buf, done) => {
    if (req.method !== 'POST') return done(null, undefined);
    if (!req.traceAdmitted) return done(checker.busy());
    checker.check(buf).then((row) => done(null, row), (e) => done(e));
  });
  app.setErrorHandler((err, req, reply) => {
    let status = err.statusCode ?? 500;
    let message = err.message;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') { status = 413; message = `the upload is larger than ${BODY_MAX} bytes; a trace may be at most ${TRACE_MAX_BYTES} bytes (record a shorter run: hw-lab/run trace --limit N)`; }
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') { status = 415; message = `send Content-Type: application/json (got ${JSON.stringify(req.headers['content-type'] ?? 'none')})`; }
    else if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') { status = 400; message = 'the body is empty; send {"label", "report", "trace"}'; }
    const away = status >= 500 && unavailableAnswer(err, reply);
    if (away) { req.log.warn({ err }, 'database unavailable'); status = 503; message = away; }
    else if (status >= 500 && !(err instanceof TraceHttpError)) { req.log.error(err); message = 'internal error; the trace was not stored'; }
    else if (status >= 500) req.log.warn({ err }, 'trace check failed');
    if (err.retryAfter) reply.header('Retry-After', String(err.retryAfter));
    if (status < 400 || status > 599) status = 500;
    reply.code(status).type('application/json').send({ statusCode: status, error: REASONS[status] ?? 'Error', message });
  });

  const loadClass = classLoader(store, fail);
  const idParam = (raw) => { const id = String(raw ?? ''); if (!ID_RE.test(id)) fail(400, 'a trace id is 1-32 letters, digits, "-" or "_"'); return id; };
  // VMEMLAB_UPLOAD_RATE (uploadMax) 0 turns this route's limit off, as for result uploads.
  const rl = opts.rateLimit;
  const limit = rl ? { config: { rateLimit: rl.uploadMax > 0 ? { max: rl.uploadMax, timeWindow: rl.timeWindow } : false } } : {};
  const origin = (req) => `${req.protocol}://${req.headers.host ?? 'localhost'}`;

  // Before the body is read: the class is looked up (an upload to a class that does not
  // exist is answered without reading or checking it) and the upload takes a place among
  // those in flight. Without one (the checker busy) its body is read and dropped as it
  // comes, never kept, and the answer is 503 with Retry-After; the place is given back once
  // the answer has gone out or the client has gone.
  app.decorateRequest('traceClass', null);
  app.decorateRequest('traceAdmitted', false);
  const release = async (req) => { if (req.traceAdmitted) { req.traceAdmitted = false; checker.release(); } };
  const uploadOpts = {
    ...limit, bodyLimit: BODY_MAX,
    preParsing: async (req, _reply, payload) => {
      req.traceClass = await loadClass(req.params.code);
      req.traceAdmitted = checker.admit();
      return req.traceAdmitted ? payload : dropBody(payload);
    },
    onResponse: release,
    onRequestAbort: release,
  };
  app.post('/api/classes/:code/traces', uploadOpts, async (req, reply) => {
    const cls = req.traceClass ?? await loadClass(req.params.code);
    const b = req.body;
    if (!b || typeof b !== 'object' || typeof b.trace !== 'string') fail(415, 'send {"label": "...", "report": {...}, "trace": "<the .vmtrace file, base64>"} as application/json');
    const id = randomBytes(9).toString('base64url');
    const receipt = randomBytes(16).toString('base64url');
    const row = {
      id, class_code: cls.code, receipt_hash: hashToken(receipt), created_at: new Date().toISOString(), label: b.label,
      header: b.header, report: b.report, trace: b.trace,
    };
    // SQLite: through the writer thread, like every other write (sqlite-writer.mjs).
    try {
      if (store.writer) await store.writer.run('insertTrace', row);
      else await db.insertInto('traces').values(row).execute();
    } catch (e) {
      // the class was deleted while the trace was checked: nothing was stored
      if (e?.code === '23503' || e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY') fail(410, `class ${cls.code} was deleted meanwhile; nothing was stored`);
      throw e;
    }
    reply.code(201);
    return { id, receipt, class: cls.code, url: `${origin(req)}/?view=results&class=${cls.code}`, message: `trace stored in class ${cls.code}; keep the receipt to delete it later` };
  });

  // A page at a time (paging.mjs): ?limit=N (1-500, default 500) and the next_cursor of
  // the previous page; next_cursor is null on the last.
  app.get('/api/classes/:code/traces', async (req) => {
    const cls = await loadClass(req.params.code);
    const page = pageParams(req.query);
    const rows = await keyset(db.selectFrom('traces').select(['id', 'created_at', 'label', 'header', 'report']).where('class_code', '=', cls.code), page).execute();
    const { rows: shown, next_cursor } = pageOf(rows, page);
    return {
      class: { code: cls.code, name: cls.name },
      traces: shown.map((r) => ({ id: r.id, created_at: r.created_at, label: r.label, header: JSON.parse(r.header), report: JSON.parse(r.report) })),
      next_cursor,
    };
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
    const h = bearerHash(req, fail);
    const row = await db.selectFrom('traces').select(['id', 'receipt_hash']).where('class_code', '=', cls.code).where('id', '=', id).executeTakeFirst();
    const teacher = sameHash(h, cls.teacher_hash);
    if (!row) fail(404, 'no such trace in this class (already deleted?)');
    if (!teacher && !sameHash(h, row.receipt_hash)) fail(403, 'this token is neither the teacher token of this class nor the receipt of this trace');
    if (store.writer) await store.writer.run('deleteTrace', { class_code: cls.code, id });
    else await db.deleteFrom('traces').where('class_code', '=', cls.code).where('id', '=', id).execute();
    return { deleted: id, by: teacher ? 'teacher' : 'student' };
  });
}

// The routes above in the server's OpenAPI description (openapi.mjs spreads these in).
const err = (...codes) => Object.fromEntries(codes.map((c) => [String(c), { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]));
const codeParam = { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$' } };
const idParamSpec = { name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 32 } };
const pageParamSpecs = [
  { name: 'limit', in: 'query', required: false, description: `traces per page (default and most: ${PAGE_MAX})`, schema: { type: 'integer', minimum: 1, maximum: PAGE_MAX } },
  { name: 'cursor', in: 'query', required: false, description: 'the next_cursor of the previous page, as it came', schema: { type: 'string', maxLength: 120, pattern: '^[A-Za-z0-9_-]+$' } },
];
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
          ...err(400, 404, 409, 413, 415, 422, 429, 503),
        },
      },
      get: {
        operationId: 'listTraces', summary: 'The class\'s traces, a page at a time in upload order: label, header and report of each (no files, no tokens)', parameters: [codeParam, ...pageParamSpecs],
        responses: {
          200: {
            description: 'one page of traces; next_cursor is null on the last page',
            content: { 'application/json': { schema: {
              type: 'object', required: ['class', 'traces', 'next_cursor'],
              properties: {
                class: { type: 'object', properties: { code: { type: 'string' }, name: { type: 'string' } } },
                traces: { type: 'array', maxItems: PAGE_MAX, items: { type: 'object', required: ['id', 'created_at', 'label', 'header', 'report'], properties: { id: { type: 'string' }, created_at: { type: 'string' }, label: { type: 'string' }, header: { $ref: '#/components/schemas/TraceHeader' }, report: { $ref: '#/components/schemas/ReplayReport' } } } },
                next_cursor: { type: ['string', 'null'], description: 'send as cursor for the next page; null on the last' },
              },
            } } },
          },
          ...err(400, 404),
        },
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
