// Students of a class and their progress through the lessons: a learner joins a class
// with a name and gets a receipt, and the page sends each exercise attempt and each lesson
// marked done. The server grades each attempt again itself (grade.mjs, in a worker thread:
// the page's own exercise generator and check, and the same engine), so the stored verdict
// is the engine's, whatever the page said. A Fastify plugin of its own (its tables and
// their migration, its error messages); app.mjs registers it in one line.
//
//   POST   /api/classes/:code/students     {"name"} -> 201 {student_id, receipt, name, class}
//                                          (200 with the same student when the name's receipt comes along; 409 for a name taken)
//   POST   /api/classes/:code/progress     Bearer <receipt>; {"records": [...at most 50]} -> {stored, records: [{id, verdict, expected?}]}
//   DELETE /api/classes/:code/students/me  Bearer <receipt>: the student and all their progress
//   DELETE /api/classes/:code/students/:id Bearer <teacher token>: the same, by the teacher
//   PATCH  /api/classes/:code/students/:id Bearer <teacher token>; {"name"}: renamed (409 for a name taken)
//
// Progress records and joins count against a write budget per client address (budget.mjs);
// grading is fair between students (grade.mjs); each write tells the class's dashboard
// streams (feed.mjs, through app.mjs's bus).
//
// Each record carries its own id (random, made by the page): a record id stored once in a
// class is never stored again, so a batch sent again (after a lost answer, a 503, a
// reload) stores nothing new. The teacher's reads of these tables are dashboard.mjs's.
import { randomBytes } from 'node:crypto';
import { Migrator } from 'kysely';
import { bearerHash, classLoader, hashToken, sameHash } from './classes.mjs';
import { unavailableAnswer } from './faults.mjs';
import { GradePool } from './grade.mjs';
import { NAME_MAX, textProblem } from './limits.mjs';
import { WriteBudget } from './budget.mjs';
import { ReceiptCache } from './receipts.mjs';
import { courseOf, refuseAfterClosing } from './course/deadline.mjs';

/** A record id: the page makes 22 characters of base64url (128 random bits). */
const RECORD_ID_RE = /^[A-Za-z0-9_-]{16,32}$/;
const LESSON_RE = /^[a-z0-9][a-z0-9-]{0,63}$/;
const KIND_RE = /^[a-z][a-z-]{0,31}$/;
const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;
/** The most records one request takes. */
export const BATCH_MAX = 50;
/** The longest answer kept (a hex address or a mode's name is a few characters). */
export const ANSWER_MAX = 200;
/** Seeds are what an exercise's URL takes, up to what a 32-bit integer column holds. */
export const SEED_MAX = 2 ** 31 - 1;
const TRIES_MAX = 10_000;
const EXERCISE_MAX = 63;

