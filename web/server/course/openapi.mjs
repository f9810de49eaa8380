// The course routes (routes.mjs) in the server's OpenAPI description (openapi.mjs spreads
// these in).
import { SETTINGS_SCHEMA } from './settings.mjs';

const err = (...codes) => Object.fromEntries(codes.map((c) => [String(c), { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]));
const code = { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$' } };
const json = (schema) => ({ required: true, content: { 'application/json': { schema } } });
const ok = (description, schema = { type: 'object' }) => ({ 200: { description, content: { 'application/json': { schema } } } });
const student = { $ref: '#/components/schemas/Student' };

export const courseOpenapi = {
  schemas: { CourseSettings: SETTINGS_SCHEMA },
  paths: {
    '/api/classes/{code}/course': {
      get: { operationId: 'getCourse', summary: 'The class\'s grading settings, closing times and graded lessons (anyone with the code)', parameters: [code], responses: { ...ok('settings'), ...err(400, 404, 503) } },
      put: {
        operationId: 'putCourse', summary: 'Teacher: how exercises are scored (counts: first, best or last answer; hint_cost, shown_cost, late_cost: shares of the points), closing times (closes_at, lesson_closes; late: refuse or accept), points per exercise, the lessons graded',
        parameters: [code], security: [{ token: [] }], requestBody: json({ $ref: '#/components/schemas/CourseSettings' }), responses: { ...ok('saved'), ...err(400, 401, 403, 404, 415, 503) },
      },
    },
    '/api/classes/{code}/roster': {
      post: {
        operationId: 'loadRoster', summary: 'Teacher: a roster as text/csv (Canvas\'s or Moodle\'s export, or any CSV naming an ID or email and a name) or text/plain lines "ID, name"; adds students and updates those already on it (by ID, email or login)',
        parameters: [code], security: [{ token: [] }],
        requestBody: { required: true, content: { 'text/csv': { schema: { type: 'string', maxLength: 524288 } }, 'text/plain': { schema: { type: 'string', maxLength: 524288 } } } },
        responses: { ...ok('loaded: added, updated, students'), ...err(400, 401, 403, 404, 409, 413, 415, 429, 503) },
      },
      get: { operationId: 'getRoster', summary: 'Teacher: the roster and who joined as whom', parameters: [code], security: [{ token: [] }], responses: { ...ok('the roster'), ...err(400, 401, 403, 404, 503) } },
    },
    '/api/classes/{code}/roster/{id}': {
      delete: { operationId: 'deleteRosterEntry', summary: 'Teacher: one roster entry', parameters: [code, { name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 32 } }], security: [{ token: [] }], responses: { ...ok('deleted'), ...err(400, 401, 403, 404, 503) } },
    },
    '/api/classes/{code}/roster/names': {
      get: { operationId: 'rosterNames', summary: 'The roster\'s names to pick from when joining (no IDs or emails)', parameters: [code], responses: { ...ok('names'), ...err(400, 404, 503) } },
    },
    '/api/classes/{code}/roster/join': {
      post: {
        operationId: 'joinRoster', summary: 'Join as a roster student: {"id"} (student ID, email or login, as typed) or {"entry"} (picked from /roster/names). A roster student joins once; a second browser uses a device code',
        parameters: [code], requestBody: json({ type: 'object', additionalProperties: false, maxProperties: 1, properties: { id: { type: 'string', maxLength: 254 }, entry: { type: 'string', maxLength: 32 } } }),
        responses: { 201: { description: 'joined; keep the receipt', content: { 'application/json': { schema: student } } }, ...err(400, 404, 409, 415, 429, 503) },
      },
    },
    '/api/classes/{code}/students/me/link': {
      post: { operationId: 'makeDeviceLink', summary: 'A student (receipt): a one-time code, valid 15 minutes, that makes another browser the same student', parameters: [code], security: [{ token: [] }], responses: { ...ok('code, url, expires_at'), ...err(400, 401, 403, 404, 429, 503) } },
    },
    '/api/classes/{code}/students/link': {
      post: {
        operationId: 'useDeviceLink', summary: 'Another browser becomes the student whose code this is: a receipt of its own', parameters: [code],
        requestBody: json({ type: 'object', required: ['code'], additionalProperties: false, properties: { code: { type: 'string', maxLength: 9 } } }),
        responses: { ...ok('the student', student), ...err(400, 404, 415, 429, 503) },
      },
    },
    '/api/classes/{code}/students/merge': {
      post: {
        operationId: 'mergeStudents', summary: 'Teacher: one student who joined twice: from\'s records, devices and roster entry go to into; from is deleted (its browser goes on as into)', parameters: [code], security: [{ token: [] }],
        requestBody: json({ type: 'object', required: ['into', 'from'], additionalProperties: false, properties: { into: { type: 'string', maxLength: 32 }, from: { type: 'string', maxLength: 32 } } }),
        responses: { ...ok('merged'), ...err(400, 401, 403, 404, 409, 415, 503) },
      },
    },
    '/api/classes/{code}/scores': {
      get: { operationId: 'classScores', summary: 'Teacher: every student\'s scores, per lesson and in total', parameters: [code], security: [{ token: [] }], responses: { ...ok('scores'), ...err(400, 401, 403, 404, 503) } },
    },
    '/api/classes/{code}/students/me/scores': {
      get: { operationId: 'myScores', summary: 'A student (receipt): their own scores', parameters: [code], security: [{ token: [] }], responses: { ...ok('scores'), ...err(400, 401, 403, 404, 503) } },
    },
    '/api/classes/{code}/grades': {
      get: {
        operationId: 'gradebook', summary: 'Teacher: the gradebook as CSV. plain: ID, Email, Name, Section, a column per lesson "Title (lesson-id)", Total, Possible, Late; canvas: Student, ID, SIS User ID, SIS Login ID, Section, a column per lesson, a Points Possible row; moodle: ID number, Email address, Full name, a column per lesson',
        parameters: [code, { name: 'format', in: 'query', required: false, schema: { enum: ['plain', 'canvas', 'moodle'], default: 'plain' } },
          { name: 'lang', in: 'query', required: false, schema: { enum: ['en', 'ja', 'zh'], default: 'en' } },
          { name: 'bom', in: 'query', required: false, schema: { enum: ['0', '1'], default: '1' } }],
        security: [{ token: [] }],
        responses: { 200: { description: 'CSV, UTF-8, CRLF', content: { 'text/csv': { schema: { type: 'string' } } } }, ...err(400, 401, 403, 404, 503) },
      },
    },
  },
};
