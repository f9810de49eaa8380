// The teacher's dashboard: what the students of a class did in the lessons' exercises, read
// from the `students` and `progress` tables that progress.mjs creates and writes. A Fastify
// plugin of its own; app.mjs registers it in one line, after progress.mjs. Every route takes
// the teacher token (Authorization: Bearer): none is 401, another token 403.
//
//   GET /api/classes/:code/progress/students   the class's students, a page at a time (?limit=N&cursor=C)
//   GET /api/classes/:code/progress            the progress records in arrival order, a page at a time
//   GET /api/classes/:code/progress/events     the records (and students) that arrive from now on, as
//                                              text/event-stream (?after=<end_cursor of the list>)
//   GET /api/classes/:code/progress.csv        every record as CSV, streamed a page at a time
//
// The event stream: a backlog from the client's position, read a page at a time, then what
// the class's one feed (feed.mjs) reads and fans out to every open stream of the class.
import { Readable } from 'node:stream';
import { setImmediate as turn } from 'node:timers/promises';
import { bearerHash, classLoader, sameHash } from './classes.mjs';
import { bomParam, CSV_PAGE, csvCell } from './csv.mjs';
import { answerWords } from './course/words.mjs';
import { decodeCursor, encodeCursor, PAGE_MAX, pageParams } from './paging.mjs';
import { Feeds, Subscriber, inKeysetOrder } from './feed.mjs';


/** How often an open event stream looks for new rows. */
export const POLL_MS = 1000;
/** A comment line goes out when nothing else has for this long, so that proxies and the
 * page see the connection is alive (the page reconnects after 40 s of silence). */
export const COMMENT_MS = 15_000;
/** Each poll reads again the rows that arrived up to this long before the newest one it
 * has sent, and sends those it has not sent yet. received_at is taken when a request is
 * handled, not when its transaction commits: a record stamped earlier can become visible
 * after a later one was sent (a slow commit, a second server instance, or a clock a few
 * seconds apart between two instances). A record that becomes visible later than this
 * after the newest one sent is not streamed; reloading the page lists it. */
export const LATE_MS = 10_000;
/** Open event streams at most, per class and per client address, in one server process.
 * One more is answered 429 naming the limit. A teacher with the dashboard open in a few
 * tabs (or a few teachers of one class) is well within both; a script that opens streams
 * in a loop is not. */
export const STREAMS_PER_CLASS = 8;
export const STREAMS_PER_ADDRESS = 16;
/** The most records a stream sends from before it opened (a page that reconnects with an
 * old position, or a stream opened with none): past this it says so in an `overflow`
 * event and goes on from the live position; the list and the CSV are for a whole term. */
export const BACKLOG_MAX = 500;
/** The backlog goes out this many records a turn of the event loop. */
export const BACKLOG_PAGE = 200;
/** Backlog pages read from the database at once, per process; others wait their turn (the
 * database's connections stay free for other clients' requests). */
export const BACKLOG_READERS = 2;

// exercise: numbered from 1, as the grid numbers it; answer: as the page shows it (a choice
// in words), answer_id: as stored (course/words.mjs)
export const PROGRESS_CSV_COLUMNS = ['id', 'student_id', 'name', 'type', 'lesson', 'exercise', 'kind', 'seed', 'answer', 'answer_id', 'verdict', 'tries', 'hint', 'shown', 'hint_opened', 'score_right', 'score_of', 'at', 'received_at'];

class DashboardError extends Error {
  constructor(statusCode, message) { super(message); this.statusCode = statusCode; }
}
const fail = (status, message) => { throw new DashboardError(status, message); };
/** An ISO time `ms` milliseconds before `iso` (same format: the tables compare them as text). */
const before = (iso, ms) => new Date(Date.parse(iso) - ms).toISOString();

const RECORD_COLUMNS = ['p.id', 'p.student_id', 'p.type', 'p.lesson', 'p.exercise', 'p.kind', 'p.seed', 'p.answer', 'p.verdict', 'p.tries', 'p.hint', 'p.shown', 'p.hint_opened', 'p.score_right', 'p.score_of', 'p.at', 'p.received_at', 's.name as student_name'];

/** A progress row as the API answers it (the list, the events). PostgreSQL returns bigint
 * (the seed) as text and both stores keep hint and shown as 0/1. */