const REASONS = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 410: 'Gone', 413: 'Payload Too Large', 415: 'Unsupported Media Type', 422: 'Unprocessable Entity', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable' };
class ProgressHttpError extends Error {
  constructor(statusCode, message) { super(message); this.statusCode = statusCode; }
}
const fail = (status, message) => { throw new ProgressHttpError(status, message); };
const FK_VIOLATION = (e) => e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || e?.code === '23503';
const UNIQUE_VIOLATION = (e) => e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === '23505';
const STUDENT_ID_RE = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * What the server tells a page about an attempt: its verdict, and the engine's answer only
 * when the page would show it (the answer was shown: asked for, or after the page's tries;
 * or the attempt is right, where it is the learner's own). Without this, an empty attempt
 * was any variant's answer for the asking.
 */
export function answerOf(record, graded) {
  const show = graded.expected !== undefined && record.type === 'attempt' && (record.shown || graded.verdict === 'correct');
  return { id: record.id, verdict: graded.verdict, ...(show ? { expected: graded.expected } : {}), ...(graded.score ? { score: graded.score } : {}) };
}

const migrations = {
  '001_students_progress': {
    async up(db) {
      await db.schema.createTable('students')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('class_code', 'varchar(64)', (c) => c.notNull().references('classes.code').onDelete('cascade'))
        .addColumn('name', 'varchar(200)', (c) => c.notNull())
        .addColumn('receipt_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('joined_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('students_class_name').unique().on('students').columns(['class_code', 'name']).execute();
      await db.schema.createIndex('students_receipt').on('students').columns(['class_code', 'receipt_hash']).execute();
      // the teacher's list of students, in joining order (dashboard.mjs's keyset)
      await db.schema.createIndex('students_class_joined').on('students').columns(['class_code', 'joined_at', 'id']).execute();
      await db.schema.createTable('progress')
        .addColumn('id', 'varchar(32)', (c) => c.notNull())
        .addColumn('class_code', 'varchar(64)', (c) => c.notNull().references('classes.code').onDelete('cascade'))
        // a student's deletion (theirs, or the class's) takes their progress with it
        .addColumn('student_id', 'varchar(32)', (c) => c.notNull().references('students.id').onDelete('cascade'))
        .addColumn('type', 'varchar(8)', (c) => c.notNull())          // 'attempt' | 'done'
        .addColumn('lesson', 'varchar(64)', (c) => c.notNull())
        .addColumn('exercise', 'integer')                              // attempts: the exercise's position in the lesson, from 0
        .addColumn('kind', 'varchar(32)')
        .addColumn('seed', 'integer')
        .addColumn('answer', 'varchar(200)')
        .addColumn('verdict', 'varchar(8)', (c) => c.notNull())       // correct | wrong | empty; done | undone
        .addColumn('tries', 'integer')
        .addColumn('hint', 'integer')                                  // 0 or 1
        .addColumn('shown', 'integer')                                 // 0 or 1: the answer was shown
        .addColumn('at', 'varchar(32)', (c) => c.notNull())           // the page's time
        .addColumn('received_at', 'varchar(32)', (c) => c.notNull())  // the server's (ISO, ms)
        .addPrimaryKeyConstraint('progress_pk', ['class_code', 'id'])
        .execute();
      await db.schema.createIndex('progress_class_keyset').on('progress').columns(['class_code', 'received_at', 'id']).execute();
      await db.schema.createIndex('progress_student').on('progress').columns(['student_id']).execute();
    },
    async down(db) {
      await db.schema.dropTable('progress').execute();
      await db.schema.dropTable('students').execute();
    },
  },
  // The hint the page opened itself after a wrong try (or a blank check), told apart from
  // the one pressed (hint): 0 or 1; null for rows stored before it was recorded.
  '002_hint_opened': {
    async up(db) { await db.schema.alterTable('progress').addColumn('hint_opened', 'integer').execute(); },
    async down(db) { await db.schema.alterTable('progress').dropColumn('hint_opened').execute(); },
  },
  // A walk-grid attempt's partial credit, its cells right of all (grade-entry.ts), kept so
  // that the teacher's grid and the course's scores can use it; null for every other kind.
  '003_attempt_score': {
    async up(db) {
      await db.schema.alterTable('progress').addColumn('score_right', 'integer').execute();
      await db.schema.alterTable('progress').addColumn('score_of', 'integer').execute();
    },
    async down(db) {
      for (const c of ['score_of', 'score_right']) await db.schema.alterTable('progress').dropColumn(c).execute();
    },
  },
};

/** A grid's cells, at most: the score stored is refused past this (it would be the grader's bug). */
export const SCORE_OF_MAX = 1000;
/** The partial credit of a graded attempt as stored: [right, of], or [null, null]. */
function scoreColumns(g) {
  const s = g.score;
  if (!s || !isInt(s.of, 1, SCORE_OF_MAX) || !isInt(s.right, 0, s.of)) return [null, null];
  return [s.right, s.of];
}

/** A JSON Pointer to a record's field. */
const at = (i, field) => `/records/${i}${field ? `/${field}` : ''}`;
const isInt = (v, lo, hi) => Number.isInteger(v) && v >= lo && v <= hi;

/**
 * The records of a POST body, checked field by field (400 naming the first problem's JSON
 * Pointer): what the grader takes and what is stored. Nothing the page says about a
 * verdict is read; a field this API does not know is refused.
 */
export function checkRecords(json) {
  if (!json || typeof json !== 'object' || Array.isArray(json)) fail(400, 'send {"records": [...]} (at most 50 records)');
  const extra = Object.keys(json).filter((k) => k !== 'records');
  if (extra.length) fail(400, `unknown field ${JSON.stringify(extra[0])}; send {"records": [...]}`);
  const list = json.records;
  if (!Array.isArray(list)) fail(400, '/records: is required (a list of at most 50 records)');
  if (list.length === 0) fail(400, '/records: is empty; send at least one record');
  if (list.length > BATCH_MAX) fail(413, `/records: holds ${list.length} records; send at most ${BATCH_MAX} a request`);
  const ids = new Map();
  return list.map((r, i) => {
    if (!r || typeof r !== 'object' || Array.isArray(r)) fail(400, `${at(i)}: must be an object ({"id", "type": "attempt" or "done", ...})`);
    const fields = r.type === 'attempt' ? ['id', 'type', 'lesson', 'exercise', 'kind', 'seed', 'answer', 'tries', 'hint', 'shown', 'at', 'hint_opened']
      : r.type === 'done' ? ['id', 'type', 'lesson', 'done', 'at'] : null;
    if (!fields) fail(400, `${at(i, 'type')}: must be "attempt" or "done"`);
    const unknown = Object.keys(r).find((k) => !fields.includes(k));
    if (unknown !== undefined) fail(400, `${at(i, unknown)}: is not a field of ${r.type === 'attempt' ? 'an attempt' : 'a done'} record (${fields.join(', ')}); the server works out the verdict itself`);
    // hint_opened may be left out (a page from before it, its outbox): false
    const missing = fields.find((k) => !(k in r) && k !== 'hint_opened');
    if (missing) fail(400, `${at(i, missing)}: is required but missing`);
    if (typeof r.id !== 'string' || !RECORD_ID_RE.test(r.id)) fail(400, `${at(i, 'id')}: a record id is 16-32 letters, digits, "-" or "_" (the page makes a random one per record)`);
    if (ids.has(r.id)) fail(400, `${at(i, 'id')}: the same id as ${at(ids.get(r.id), 'id')}; each record has its own`);
    ids.set(r.id, i);
    if (typeof r.lesson !== 'string' || !LESSON_RE.test(r.lesson)) fail(400, `${at(i, 'lesson')}: a lesson id (lower-case letters, digits and "-", as in ?lesson=...)`);
    if (typeof r.at !== 'string' || !TIME_RE.test(r.at) || Number.isNaN(Date.parse(r.at))) fail(400, `${at(i, 'at')}: an ISO time in UTC (2026-11-24T10:15:00.000Z)`);
    if (r.type === 'done') {
      if (typeof r.done !== 'boolean') fail(400, `${at(i, 'done')}: true (marked done) or false (unmarked)`);
      return { id: r.id, type: 'done', lesson: r.lesson, done: r.done, at: r.at };
    }
    if (!isInt(r.exercise, 0, EXERCISE_MAX)) fail(400, `${at(i, 'exercise')}: the exercise's position in the lesson, a whole number from 0`);
    if (typeof r.kind !== 'string' || !KIND_RE.test(r.kind)) fail(400, `${at(i, 'kind')}: an exercise kind (count-refs, compute-hpa, ...)`);
    if (!isInt(r.seed, 0, SEED_MAX)) fail(400, `${at(i, 'seed')}: the exercise's seed, a whole number from 0 to ${SEED_MAX}`);
    if (typeof r.answer !== 'string' || r.answer.length > ANSWER_MAX) fail(400, `${at(i, 'answer')}: the learner's answer as typed, a text of at most ${ANSWER_MAX} characters ("" for none)`);
    const bad = textProblem(r.answer, { name: true });
    if (bad) fail(400, `${at(i, 'answer')}: ${bad}`);
    if (!isInt(r.tries, 0, TRIES_MAX)) fail(400, `${at(i, 'tries')}: how many times this variant was checked, this one included: a whole number from 0`);
    if (typeof r.hint !== 'boolean') fail(400, `${at(i, 'hint')}: true when the hint was shown, else false`);
    if (typeof r.shown !== 'boolean') fail(400, `${at(i, 'shown')}: true when the answer was shown (asked for, or after three wrong tries), else false`);
    if ('hint_opened' in r && typeof r.hint_opened !== 'boolean') fail(400, `${at(i, 'hint_opened')}: true when the page had opened the hint itself (after a wrong try) and it was not pressed, else false`);
    return { id: r.id, type: 'attempt', lesson: r.lesson, exercise: r.exercise, kind: r.kind, seed: r.seed, answer: r.answer, tries: r.tries, hint: r.hint, shown: r.shown, hint_opened: r.hint_opened === true, at: r.at };
  });
}

/** A name as it is kept: NFC, trimmed, 1-60 characters, no control, bidi or line
 * separator characters (limits.mjs's rule for names, as X-Vmemlab-Name). */
export function studentName(raw) {
  if (typeof raw !== 'string') fail(400, '/name: is required (your name as your teacher should see it)');
  const name = raw.normalize('NFC').trim();
  if (!name) fail(400, '/name: is empty; type your name');
  const length = [...name].length;
  if (length > NAME_MAX) fail(400, `/name: at most ${NAME_MAX} characters (this one has ${length})`);
  const bad = textProblem(name, { name: true });
  if (bad) fail(400, `/name: ${bad}`);
  return name;
}

/** @param {import('fastify').FastifyInstance} app @param {{ store: import('./db.mjs').Store, grader?: GradePool }} opts */
export async function progressRoutes(app, opts) {
  const { store } = opts;
  const db = store.db;
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableName: 'vmemlab_progress_migration', migrationLockTableName: 'vmemlab_progress_migration_lock' });
  const { error } = await migrator.migrateToLatest();
  if (error) throw new Error(`database migration of the students and progress tables failed: ${error.message ?? error}`);

  const grader = opts.grader ?? new GradePool(opts.gradePool);
  app.addHook('onClose', async () => { await grader.close(); });
  const bus = opts.bus ?? { publish() {} };
  // The write budget (budget.mjs): progress records and joins per client address per
  // minute (VMEMLAB_WRITE_RATE), joins per class per address per hour (VMEMLAB_JOIN_MAX).
  // One budget per server (app.mjs), shared with the course's routes.
  const budget = opts.budget ?? new WriteBudget(opts.rateLimit);
  const overBudget = (reply, over) => {
    reply.header('Retry-After', String(over.seconds));
    fail(429, `${over.message}; nothing was stored. Try again in ${over.seconds} s`);
  };
  const addressOf = (req) => req.ip ?? 'unknown';
  /* The request's connection closing before its answer is sent (the client gave up) aborts
   * its grading: watched from the moment the request arrives, since a client may go while
   * its body is read or its receipt looked up. */
  const watchGone = (req, reply, done) => {
    req.arrived = performance.now(); // VMEMLAB_SERVER_TIMING's start
    const ac = new AbortController();
    const socket = req.raw.socket;
    const gone = () => ac.abort();
    if (!socket || socket.destroyed) ac.abort();
    else {
      socket.once('close', gone);
      reply.raw.once('finish', () => socket.off('close', gone)); // a kept-alive connection serves others
    }
    req.gone = ac.signal;
    done();
  };

  app.setErrorHandler((err, req, reply) => {
    let status = err.statusCode ?? 500;
    let message = err.message;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') { status = 413; message = `the body is too large; send at most ${BATCH_MAX} records a request`; }
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') { status = 415; message = `send Content-Type: application/json (got ${JSON.stringify(req.headers['content-type'] ?? 'none')})`; }
    else if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') { status = 400; message = 'the body is empty; send a JSON document'; }
    const away = status >= 500 && unavailableAnswer(err, reply);
    if (away) { req.log.warn({ err }, 'database unavailable'); status = 503; message = `${away}; send the records again (each is stored once)`; }
    else if (status >= 500 && !err.retryAfter && !(err.statusCode >= 500)) { req.log.error(err); message = 'internal error; nothing was stored'; }
    else if (status >= 500) req.log.warn({ err }, 'progress not graded');
    if (err.retryAfter) reply.header('Retry-After', String(err.retryAfter));
    if (status < 400 || status > 599) status = 500;
    reply.code(status).type('application/json').send({ statusCode: status, error: REASONS[status] ?? 'Error', message, ...(status < 500 && err.need ? { need: err.need, ...err.extra } : {}) });
  });

  const loadClass = classLoader(store, fail);
  const jsonOf = (req) => {
    const b = req.body;
    if (!b || typeof b !== 'object' || !('json' in b)) fail(415, 'send the document with Content-Type: application/json');
    return b.json;
  };
  /** The receipt's hash from Authorization, or null when there is none. */
  const receiptHash = (req, needed) => bearerHash(req, fail, { needs: 'the receipt you got when you joined', optional: !needed });
  const studentByHash = async (cls, h) => {
    // the receipt it joined with, or one of its further devices' (course/routes.mjs)
    const row = await courseOf(store).studentByReceipt(cls.code, h);
    if (!row || !sameHash(h, row.receipt_hash)) fail(403, `this receipt is not a student's of class ${cls.code} (removed, or the class was deleted?); join the class again`);
    return row;
  };
  const studentOf = (req, cls) => studentByHash(cls, receiptHash(req, true));
  // A progress request's student, kept a minute (receipts.mjs): the insert's foreign key
  // checks it is still there.
  const receipts = new ReceiptCache();
  const answer = (row, receipt, cls) => ({ student_id: row.id, receipt, name: row.name, class: cls.code });

  app.post('/api/classes/:code/students', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    const json = jsonOf(req);
    if (!json || typeof json !== 'object' || Array.isArray(json)) fail(400, 'send {"name": "..."}');
    const extra = Object.keys(json).filter((k) => k !== 'name');
    if (extra.length) fail(400, `unknown field ${JSON.stringify(extra[0])}; send {"name": "..."}`);
    const name = studentName(json.name);
    const given = receiptHash(req, false);
    const addr = addressOf(req);
    const over = budget.join(cls.code, addr);
    if (over) overBudget(reply, over);
    const receipt = randomBytes(16).toString('base64url');
    const row = { id: randomBytes(9).toString('base64url'), class_code: cls.code, name, receipt_hash: hashToken(receipt), joined_at: new Date().toISOString() };
    // The insert stores nothing when the name is taken in this class (unique (class, name)).
    let stored;
    try {
      if (store.writer) stored = (await store.writer.run('insertStudent', row)) > 0;
      else stored = Number((await db.insertInto('students').values(row).onConflict((oc) => oc.columns(['class_code', 'name']).doNothing()).executeTakeFirst()).numInsertedOrUpdatedRows ?? 0) > 0;
    } catch (e) {
      if (FK_VIOLATION(e)) fail(410, `class ${cls.code} was deleted meanwhile; nothing was stored`);
      throw e;
    }
    if (stored) { bus.publish(cls.code, 'progress'); reply.code(201); return answer(row, receipt, cls); }
    const prior = await db.selectFrom('students').select(['id', 'name', 'receipt_hash']).where('class_code', '=', cls.code).where('name', '=', name).executeTakeFirst();
    if (!prior) throw new Error('a student was neither stored nor found under this name');
    // Joining again from the browser that joined (it has the receipt): the same student.
    if (given && sameHash(given, prior.receipt_hash)) {
      const m = /^Bearer\s+(\S+)$/.exec(req.headers.authorization);
      return answer(prior, m[1], cls);
    }
    fail(409, `the name "${name}" is already taken in class ${cls.code}; pick another one (a surname, an initial), or join from the browser you joined with`);
  });

  app.post('/api/classes/:code/progress', { onRequest: watchGone }, async (req, reply) => {
    const timing = opts.serverTiming?.start(reply, req.arrived); // VMEMLAB_SERVER_TIMING (timing.mjs)
    const cls = await loadClass(req.params.code);
    const receipt = receiptHash(req, true);
    let student = receipts.get(cls.code, receipt);
    const cached = !!student;
    if (!student) { student = await studentByHash(cls, receipt); receipts.set(cls.code, receipt, student); }
    const records = checkRecords(jsonOf(req));
    await refuseAfterClosing(store, cls, records); // a closing time passed: 409, nothing stored
    timing?.mark('pre');
    const addr = addressOf(req);
    const over = budget.write(addr, records.length);
    if (over) overBudget(reply, over);
    // Graded in the student's own queue (grade.mjs), dropped if this request goes away.
    let graded;
    const gt = timing ? {} : undefined;
    try {
      graded = await grader.grade(records.map(({ type, lesson, exercise, kind, seed, answer: a, done }) => ({ type, lesson, exercise, kind, seed, answer: a, done })),
        { client: student.id, signal: req.gone, timing: gt });
    } catch (e) { budget.giveWrites(addr, records.length); throw e; }
    if (timing) { timing.mark('grader'); timing.add('queue', gt.waitMs ?? 0); timing.add('grade', gt.gradeMs ?? 0); }
    graded.forEach((g, i) => {
      if (g.error) throw new Error(`the engine failed on ${at(i)}: ${g.error}`);
      if (g.problem) fail(422, `${at(i, g.field)}: ${g.problem}`);
    });
    const received = new Date().toISOString();
    const rowsOf = (studentId) => records.map((r, i) => (r.type === 'done'
      ? { id: r.id, class_code: cls.code, student_id: studentId, type: 'done', lesson: r.lesson, exercise: null, kind: null, seed: null, answer: null, verdict: graded[i].verdict, tries: null, hint: null, shown: null, hint_opened: null, score_right: null, score_of: null, at: r.at, received_at: received }
      : (([right, of]) => ({ id: r.id, class_code: cls.code, student_id: studentId, type: 'attempt', lesson: r.lesson, exercise: r.exercise, kind: r.kind, seed: r.seed, answer: r.answer, verdict: graded[i].verdict, tries: r.tries, hint: r.hint ? 1 : 0, shown: r.shown ? 1 : 0, hint_opened: r.hint_opened ? 1 : 0, score_right: right, score_of: of, at: r.at, received_at: received }))(scoreColumns(graded[i]))));
    // A record id already stored in this class stores nothing (unique (class, id)).
    const insert = async (rows) => (store.writer
      ? (await Promise.all(rows.map((row) => store.writer.run('insertProgress', row)))).reduce((a, b) => a + b, 0)
      : Number((await db.insertInto('progress').values(rows).onConflict((oc) => oc.columns(['class_code', 'id']).doNothing()).executeTakeFirst()).numInsertedOrUpdatedRows ?? 0));
    let stored = 0;
    try {
      stored = await insert(rowsOf(student.id));
    } catch (e) {
      if (!FK_VIOLATION(e)) throw e;
      // The student removed, or the class deleted meanwhile (then 410); or, the student
      // kept here, removed or merged into another through another instance: looked up
      // again (403 when removed), and stored under the student the receipt names now.
      receipts.forget(cls.code, receipt);
      store.forget(cls.code);
      if (!(await store.getClass(cls.code))) fail(410, `class ${cls.code} was deleted meanwhile; nothing was stored`);
      const now = cached ? await studentByHash(cls, receipt) : null;
      if (!now || now.id === student.id) fail(403, `you are no longer a student of class ${cls.code} (removed by your teacher?); join the class again`);
      try {
        stored = await insert(rowsOf(now.id));
      } catch (e2) {
        if (FK_VIOLATION(e2)) fail(403, `you are no longer a student of class ${cls.code} (removed by your teacher?); join the class again`);
        throw e2;
      }
      receipts.set(cls.code, receipt, now);
    }
    if (stored) bus.publish(cls.code, 'progress');
    if (timing) { timing.mark('db'); timing.send(); }
    return { stored, records: records.map((r, i) => answerOf(r, graded[i])) };
  });

  // The teacher's hand (their token): remove a student with all their records, or rename one.
  const teacherClass = async (req) => {
    const cls = await loadClass(req.params.code);
    if (!sameHash(bearerHash(req, fail, { needs: 'teacher token' }), cls.teacher_hash)) fail(403, 'this token is not the teacher token of this class');
    return cls;
  };
  const studentById = async (cls, raw) => {
    const id = String(raw ?? '');
    if (!STUDENT_ID_RE.test(id)) fail(400, 'a student id is 1-32 letters, digits, "-" or "_"');
    const row = await db.selectFrom('students').select(['id', 'name', 'joined_at']).where('class_code', '=', cls.code).where('id', '=', id).executeTakeFirst();
    if (!row) fail(404, `there is no student ${id} in class ${cls.code} (removed already?)`);
    return row;
  };
  app.delete('/api/classes/:code/students/:id', async (req) => {
    const cls = await teacherClass(req);
    const student = await studentById(cls, req.params.id);
    const n = await db.selectFrom('progress').select((eb) => eb.fn.countAll().as('n')).where('class_code', '=', cls.code).where('student_id', '=', student.id).executeTakeFirst();
    if (store.writer) await store.writer.run('deleteStudent', { class_code: cls.code, id: student.id });
    else await db.deleteFrom('students').where('class_code', '=', cls.code).where('id', '=', student.id).execute();
    receipts.forgetStudent(student.id);
    bus.publish(cls.code, { removed: student.id });
    return { deleted: student.id, name: student.name, records: Number(n?.n ?? 0) };
  });
  app.patch('/api/classes/:code/students/:id', async (req) => {
    const cls = await teacherClass(req);
    const json = jsonOf(req);
    if (!json || typeof json !== 'object' || Array.isArray(json)) fail(400, 'send {"name": "..."}');
    const extra = Object.keys(json).filter((k) => k !== 'name');
    if (extra.length) fail(400, `unknown field ${JSON.stringify(extra[0])}; send {"name": "..."}`);
    const name = studentName(json.name);
    const student = await studentById(cls, req.params.id);
    if (name !== student.name) {
      try {
        if (store.writer) await store.writer.run('renameStudent', { class_code: cls.code, id: student.id, name });
        else await db.updateTable('students').set({ name }).where('class_code', '=', cls.code).where('id', '=', student.id).execute();
      } catch (e) {
        if (UNIQUE_VIOLATION(e)) fail(409, `the name "${name}" is already taken in class ${cls.code}`);
        throw e;
      }
      bus.publish(cls.code, { renamed: { id: student.id, name, joined_at: student.joined_at } });
    }
    return { id: student.id, name, joined_at: student.joined_at };
  });

  app.delete('/api/classes/:code/students/me', async (req) => {
    const cls = await loadClass(req.params.code);
    const student = await studentOf(req, cls);
    const n = await db.selectFrom('progress').select((eb) => eb.fn.countAll().as('n')).where('class_code', '=', cls.code).where('student_id', '=', student.id).executeTakeFirst();
    // the student's progress goes with them (progress.student_id: on delete cascade)
    if (store.writer) await store.writer.run('deleteStudent', { class_code: cls.code, id: student.id });
    else await db.deleteFrom('students').where('class_code', '=', cls.code).where('id', '=', student.id).execute();
    receipts.forgetStudent(student.id);
    bus.publish(cls.code, { removed: student.id });
    return { deleted: student.id, name: student.name, records: Number(n?.n ?? 0) };
  });
}

