// The OpenAPI 3.1 description of the class server, served at /api/openapi.json and
// used by the fuzz test to generate requests.
import { readFileSync } from 'node:fs';
import { PAGE_MAX } from './paging.mjs';
import { traceOpenapi } from './traces.mjs';
import { progressOpenapi } from './progress.mjs';
import { dashboardOpenapi } from './dashboard.mjs';
import { courseOpenapi } from './course/openapi.mjs';

const resultSchema = JSON.parse(readFileSync(new URL('../../hw-lab/schema/result.schema.json', import.meta.url), 'utf8'));

const error = {
  type: 'object', required: ['statusCode', 'error', 'message'],
  properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } },
};
const errors = (...codes) => Object.fromEntries(codes.map((c) => [String(c), {
  description: c === 503 ? 'the database is away or its storage is full; nothing was stored; send the request again after Retry-After seconds'
    : c === 408 ? 'the request (headers and body) did not arrive within VMEMLAB_BODY_TIMEOUT_S (default 30 s); the connection is closed'
      : 'error',
  ...(c === 503 ? { headers: retryAfter } : {}),
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
}]));
const code = { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$' } };
const id = { name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 32 } };
const pageQuery = [
  { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: PAGE_MAX, default: PAGE_MAX }, description: `uploads per page (1 to ${PAGE_MAX}); a bad value is 400 naming limit` },
  { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: 120 }, description: 'the next_cursor of the previous page, as it was; absent for the first page; a bad one is 400 naming cursor' },
];
const retryAfter = { 'Retry-After': { description: 'seconds to wait before sending the request again', schema: { type: 'integer' } } };
const uploaded = (description, extra = {}) => ({
  description, headers: extra,
  content: { 'application/json': { schema: { type: 'object', required: ['id', 'receipt', 'class', 'url', 'message'], properties: { id: { type: 'string' }, receipt: { type: 'string', description: 'deletes this upload (Authorization: Bearer <receipt>); keep it' }, class: { type: 'string' }, url: { type: 'string' }, message: { type: 'string' } } } } },
});

/** Path items of two plugins, the methods of a path both describe put together. */
const mergePaths = (a, b) => Object.fromEntries([...new Set([...Object.keys(a), ...Object.keys(b)])].map((k) => [k, { ...a[k], ...b[k] }]));