export function recordOf(r) {
  return {
    id: r.id, type: r.type, lesson: r.lesson, exercise: r.exercise ?? null, kind: r.kind ?? null,
    seed: r.seed === null || r.seed === undefined ? null : Number(r.seed), answer: r.answer ?? null,
    verdict: r.verdict, tries: r.tries ?? null, hint: Number(r.hint) === 1, shown: Number(r.shown) === 1, hint_opened: Number(r.hint_opened) === 1,
    score: r.score_of === null || r.score_of === undefined ? null : { right: Number(r.score_right), of: Number(r.score_of) },
    at: r.at, received_at: r.received_at, student: { id: r.student_id, name: r.student_name ?? null },
  };
}
const studentOf = (r) => ({ id: r.id, name: r.name, joined_at: r.joined_at });
/** The keyset position after a row, as paging.mjs writes cursors (its time and id). */
const cursorAfter = (time, id) => encodeCursor({ created_at: time, id });

/**
 * (time, id) keyset over `time`: strictly after `after` ({created_at, id}, a decoded
 * cursor), from `from` on (inclusive), ordered, limit + 1 rows (one more tells whether a
 * page follows).
 */
function keysetOn(q, time, id, { limit, after = null, from = null }) {
  if (from) q = q.where(time, '>=', from);
  if (after) {
    // the plain >= lets the index (class_code, time, id) be entered at the cursor
    q = q.where(time, '>=', after.created_at)
      .where((eb) => eb.or([eb(time, '>', after.created_at), eb.and([eb(time, '=', after.created_at), eb(id, '>', after.id)])]));
  }
  return q.orderBy(time).orderBy(id).limit(limit + 1);
}

/** @param {import('fastify').FastifyInstance} app
 * @param {{ store: import('./db.mjs').Store, pollMs?: number, commentMs?: number, lateMs?: number, streamsPerClass?: number, streamsPerAddress?: number }} opts */