// The routes above in the server's OpenAPI description (openapi.mjs spreads these in).
const err = (...codes) => Object.fromEntries(codes.map((c) => [String(c), {
  description: c === 503 ? 'the database is away or the grader is busy; nothing was stored; send the request again after Retry-After seconds' : 'error',
  ...(c === 503 ? { headers: { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } } } } : {}),
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
}]));
const codeParam = { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$' } };
const common = {
  id: { type: 'string', pattern: '^[A-Za-z0-9_-]{16,32}$', description: 'a random id the page makes per record (22 characters of base64url); a record id stored once in a class is never stored again' },
  lesson: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,63}$', description: 'the lesson id (as in ?lesson=)' },
  at: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$', description: 'when it happened, on the page\'s clock (ISO, UTC)' },
};
export const progressOpenapi = {
  schemas: {
    Student: {
      type: 'object', required: ['student_id', 'receipt', 'name', 'class'],
      properties: { student_id: { type: 'string' }, receipt: { type: 'string', description: 'the student\'s token for progress and for removing themselves (Authorization: Bearer); keep it' }, name: { type: 'string' }, class: { type: 'string' } },
    },
    ProgressRecord: {
      oneOf: [
        {
          type: 'object', additionalProperties: false, required: ['id', 'type', 'lesson', 'exercise', 'kind', 'seed', 'answer', 'tries', 'hint', 'shown', 'at'],
          properties: {
            ...common, type: { const: 'attempt' },
            exercise: { type: 'integer', minimum: 0, maximum: EXERCISE_MAX, description: 'the exercise\'s position in the lesson, from 0' },
            kind: { type: 'string', maxLength: 32, description: 'the exercise\'s kind; must be the one the lesson declares at that position' },
            seed: { type: 'integer', minimum: 0, maximum: SEED_MAX },
            answer: { type: 'string', maxLength: ANSWER_MAX, description: 'as the learner typed or picked it ("" for none)' },
            tries: { type: 'integer', minimum: 0, maximum: TRIES_MAX, description: 'checks of this variant so far, this one included' },
            hint: { type: 'boolean', description: 'the learner pressed Hint before this answer' }, shown: { type: 'boolean', description: 'the answer was shown (asked for, or after three wrong tries)' },
            hint_opened: { type: 'boolean', description: 'the page had opened the hint itself (after a wrong try or a blank check) and Hint was not pressed; costs no points (false when left out)' },
          },
        },
        { type: 'object', additionalProperties: false, required: ['id', 'type', 'lesson', 'done', 'at'], properties: { ...common, type: { const: 'done' }, done: { type: 'boolean' } } },
      ],
    },
  },
  paths: {
    '/api/classes/{code}/students': {
      post: {
        operationId: 'joinClass', summary: 'Join a class with a name (1-60 characters, unique in the class). With the receipt of that name\'s student (Authorization: Bearer) the same student is answered (200): joining again from the same browser', parameters: [codeParam],
        security: [{}, { token: [] }],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 60 } } } } } },
        responses: {
          201: { description: 'joined; keep the receipt', content: { 'application/json': { schema: { $ref: '#/components/schemas/Student' } } } },
          200: { description: 'joined before with this name and receipt: the same student', content: { 'application/json': { schema: { $ref: '#/components/schemas/Student' } } } },
          ...err(400, 401, 404, 409, 415, 429, 503),
        },
      },
    },
    '/api/classes/{code}/progress': {
      post: {
        operationId: 'sendProgress', summary: 'A student\'s exercise attempts and lessons marked done, at most 50 a request. Each attempt is graded by the server (the page\'s exercise generator and the engine on its lesson, exercise, seed and answer); a record id already stored stores nothing, so a batch may be sent again', parameters: [codeParam],
        security: [{ token: [] }],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['records'], additionalProperties: false, properties: { records: { type: 'array', minItems: 1, maxItems: BATCH_MAX, items: { $ref: '#/components/schemas/ProgressRecord' } } } } } } },
        responses: {
          200: {
            description: 'graded; stored: how many records were new',
            content: { 'application/json': { schema: { type: 'object', required: ['stored', 'records'], properties: { stored: { type: 'integer' }, records: { type: 'array', items: { type: 'object', required: ['id', 'verdict'], properties: { id: { type: 'string' }, verdict: { enum: ['correct', 'wrong', 'empty', 'done', 'undone'] }, expected: { type: 'string', description: 'the engine\'s answer, only when the page would show it: the attempt says the answer was shown (asked for, or after the page\'s tries), or it is right' }, score: { type: 'object', description: 'a grid exercise\'s cells right of all (the partial credit)', properties: { right: { type: 'integer' }, of: { type: 'integer' } } } } } } } } } },
          },
          ...err(400, 401, 403, 404, 410, 413, 415, 422, 429, 503),
        },
      },
    },
    '/api/classes/{code}/students/{id}': {
      delete: {
        operationId: 'removeStudent', summary: 'Teacher: remove a student of the class with all their records (their receipt sends nothing after)', parameters: [codeParam, { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$' } }], security: [{ token: [] }],
        responses: { 200: { description: 'removed', content: { 'application/json': { schema: { type: 'object', properties: { deleted: { type: 'string' }, name: { type: 'string' }, records: { type: 'integer' } } } } } }, ...err(400, 401, 403, 404, 503) },
      },
      patch: {
        operationId: 'renameStudent', summary: 'Teacher: rename a student (1-60 characters, unique in the class); their records stay theirs', parameters: [codeParam, { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,32}$' } }], security: [{ token: [] }],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 60 } } } } } },
        responses: { 200: { description: 'renamed', content: { 'application/json': { schema: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, joined_at: { type: 'string' } } } } } }, ...err(400, 401, 403, 404, 409, 415, 503) },
      },
    },
    '/api/classes/{code}/students/me': {
      delete: {
        operationId: 'leaveClass', summary: 'Remove yourself from a class with all your progress (your receipt)', parameters: [codeParam], security: [{ token: [] }],
        responses: { 200: { description: 'removed', content: { 'application/json': { schema: { type: 'object', properties: { deleted: { type: 'string' }, name: { type: 'string' }, records: { type: 'integer' } } } } } }, ...err(400, 401, 403, 404, 503) },
      },
    },
  },
};