export const openapi = {
  openapi: '3.1.0',
  info: {
    title: 'vmemlab class server',
    version: '1.0.0',
    description: 'A teacher creates a class and gets a join code and a private teacher token; students upload hw-lab results with the join code; everyone sees the class distribution; the teacher exports CSV and removes uploads; a student removes their own upload with the receipt token returned at upload. '
      + 'Request bodies are JSON (application/json or any application/*+json, with any parameters; the bytes must be UTF-8) and I-JSON (RFC 7493): a name given twice in one object, a number beyond a 64-bit float, an unpaired surrogate, nesting deeper than 32 levels or a control character in any text (tab and line breaks aside in values) is refused with 400 naming the JSON Pointer of the problem.',
  },
  servers: [{ url: '/' }],
  components: {
    securitySchemes: { token: { type: 'http', scheme: 'bearer', description: 'teacher token (class) or receipt token (one upload)' } },
    schemas: {
      Error: error,
      Result: resultSchema,
      ...traceOpenapi.schemas,
      ...progressOpenapi.schemas,
      ...dashboardOpenapi.schemas,
      ...courseOpenapi.schemas,
      Class: {
        type: 'object', required: ['code', 'name', 'created_at', 'uploads'],
        properties: { code: { type: 'string' }, name: { type: 'string' }, created_at: { type: 'string' }, closed_at: { type: ['string', 'null'], description: 'when its teacher closed it (uploads refused); null: open' }, uploads: { type: 'integer' } },
      },
    },
  },
  paths: {
    '/api/health': { get: { operationId: 'health', responses: { 200: { description: 'the server is up; database: "up" or "down" (then writes answer 503 until it is back)', content: { 'application/json': { schema: { type: 'object', properties: { ok: { type: 'boolean' }, storage: { enum: ['sqlite', 'postgres'] }, database: { enum: ['up', 'down'] } } } } } } } } },
    '/api/server': { get: { operationId: 'server', summary: 'Where students reach this server', responses: { 200: { description: 'addresses: the http://ADDRESS:PORT/ links students on other machines can open (this machine\'s interface addresses when it listens on 0.0.0.0 or ::; behind a reverse proxy, the address this request came to); loopback_only: only this machine reaches it (HOST=127.0.0.1); class_key: creating a class needs VMEMLAB_CLASS_KEY; proxied: TRUST_PROXY is set', content: { 'application/json': { schema: { type: 'object', required: ['addresses', 'loopback_only', 'class_key', 'proxied'], properties: { addresses: { type: 'array', items: { type: 'string' } }, loopback_only: { type: 'boolean' }, class_key: { type: 'boolean' }, proxied: { type: 'boolean' } } } } } } } } },
    '/api/classes': {
      post: {
        operationId: 'createClass', summary: 'Create a class',
        parameters: [
          { name: 'X-Vmemlab-Class-Key', in: 'header', required: false, description: 'the server\'s class key, when it was started with VMEMLAB_CLASS_KEY (else not needed); a missing key is 401, a wrong one 403, both with "need": "class_key"', schema: { type: 'string', minLength: 8, maxLength: 200 } },
        ],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 200 } } } } },
        },
        responses: {
          201: {
            description: 'created: the join code for students, the teacher token (shown once) and the private teacher link',
            content: { 'application/json': { schema: { type: 'object', required: ['code', 'teacher_token', 'teacher_url', 'join_url'], properties: { code: { type: 'string' }, name: { type: 'string' }, teacher_token: { type: 'string' }, teacher_url: { type: 'string' }, join_url: { type: 'string' } } } } },
          },
          ...errors(400, 401, 403, 413, 415, 429),
        },
      },
    },
    '/api/results': {
      post: {
        operationId: 'uploadResult', summary: 'Upload one hw-lab result (what `hw-lab/run --upload URL --class CODE` sends)',
        parameters: [
          { name: 'X-Vmemlab-Class', in: 'header', required: true, schema: code.schema },
          {
            name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{8,128}$' },
            description: 'A random key per result file (the page and hw-lab/run send one). The first upload with a key is stored (201); an upload to the same class with the same key and the same body is answered with the stored upload\'s id and receipt (200, Idempotent-Replayed: true) and stores nothing, for as long as that upload exists; the same key with another body is refused (422). Keep the key unguessable: presenting it with the body returns the receipt.',
          },
          {
            name: 'X-Vmemlab-Name', in: 'header', required: false, schema: { type: 'string', maxLength: 540 },
            description: 'The student\'s display name, percent-encoded UTF-8 (encodeURIComponent, urllib.parse.quote): at most 60 characters once decoded, no control characters. Optional; stored with the upload; shown only to the teacher (listing with the teacher token) and in the CSV export.',
          },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Result' } } } },
        responses: {
          201: uploaded('stored; keep the receipt to delete it later'),
          200: uploaded('a repeat: this Idempotency-Key was stored before in this class; the same id and receipt, nothing new stored', { 'Idempotent-Replayed': { schema: { type: 'string', const: 'true' } } }),
          ...errors(400, 404, 408, 409, 413, 415, 422, 429, 503),
        },
      },
    },
    '/api/classes/{code}': {
      get: { operationId: 'getClass', parameters: [code], responses: { 200: { description: 'the class', content: { 'application/json': { schema: { $ref: '#/components/schemas/Class' } } } }, ...errors(400, 404) } },
      delete: {
        operationId: 'deleteClass', summary: 'Teacher: delete the class with everything in it (uploads, traces, students\' names, progress); it cannot be undone', parameters: [code], security: [{ token: [] }],
        responses: { 200: { description: 'deleted; rows: how many rows of each table went', content: { 'application/json': { schema: { type: 'object', required: ['deleted', 'rows'], properties: { deleted: { type: 'string' }, rows: { type: 'object', additionalProperties: { type: 'integer' } }, message: { type: 'string' } } } } } }, ...errors(400, 401, 403, 404, 503) },
      },
    },
    '/api/classes/{code}/close': {
      post: {
        operationId: 'closeClass', summary: 'Teacher: close the class: uploads of results, traces and progress (and joining) are refused with 409 until it is reopened; reads and deletions go on', parameters: [code], security: [{ token: [] }],
        responses: { 200: { description: 'closed (closing a closed class keeps its closed_at)', content: { 'application/json': { schema: { type: 'object', required: ['code', 'closed_at'], properties: { code: { type: 'string' }, closed_at: { type: 'string' }, message: { type: 'string' } } } } } }, ...errors(400, 401, 403, 404, 503) },
      },
    },
    '/api/classes/{code}/reopen': {
      post: {
        operationId: 'reopenClass', summary: 'Teacher: open a closed class for uploads again', parameters: [code], security: [{ token: [] }],
        responses: { 200: { description: 'open', content: { 'application/json': { schema: { type: 'object', required: ['code', 'closed_at'], properties: { code: { type: 'string' }, closed_at: { type: 'null' }, message: { type: 'string' } } } } } }, ...errors(400, 401, 403, 404, 503) },
      },
    },
    '/api/classes/{code}/results': {
      get: {
        operationId: 'listResults', summary: 'The class distribution, a page at a time: one summary per upload (no tokens), in upload order; with the teacher token each summary also has the student\'s name (null when none was given)', parameters: [code, ...pageQuery],
        security: [{}, { token: [] }],
        responses: {
          200: {
            description: 'summaries (mode and mem_mib say the run size: numbers that depend on it are only compared within one size); next_cursor: send it as cursor for the next page, null on the last one',
            content: { 'application/json': { schema: { type: 'object', required: ['class', 'metrics', 'results', 'next_cursor'], properties: { class: { type: 'object' }, metrics: { type: 'object' }, results: { type: 'array', maxItems: PAGE_MAX, items: { type: 'object' } }, next_cursor: { type: ['string', 'null'] } } } } },
          },
          ...errors(400, 403, 404, 503),
        },
      },
    },
    '/api/classes/{code}/results/{id}': {
      get: { operationId: 'getResult', summary: 'One upload, as uploaded: the teacher token or that upload\'s receipt', parameters: [code, id], security: [{ token: [] }], responses: { 200: { description: 'the result document, byte for byte', content: { 'application/json': { schema: { $ref: '#/components/schemas/Result' } } } }, ...errors(400, 401, 403, 404, 503) } },
      delete: {
        operationId: 'deleteResult', summary: 'Remove an upload: the teacher token or that upload\'s receipt', parameters: [code, id], security: [{ token: [] }],
        responses: { 200: { description: 'deleted', content: { 'application/json': { schema: { type: 'object' } } } }, ...errors(400, 401, 403, 404) },
      },
    },
    '/api/classes/{code}/export.csv': {
      get: {
        operationId: 'exportCsv', summary: 'Teacher: every upload as CSV (streamed, in upload order): id, name, uploaded_utc, cpu_model, arch, hypervisor, tdp, mode, mem_mib, created_utc, then one column per metric. Numbers are plain numbers; a text cell, or any ;-separated part of one, that starts with = + - @ (after spaces) or a tab or CR gets a leading \'; cells with , " ; CR or LF are quoted (RFC 4180)',
        parameters: [code, { name: 'bom', in: 'query', required: false, schema: { enum: ['0', '1'], default: '1' }, description: 'the file starts with a UTF-8 byte order mark (so that a spreadsheet opened by a double-click reads non-Latin names right); bom=0 leaves it out' }],
        security: [{ token: [] }],
        responses: { 200: { description: 'CSV, UTF-8, CRLF line ends, a byte order mark first unless bom=0', content: { 'text/csv': { schema: { type: 'string' } } } }, ...errors(400, 401, 403, 404, 503) },
      },
    },
    '/api/openapi.json': { get: { operationId: 'openapi', responses: { 200: { description: 'this document' } } } },
    ...traceOpenapi.paths,
    // the progress routes and the dashboard's share /api/classes/{code}/progress (POST, GET)
    ...mergePaths(progressOpenapi.paths, dashboardOpenapi.paths),
    ...courseOpenapi.paths,
  },
};