export async function dashboardRoutes(app, opts) {
  const { store } = opts;
  const db = store.db;
  const pollMs = opts.pollMs ?? POLL_MS;
  const commentMs = opts.commentMs ?? COMMENT_MS;
  const lateMs = opts.lateMs ?? LATE_MS;
  const perClass = opts.streamsPerClass ?? STREAMS_PER_CLASS;
  const perAddress = opts.streamsPerAddress ?? STREAMS_PER_ADDRESS;
  const backlogMax = opts.backlogMax ?? BACKLOG_MAX;
  // a turn at reading a backlog: BACKLOG_READERS at once, first come first served
  const readers = { free: BACKLOG_READERS, waiting: [] };
  const backlogTurn = async (signal) => {
    if (readers.free > 0) { readers.free--; return; }
    const granted = await new Promise((resolve) => {
      const entry = { resolve: () => resolve(true) };
      readers.waiting.push(entry);
      signal.addEventListener('abort', () => { readers.waiting = readers.waiting.filter((e) => e !== entry); resolve(false); }, { once: true });
    });
    if (signal.aborted) {
      if (granted) backlogDone(); // the slot came with the abort: passed on
      throw Object.assign(new Error('the client went'), { aborted: true });
    }
  };
  const backlogDone = () => {
    const next = readers.waiting.shift();
    if (next) next.resolve(); else readers.free++;
  };
  /** A backlog's database read, in its turn; the slot is free again while the page is
   * written to its client (one that does not read holds no slot). */
  const inTurn = async (signal, read) => {
    await backlogTurn(signal);
    try { return await read(); } finally { backlogDone(); }
  };

  /** The class, once the request carries its teacher token. */
  const loadClass = classLoader(store, fail);
  const teacherClass = async (req) => {
    const cls = await loadClass(req.params.code);
    if (!sameHash(bearerHash(req, fail, { needs: 'teacher token' }), cls.teacher_hash)) fail(403, 'this token is not the teacher token of this class');
    return cls;
  };

  const progressQuery = (code) => db.selectFrom('progress as p')
    .leftJoin('students as s', (j) => j.onRef('s.id', '=', 'p.student_id').onRef('s.class_code', '=', 'p.class_code'))
    .select(RECORD_COLUMNS).where('p.class_code', '=', code);
  /** One page of records: { rows, next_cursor, end_cursor } (end_cursor: after the page's
   * last row, null for an empty page; it is what the event stream takes as `after`). */
  const recordsPage = async (code, page) => {
    // keys by an index-only keyset scan, then the rows by primary key (see the backlog)
    const keys = await keysetOn(db.selectFrom('progress').select(['received_at', 'id']).where('class_code', '=', code), 'received_at', 'id', page).execute();
    const want = keys.slice(0, page.limit);
    const rows = want.length ? await progressQuery(code).where('p.id', 'in', want.map((k) => k.id)).execute().then(inKeysetOrder) : [];
    const last = want[want.length - 1]; // a row deleted in between moves no cursor
    const end = last ? cursorAfter(last.received_at, last.id) : null;
    return { rows, next_cursor: keys.length > page.limit ? end : null, end_cursor: end };
  };
  const studentsQuery = (code) => db.selectFrom('students').select(['id', 'name', 'joined_at']).where('class_code', '=', code);
  // What a feed fans out: each item's event text made once for every stream of the class.
  const progressItem = (r) => ({ kind: 'progress', id: r.id, t: r.received_at, text: `event: progress\ndata: ${JSON.stringify(recordOf(r))}\n\n` });
  const studentItem = (r) => ({ kind: 'student', id: r.id, t: r.joined_at, text: `event: student\ndata: ${JSON.stringify(studentOf(r))}\n\n` });
  const feeds = new Feeds({ store, log: app.log, pollMs, lateMs, commentMs, progressQuery, progressItem, studentItem });
  if (opts.bus) opts.bus.feeds = feeds;
  app.addHook('onClose', async () => { await feeds.close(); });

  app.get('/api/classes/:code/progress/students', async (req) => {
    const cls = await teacherClass(req);
    const page = pageParams(req.query);
    const rows = await keysetOn(studentsQuery(cls.code), 'joined_at', 'id', page).execute();
    const shown = rows.slice(0, page.limit);
    const last = shown[shown.length - 1];
    return { class: { code: cls.code, name: cls.name }, students: shown.map(studentOf), next_cursor: rows.length > page.limit ? cursorAfter(last.joined_at, last.id) : null };
  });

  app.get('/api/classes/:code/progress', async (req) => {
    const cls = await teacherClass(req);
    const page = pageParams(req.query);
    const { rows, next_cursor, end_cursor } = await recordsPage(cls.code, page);
    return { class: { code: cls.code, name: cls.name }, records: rows.map(recordOf), next_cursor, end_cursor };
  });

  // Open event streams, counted per class and per address (this process only).
  const open = { byClass: new Map(), byAddress: new Map(), stops: new Set() };
  const bump = (map, key, d) => { const n = (map.get(key) ?? 0) + d; if (n > 0) map.set(key, n); else map.delete(key); };
  // Fastify closing (SIGTERM, Ctrl-C): every stream ends at once, as a finished reply,
  // instead of holding the close until its client goes.
  app.addHook('preClose', async () => { for (const stop of open.stops) stop.abort(); });

  app.get('/api/classes/:code/progress/events', async (req, reply) => {
    const cls = await teacherClass(req);
    // An event stream never ends by itself: a client that did not ask for one (a script,
    // a fuzzer, a browser opening the URL) gets a 406 instead of a reply that never ends.
    if (!/\btext\/event-stream\b/.test(String(req.headers.accept ?? ''))) fail(406, 'this is an event stream: send "Accept: text/event-stream"');
    const rawAfter = req.query?.after ?? req.headers['last-event-id'];
    if (Array.isArray(rawAfter)) fail(400, 'after: one value');
    let after = null;
    try { after = rawAfter === undefined || rawAfter === '' ? null : decodeCursor(rawAfter); } catch { fail(400, 'after: send the end_cursor of the progress list (or the id of the last event) as it was'); }
    const addr = req.ip ?? 'unknown';
    const full = (open.byClass.get(cls.code) ?? 0) >= perClass ? `this class has ${perClass} dashboard streams open already (the most one class may have)`
      : (open.byAddress.get(addr) ?? 0) >= perAddress ? `your address has ${perAddress} dashboard streams open already (the most one address may have)` : null;
    if (full) { reply.header('Retry-After', '15'); fail(429, `${full}; close a dashboard tab and try again`); }

    bump(open.byClass, cls.code, 1); bump(open.byAddress, addr, 1);
    const stop = new AbortController();
    open.stops.add(stop);
    const stream = Readable.from(events(cls.code, after, stop.signal), { objectMode: false });
    // The reply ends (the client gone, or the stream finished): stop polling (a poll under
    // way or the wait for the next one ends at once), give the place back.
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true; stop.abort(); open.stops.delete(stop);
      bump(open.byClass, cls.code, -1); bump(open.byAddress, addr, -1);
    };
    reply.raw.once('close', end);
    stream.once('close', end);
    // X-Accel-Buffering: nginx in front passes each event on as it comes. Connection: close:
    // the connection ends with the stream; kept alive, it would hold the server's close
    // (SIGTERM) until its keep-alive timeout, and the page opens a new one anyway.
    reply.type('text/event-stream; charset=utf-8').header('Cache-Control', 'no-cache, no-transform').header('X-Accel-Buffering', 'no').header('Connection', 'close');
    return reply.send(stream);
  });

  /**
   * The event stream of class `code` as text chunks: a first comment, the backlog from
   * `after` (a page at a time, the event loop turning between pages; at most backlogMax
   * records, past which an `overflow` event points to the list and the CSV and the stream
   * goes on from the live position), then what the class's feed fans out (feed.mjs: one
   * reader per class, however many streams are open). `id:` is the keyset position when it
   * moves forward, so that a client resumes with it; a comment whenever nothing went out
   * for commentMs; `gone` when the class is deleted. Pulled: a client that reads slowly
   * lets its items wait, and one that falls far behind is ended (it reconnects).
   */
  async function* events(code, after, signal) {
    const sub = new Subscriber();
    const unsubscribe = feeds.subscribe(code, sub);
    const sent = new Map(); const sentStudents = new Map(); // id -> time, within the late window
    let high = after ? { t: after.created_at, id: after.id } : null;
    let lastOut = Date.now();
    const out = (text) => { lastOut = Date.now(); return Buffer.from(text, 'utf8'); };
    const fmt = (item) => {
      if (item.kind === 'progress') {
        if (sent.has(item.id)) return '';
        sent.set(item.id, item.t);
        const ahead = !high || item.t > high.t || (item.t === high.t && item.id > high.id);
        if (ahead) high = { t: item.t, id: item.id };
        return `${ahead ? `id: ${cursorAfter(item.t, item.id)}\n` : ''}${item.text}`;
      }
      if (item.kind === 'student') {
        if (sentStudents.has(item.id)) return '';
        sentStudents.set(item.id, item.t);
      }
      return item.text ?? '';
    };
    const prune = () => {
      if (!high) return;
      const floor = before(high.t, lateMs);
      for (const m of [sent, sentStudents]) for (const [id, t] of m) if (t < floor) m.delete(id);
    };
    try {
      yield out(': live\n\n');
      // The backlog: from the late window before `after` (the page keeps each id once), or
      // from the class's first record.
      const from = after ? before(after.created_at, lateMs) : null;
      let count = 0; let overflow = false;
      for (let page = null; !signal.aborted;) {
        const rows = await inTurn(signal, () => keysetOn(studentsQuery(code), 'joined_at', 'id', { limit: PAGE_MAX, after: page, from }).execute());
        const text = rows.slice(0, PAGE_MAX).map((r) => fmt(studentItem(r))).join('');
        if (text) yield out(text);
        if (rows.length <= PAGE_MAX) break;
        const last = rows[PAGE_MAX - 1]; page = { created_at: last.joined_at, id: last.id };
        await turn();
      }
      // Records a page of BACKLOG_PAGE at a time: their keys by an index-only keyset scan of
      // (class_code, received_at, id), then the rows by primary key (a join of the whole
      // class sorted was what a loaded PostgreSQL could not finish within its second).
      for (let page = null; !signal.aborted;) {
        const size = Math.min(BACKLOG_PAGE, backlogMax - count);
        const [shown, more, rows] = await inTurn(signal, async () => {
          const keys = await keysetOn(db.selectFrom('progress').select(['received_at', 'id']).where('class_code', '=', code), 'received_at', 'id', { limit: size, after: page, from }).execute();
          const want = keys.slice(0, size);
          return [want, keys.length > size, want.length ? await progressQuery(code).where('p.id', 'in', want.map((k) => k.id)).execute().then(inKeysetOrder) : []];
        });
        const text = rows.map((r) => fmt(progressItem(r))).join('');
        count += shown.length;
        if (text) yield out(text);
        if (!more) break;
        if (count >= backlogMax) { overflow = true; break; }
        const last = shown[shown.length - 1]; page = { created_at: last.received_at, id: last.id };
        await turn();
      }
      if (overflow) {
        // More than a dashboard needs to catch up on: the list (a page at a time) or the CSV
        // has it. The stream goes on from where the feed is.
        const live = await feeds.position(code);
        if (live && (!high || live.t > high.t || (live.t === high.t && live.id > high.id))) high = live;
        const data = {
          message: `more than ${backlogMax} records arrived since this position: list them with GET /api/classes/${code}/progress (a page at a time) or download /api/classes/${code}/progress.csv; the stream goes on from now`,
          list: `/api/classes/${code}/progress`, csv: `/api/classes/${code}/progress.csv`,
        };
        yield out(`${high ? `id: ${cursorAfter(high.t, high.id)}\n` : ''}event: overflow\ndata: ${JSON.stringify(data)}\n\n`);
      }
      prune();
      while (!signal.aborted) {
        await sub.wait(Math.max(0, commentMs - (Date.now() - lastOut)), signal);
        if (signal.aborted || sub.overflowed) return; // one far behind reconnects from its last id
        let text = '';
        for (const item of sub.take()) {
          text += fmt(item);
          if (item.kind === 'gone') { yield out(`${text}event: gone\ndata: {}\n\n`); return; }
        }
        prune();
        if (text) yield out(text);
        else if (Date.now() - lastOut >= commentMs) yield out(': keep-alive\n\n');
      }
    } finally { unsubscribe(); }
  }

  // Streamed a page of rows at a time, as csv.mjs streams the uploads; a UTF-8 BOM first
  // unless ?bom=0; the same neutralised cells.
  app.get('/api/classes/:code/progress.csv', async (req, reply) => {
    const cls = await teacherClass(req);
    const bom = bomParam(req.query);
    const pageSize = CSV_PAGE;
    let page = await recordsPage(cls.code, { limit: pageSize, after: null });
    const lineOf = (cells) => `${cells.map(csvCell).join(',')}\r\n`;
    const rowLine = (r) => {
      const x = recordOf(r);
      return lineOf([x.id, x.student.id, x.student.name, x.type, x.lesson, x.exercise === null ? null : x.exercise + 1, x.kind, x.seed, answerWords(x.answer), x.answer, x.verdict, x.tries, x.hint ? 1 : 0, x.shown ? 1 : 0, x.hint_opened ? 1 : 0, x.score?.right ?? null, x.score?.of ?? null, x.at, x.received_at]);
    };
    async function* chunks() {
      let text = (bom ? '\uFEFF' : '') + lineOf(PROGRESS_CSV_COLUMNS);
      for (;;) {
        for (const r of page.rows) text += rowLine(r);
        yield Buffer.from(text, 'utf8');
        text = '';
        if (!page.next_cursor) return;
        await new Promise((resolve) => setImmediate(resolve)); // other requests between pages
        page = await recordsPage(cls.code, { limit: pageSize, after: decodeCursor(page.next_cursor) });
      }
    }
    reply.type('text/csv; charset=utf-8').header('Content-Disposition', `attachment; filename="vmemlab-${cls.code}-progress.csv"`);
    return reply.send(Readable.from(chunks(), { objectMode: false }));
  });

}

