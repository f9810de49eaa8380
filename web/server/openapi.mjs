// The OpenAPI 3.1 description of the class server, served at /api/openapi.json and
// used by the fuzz test to generate requests.
import { readFileSync } from 'node:fs';
import { traceOpenapi } from './traces.mjs';

const resultSchema = JSON.parse(readFileSync(new URL('../../hw-lab/schema/result.schema.json', import.meta.url), 'utf8'));

const error = {
  type: 'object', required: ['statusCode', 'error', 'message'],
  properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' } },
};
const errors = (...codes) => Object.fromEntries(codes.map((c) => [String(c), {
  description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
}]));
const code = { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$' } };
const id = { name: 'id', in: 'path', required: true, schema: { type: 'string', minLength: 1, maxLength: 32 } };

export const openapi = {
  openapi: '3.1.0',
  info: {
    title: 'vmemlab class server',
    version: '1.0.0',
    description: 'A teacher creates a class and gets a join code and a private teacher token; students upload hw-lab results with the join code; everyone sees the class distribution; the teacher exports CSV and removes uploads; a student removes their own upload with the receipt token returned at upload.',
  },
  servers: [{ url: '/' }],
  components: {
    securitySchemes: { token: { type: 'http', scheme: 'bearer', description: 'teacher token (class) or receipt token (one upload)' } },
    schemas: {
      Error: error,
      Result: resultSchema,
      ...traceOpenapi.schemas,
      Class: {
        type: 'object', required: ['code', 'name', 'created_at', 'uploads'],
        properties: { code: { type: 'string' }, name: { type: 'string' }, created_at: { type: 'string' }, uploads: { type: 'integer' } },
      },
    },
  },
  paths: {
    '/api/health': { get: { operationId: 'health', responses: { 200: { description: 'up', content: { 'application/json': { schema: { type: 'object' } } } } } } },
    '/api/classes': {
      post: {
        operationId: 'createClass', summary: 'Create a class',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 200 } } } } },
        },
        responses: {
          201: {
            description: 'created: the join code for students, the teacher token (shown once) and the private teacher link',
            content: { 'application/json': { schema: { type: 'object', required: ['code', 'teacher_token', 'teacher_url', 'join_url'], properties: { code: { type: 'string' }, name: { type: 'string' }, teacher_token: { type: 'string' }, teacher_url: { type: 'string' }, join_url: { type: 'string' } } } } },
          },
          ...errors(400, 413, 415, 429),
        },
      },
    },
    '/api/results': {
      post: {
        operationId: 'uploadResult', summary: 'Upload one hw-lab result (what `hw-lab/run --upload URL --class CODE` sends)',
        parameters: [{ name: 'X-Vmemlab-Class', in: 'header', required: true, schema: code.schema }],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/Result' } } } },
        responses: {
          201: {
            description: 'stored; keep the receipt to delete it later',
            content: { 'application/json': { schema: { type: 'object', required: ['id', 'receipt', 'url', 'message'], properties: { id: { type: 'string' }, receipt: { type: 'string' }, url: { type: 'string' }, message: { type: 'string' } } } } },
          },
          ...errors(400, 404, 413, 415, 422, 429),
        },
      },
    },
    '/api/classes/{code}': {
      get: { operationId: 'getClass', parameters: [code], responses: { 200: { description: 'the class', content: { 'application/json': { schema: { $ref: '#/components/schemas/Class' } } } }, ...errors(400, 404) } },
    },
    '/api/classes/{code}/results': {
      get: {
        operationId: 'listResults', summary: 'The class distribution: one summary per upload (no tokens)', parameters: [code],
        responses: { 200: { description: 'summaries', content: { 'application/json': { schema: { type: 'object' } } } }, ...errors(400, 404) },
      },
    },
    '/api/classes/{code}/results/{id}': {
      get: { operationId: 'getResult', summary: 'One upload, as uploaded', parameters: [code, id], responses: { 200: { description: 'the result document', content: { 'application/json': { schema: { $ref: '#/components/schemas/Result' } } } }, ...errors(400, 404) } },
      delete: {
        operationId: 'deleteResult', summary: 'Remove an upload: the teacher token or that upload\'s receipt', parameters: [code, id], security: [{ token: [] }],
        responses: { 200: { description: 'deleted', content: { 'application/json': { schema: { type: 'object' } } } }, ...errors(400, 401, 403, 404) },
      },
    },
    '/api/classes/{code}/export.csv': {
      get: {
        operationId: 'exportCsv', summary: 'Teacher: every upload as CSV (cells starting with = + - @ neutralised)', parameters: [code], security: [{ token: [] }],
        responses: { 200: { description: 'CSV', content: { 'text/csv': { schema: { type: 'string' } } } }, ...errors(400, 401, 403, 404) },
      },
    },
    '/api/openapi.json': { get: { operationId: 'openapi', responses: { 200: { description: 'this document' } } } },
    ...traceOpenapi.paths,
  },
};