// The routes above in the server's OpenAPI description (openapi.mjs spreads these in).
const err = (...codes) => Object.fromEntries(codes.map((c) => [String(c), { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }]));
const codeParam = { name: 'code', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$' } };
const pageParamSpecs = (what) => [
  { name: 'limit', in: 'query', required: false, description: `${what} per page (default and most: ${PAGE_MAX})`, schema: { type: 'integer', minimum: 1, maximum: PAGE_MAX } },
  { name: 'cursor', in: 'query', required: false, description: 'the next_cursor of the previous page, as it came', schema: { type: 'string', maxLength: 120, pattern: '^[A-Za-z0-9_-]+$' } },
];
const teacher = [{ token: [] }];
export const dashboardOpenapi = {
  schemas: {
    ProgressRow: {
      type: 'object', required: ['id', 'type', 'lesson', 'verdict', 'at', 'received_at', 'student'],
      properties: {
        id: { type: 'string' }, type: { enum: ['attempt', 'done'] }, lesson: { type: 'string' },
        exercise: { type: ['integer', 'null'], description: 'the exercise\'s position in the lesson (null for done)' },
        kind: { type: ['string', 'null'] }, seed: { type: ['integer', 'null'] }, answer: { type: ['string', 'null'] },
        verdict: { enum: ['correct', 'wrong', 'empty', 'done', 'undone'], description: 'an attempt\'s verdict as the server graded it; for done: done or undone' },
        tries: { type: ['integer', 'null'] }, hint: { type: 'boolean', description: 'the student pressed Hint' }, shown: { type: 'boolean', description: 'the answer was shown' },
        hint_opened: { type: 'boolean', description: 'the page had opened the hint itself after a wrong try (not pressed; costs no points)' },
        score: { type: ['object', 'null'], required: ['right', 'of'], properties: { right: { type: 'integer', minimum: 0 }, of: { type: 'integer', minimum: 1 } }, description: 'a walk-grid attempt\'s cells right of all (its partial credit); null for other kinds' },
        at: { type: 'string', description: 'the student\'s clock' }, received_at: { type: 'string', description: 'the server\'s clock (ISO, ms)' },
        student: { type: 'object', required: ['id', 'name'], properties: { id: { type: 'string' }, name: { type: ['string', 'null'] } } },
      },
    },
  },
  paths: {
    '/api/classes/{code}/progress/students': {
      get: {
        operationId: 'listStudents', summary: 'Teacher: the students who joined the class, a page at a time in joining order', parameters: [codeParam, ...pageParamSpecs('students')], security: teacher,
        responses: {
          200: { description: 'one page of students; next_cursor is null on the last page', content: { 'application/json': { schema: { type: 'object', required: ['class', 'students', 'next_cursor'], properties: { class: { type: 'object' }, students: { type: 'array', maxItems: PAGE_MAX, items: { type: 'object', required: ['id', 'name', 'joined_at'], properties: { id: { type: 'string' }, name: { type: 'string' }, joined_at: { type: 'string' } } } }, next_cursor: { type: ['string', 'null'] } } } } } },
          ...err(400, 401, 403, 404, 503),
        },
      },
    },
    '/api/classes/{code}/progress': {
      get: {
        operationId: 'listProgress', summary: 'Teacher: the students\' progress records (attempts at exercises, lessons marked done), a page at a time in arrival order (received_at, id)', parameters: [codeParam, ...pageParamSpecs('records')], security: teacher,
        responses: {
          200: {
            description: 'one page of records; next_cursor is null on the last page; end_cursor (after this page\'s last record, null for an empty page) is what the event stream takes as after',
            content: { 'application/json': { schema: { type: 'object', required: ['class', 'records', 'next_cursor', 'end_cursor'], properties: { class: { type: 'object' }, records: { type: 'array', maxItems: PAGE_MAX, items: { $ref: '#/components/schemas/ProgressRow' } }, next_cursor: { type: ['string', 'null'] }, end_cursor: { type: ['string', 'null'] } } } } },
          },
          ...err(400, 401, 403, 404, 503),
        },
      },
    },
    '/api/classes/{code}/progress/events': {
      get: {
        operationId: 'progressEvents',
        summary: `Teacher: the records (event "progress", the list's record shape; "id:" the position to resume from) and students (event "student": one who joined, or renamed; event "removed": one removed) that arrive, as text/event-stream, after a backlog from "after" of at most ${BACKLOG_MAX} records (past it, event "overflow" points to the list and the CSV and the stream goes on from now); a comment line when nothing went out for ${COMMENT_MS / 1000} s; event "gone" when the class is deleted. Send "Accept: text/event-stream" (else 406). One reader per class feeds every stream; records stored by another server instance on the same database come too. At most ${STREAMS_PER_CLASS} open streams per class and ${STREAMS_PER_ADDRESS} per client address (per server process); one more is 429`,
        parameters: [codeParam, { name: 'after', in: 'query', required: false, description: 'the end_cursor of the progress list, or the id of the last event received; absent: from the class\'s first record. Records from up to 10 s before it may come again: a client keeps each record id once', schema: { type: 'string', maxLength: 120, pattern: '^[A-Za-z0-9_-]+$' } }],
        security: teacher,
        responses: { 200: { description: 'an event stream that ends when the client goes away', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...err(400, 401, 403, 404, 406, 429) },
      },
    },
    '/api/classes/{code}/progress.csv': {
      get: {
        operationId: 'exportProgressCsv', summary: `Teacher: every progress record as CSV (streamed, in arrival order): ${PROGRESS_CSV_COLUMNS.join(', ')}. Cells are written as in export.csv (numbers plain; text that a spreadsheet could read as a formula gets a leading '; RFC 4180 quoting)`,
        parameters: [codeParam, { name: 'bom', in: 'query', required: false, schema: { enum: ['0', '1'], default: '1' }, description: 'the file starts with a UTF-8 byte order mark; bom=0 leaves it out' }],
        security: teacher,
        responses: { 200: { description: 'CSV, UTF-8, CRLF line ends, a byte order mark first unless bom=0', content: { 'text/csv': { schema: { type: 'string' } } } }, ...err(400, 401, 403, 404, 503) },
      },
    },
  },
};
