// A course on the class server: the roster, joining as a roster student, moving to another
// device, merging two rows, the grading settings with closing times, scores and the
// gradebook an LMS imports. A Fastify plugin (registered by one line of app.mjs after the
// progress plugin, whose students it refers to); its tables are course/store.mjs's.
//
//   GET    /api/classes/:code/course              the grading settings and closing times (anyone with the code)
//   PUT    /api/classes/:code/course              teacher: save them
//   POST   /api/classes/:code/roster              teacher: text/csv (or text/plain) roster; adds and updates by ID/email/login
//   GET    /api/classes/:code/roster              teacher: the roster, who joined as whom
//   DELETE /api/classes/:code/roster/:id          teacher: one roster entry
//   GET    /api/classes/:code/roster/names        anyone with the code: names to pick from (no IDs)
//   POST   /api/classes/:code/roster/join         {"id"} (typed) or {"entry"} (picked) -> a student, as joining does
//   POST   /api/classes/:code/students/me/link    receipt: a one-time code (15 min) that moves this student to another browser
//   POST   /api/classes/:code/students/link       {"code"} -> the same student with a receipt of this browser's own
//   POST   /api/classes/:code/students/merge      teacher: {"into", "from"}: from's records, devices and roster entry go to into
//   GET    /api/classes/:code/scores              teacher: every student's scores
//   GET    /api/classes/:code/students/me/scores  receipt: the student's own
//   GET    /api/classes/:code/grades              teacher: the gradebook CSV (?format=plain|canvas|moodle, ?lang=en|ja|zh, ?bom=0)
//
// Joining (by ID, a picked name or a device code) counts as a join, and a device code made
// or a roster loaded as a write, in the server's one write budget (budget.mjs, shared with
// progress.mjs): 429 with Retry-After past it, nothing stored. A refused ID or code counts
// too, which bounds guessing them.
import { randomBytes, randomInt } from 'node:crypto';
import { WriteBudget } from '../budget.mjs';
import { bearerHash, classLoader, hashToken, sameHash } from '../classes.mjs';
import { bomParam } from '../csv.mjs';
import { catalog, LANGS } from './catalog.mjs';
import { courseOf, utc } from './deadline.mjs';
import { FORMATS, gradebookCsv } from './gradebook.mjs';
import { idKey, parseRoster, ROSTER_BYTES, ROSTER_MAX } from './roster.mjs';
import { gradedLessons, studentScores } from './scoring.mjs';
import { checkSettings } from './settings.mjs';
import { exec, migrateCourse } from './store.mjs';

/** Routes a closed class still takes (app.mjs's closed-class hook lets them through):
 * the teacher's course settings, roster and merges, and a student moving to another
 * device, none of which stores an answer. */
export const OPEN_WHEN_CLOSED = ['/api/classes/:code/course', '/api/classes/:code/roster', '/api/classes/:code/students/merge',
  '/api/classes/:code/students/me/link', '/api/classes/:code/students/link'];

export const LINK_TTL_MS = 15 * 60_000;
const LINK_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const LINK_RE = /^[A-Za-z0-9]{4}-?[A-Za-z0-9]{4}$/;

class CourseError extends Error {
  constructor(statusCode, message, need) { super(message); this.statusCode = statusCode; if (need) this.need = need; }
}
/** 429 past the write budget (WriteBudget's refusal), with Retry-After. */
const overBudget = (reply, over) => {
  if (!over) return;
  reply.header('Retry-After', String(over.seconds));
  fail(429, `${over.message}; nothing was stored. Try again in ${over.seconds} s`);
};
const fail = (status, message, need) => { throw new CourseError(status, message, need); };
const newId = () => randomBytes(9).toString('base64url');
const newLinkCode = () => { let s = ''; for (let i = 0; i < 8; i++) s += LINK_ALPHABET[randomInt(LINK_ALPHABET.length)]; return `${s.slice(0, 4)}-${s.slice(4)}`; };
const linkHash = (code, link) => hashToken(`device-link\0${code}\0${link.replace('-', '').toUpperCase()}`);

/** The body's JSON object with exactly the given fields (all optional), or 400. */
function fields(req, allowed) {
  const b = req.body;
  if (!b || typeof b !== 'object' || !('json' in b)) fail(415, 'send the document with Content-Type: application/json');
  const j = b.json;
  if (!j || typeof j !== 'object' || Array.isArray(j)) fail(400, `send a JSON object with ${allowed.map((f) => `"${f}"`).join(' or ')}`);
  const extra = Object.keys(j).find((k) => !allowed.includes(k));
  if (extra !== undefined) fail(400, `/${extra}: is not a field here (${allowed.join(', ')})`);
  return j;
}
const text = (v, where, max) => {
  if (typeof v !== 'string' || !v.trim()) fail(400, `${where}: is required (text)`);
  if (v.length > max) fail(400, `${where}: at most ${max} characters`);
  return v.trim();
};

/** @param {import('fastify').FastifyInstance} app @param {{ store: import('../db.mjs').Store, budget?: WriteBudget }} opts */
export async function courseRoutes(app, opts) {
  const { store } = opts;
  const budget = opts.budget ?? new WriteBudget(false);
  const addressOf = (req) => req.ip ?? 'unknown';
  const db = store.db;
  await migrateCourse(db);
  const course = courseOf(store);
  const loadClass = classLoader(store, fail);
  const teacherOnly = (req, cls) => {
    if (!sameHash(bearerHash(req, fail, { needs: 'the teacher token' }), cls.teacher_hash)) fail(403, 'this token is not the teacher token of this class');
  };
  const studentOf = async (req, cls) => {
    const h = bearerHash(req, fail, { needs: 'the receipt you got when you joined' });
    const row = await course.studentByReceipt(cls.code, h);
    if (!row || !sameHash(h, row.receipt_hash)) fail(403, `this receipt is not a student's of class ${cls.code} (removed, or the class was deleted?); join the class again`);
    return row;
  };
  const origin = (req) => `${req.protocol}://${req.headers.host ?? 'localhost'}`;

  // A roster comes as the file an LMS exports (or pasted lines): text/csv or text/plain,
  // UTF-8, up to ROSTER_BYTES; this plugin's routes only.
  app.addContentTypeParser(/^text\/(csv|plain)(;|$)/, { parseAs: 'buffer', bodyLimit: ROSTER_BYTES }, (_req, buf, done) => {
    try { done(null, { csv: new TextDecoder('utf-8', { fatal: true }).decode(buf) }); } catch { done(new CourseError(400, 'the roster is not UTF-8 text; save it as "CSV UTF-8" and send it again')); }
  });

  const publicSettings = (s, cls) => ({ class: cls.code, closed_at: cls.closed_at ?? null, now: new Date().toISOString(), lessons: gradedLessons(catalog(), s), settings: s });

  app.get('/api/classes/:code/course', async (req) => {
    const cls = await loadClass(req.params.code);
    return publicSettings(await course.settings(cls.code), cls);
  });

  app.put('/api/classes/:code/course', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    const b = req.body;
    if (!b || typeof b !== 'object' || !('json' in b)) fail(415, 'send the settings with Content-Type: application/json');
    const s = checkSettings(b.json, catalog());
    await course.saveSettings(cls.code, s);
    return publicSettings(s, cls);
  });

  // ---- the roster ----
  app.post('/api/classes/:code/roster', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    overBudget(reply, budget.write(addressOf(req)));
    // an empty body reaches no parser: an empty roster
    const csv = req.body?.csv ?? (/^text\/(csv|plain)/.test(req.headers['content-type'] ?? '') ? '' : undefined);
    if (typeof csv !== 'string') fail(415, 'send the roster as Content-Type: text/csv (the file your LMS exports) or text/plain (pasted lines: ID, name)');
    const entries = parseRoster(csv);
    const existing = await course.roster(cls.code);
    // A roster entry is the same student when its ID, email or login is (case aside):
    // loading a roster again updates names and fields and keeps who joined as whom.
    const keyOf = new Map();
    for (const r of existing) for (const k of ['sis_id', 'email', 'login']) if (r[k]) keyOf.set(`${k}\n${idKey(r[k])}`, r);
    const names = new Map(existing.map((r) => [r.name, r]));
    const inserts = []; const updates = [];
    for (const e of entries) {
      const prior = ['sis_id', 'email', 'login'].map((k) => e[k] && keyOf.get(`${k}\n${idKey(e[k])}`)).find(Boolean);
      const clash = names.get(e.name);
      if (clash && clash !== prior) fail(409, `"${e.name}" is already on the roster with another ID (${clash.sis_id ?? clash.email ?? clash.login}); give one of them a distinguishing name`);
      if (prior) updates.push({ id: prior.id, e });
      else inserts.push(e);
      names.set(e.name, prior ?? e);
    }
    if (existing.length + inserts.length > ROSTER_MAX) fail(413, `a class's roster holds at most ${ROSTER_MAX} students; this would make ${existing.length + inserts.length}`);
    const now = new Date().toISOString();
    const qs = [
      // names first moved aside, so that two entries may swap names in one load
      ...updates.map(({ id }) => db.updateTable('roster').set({ name: `~${id}~` }).where('id', '=', id)),
      ...updates.map(({ id, e }) => db.updateTable('roster').set({ name: e.name, sis_id: e.sis_id, email: e.email, login: e.login, canvas_id: e.canvas_id, section: e.section }).where('id', '=', id)),
      ...inserts.map((e) => db.insertInto('roster').values({ id: newId(), class_code: cls.code, ...e, student_id: null, added_at: now })),
    ];
    if (qs.length) await exec(store, qs);
    return { class: cls.code, added: inserts.length, updated: updates.length, students: existing.length + inserts.length };
  });

  app.get('/api/classes/:code/roster', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    return { class: cls.code, roster: await course.roster(cls.code) };
  });

  app.delete('/api/classes/:code/roster/:id', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    if (!ID_RE.test(req.params.id)) fail(400, 'a roster entry id is 1-32 letters, digits, "-" or "_"');
    const [n] = await exec(store, [db.deleteFrom('roster').where('class_code', '=', cls.code).where('id', '=', req.params.id)]);
    if (!n) fail(404, 'no such roster entry in this class (already removed?)');
    return { deleted: req.params.id };
  });

  // Names only, to pick from: anyone with the join code sees the class's names (the
  // teacher's list of who uploaded does not; this one is for joining).
  app.get('/api/classes/:code/roster/names', async (req) => {
    const cls = await loadClass(req.params.code);
    const roster = await course.roster(cls.code);
    return { class: cls.code, students: roster.map((r) => ({ entry: r.id, name: r.name, joined: !!r.student_id })) };
  });

  app.post('/api/classes/:code/roster/join', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    const j = fields(req, ['id', 'entry']);
    if ((j.id === undefined) === (j.entry === undefined)) fail(400, 'send {"id": "your student ID or email"} or {"entry": "..."} (a name picked from the list)');
    overBudget(reply, budget.join(cls.code, addressOf(req)));
    let entry;
    if (j.entry !== undefined) {
      if (typeof j.entry !== 'string' || !ID_RE.test(j.entry)) fail(400, '/entry: a roster entry id from /roster/names');
      entry = await course.rosterEntry(cls.code, j.entry);
      if (!entry) fail(404, `/entry: no such student on the roster of class ${cls.code}`);
    } else {
      const found = await course.rosterByKey(cls.code, idKey(text(j.id, '/id', 254)));
      if (!found.length) fail(404, `/id: "${j.id}" is not on the roster of class ${cls.code}; check it, pick your name from the list, or ask your teacher`);
      entry = found[0];
    }
    if (entry.student_id) fail(409, `${entry.name} has joined already, from another browser. To work here too, open "Continue on another device" on that browser and use its link or code here; if that browser is lost, ask your teacher`, 'device_link');
    const receipt = randomBytes(16).toString('base64url');
    const student = { id: newId(), class_code: cls.code, name: entry.name, receipt_hash: hashToken(receipt), joined_at: new Date().toISOString() };
    // The student, then the claim of the roster entry (only while nobody holds it), then
    // the student again unless the claim went through: one transaction.
    const [made, claimed] = await exec(store, [
      db.insertInto('students').values(student).onConflict((oc) => oc.columns(['class_code', 'name']).doNothing()),
      db.updateTable('roster').set({ student_id: student.id }).where('id', '=', entry.id).where('student_id', 'is', null)
        .where((eb) => eb.exists(eb.selectFrom('students').select('id').where('id', '=', student.id))),
      db.deleteFrom('students').where('id', '=', student.id)
        .where((eb) => eb.not(eb.exists(eb.selectFrom('roster').select('id').where('student_id', '=', student.id)))),
    ]);
    if (!made) fail(409, `a student named "${entry.name}" joined this class without the roster; your teacher can merge that row with yours`);
    if (!claimed) fail(409, `${entry.name} has joined already, from another browser; use "Continue on another device" there`, 'device_link');
    reply.code(201);
    return { student_id: student.id, receipt, name: student.name, class: cls.code };
  });

  // ---- one student, any device ----
  app.post('/api/classes/:code/students/me/link', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    const student = await studentOf(req, cls);
    overBudget(reply, budget.write(addressOf(req)));
    const code = newLinkCode();
    const expires = new Date(Date.now() + LINK_TTL_MS).toISOString();
    // one link at a time per student: a new one replaces the last
    await exec(store, [
      db.deleteFrom('device_links').where('student_id', '=', student.id),
      db.insertInto('device_links').values({ code_hash: linkHash(cls.code, code), class_code: cls.code, student_id: student.id, expires_at: expires }),
    ]);
    return { code, expires_at: expires, url: `${origin(req)}/?view=results&class=${cls.code}#link=${code}`, name: student.name, class: cls.code };
  });

  app.post('/api/classes/:code/students/link', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    const j = fields(req, ['code']);
    if (typeof j.code !== 'string' || !LINK_RE.test(j.code.trim())) fail(400, '/code: the 8-character code shown under "Continue on another device" (ABCD-2345)');
    overBudget(reply, budget.join(cls.code, addressOf(req)));
    const h = linkHash(cls.code, j.code.trim());
    const link = await db.selectFrom('device_links as l').innerJoin('students as s', 's.id', 'l.student_id')
      .select(['l.student_id', 'l.expires_at', 's.name']).where('l.code_hash', '=', h).where('l.class_code', '=', cls.code).executeTakeFirst();
    const now = new Date().toISOString();
    if (!link || link.expires_at <= now) fail(404, 'this code is not (or no longer) valid: a code works once, for 15 minutes; make a new one on your first device');
    // Used once: whoever deletes it first gets the device.
    const [gone] = await exec(store, [db.deleteFrom('device_links').where('code_hash', '=', h).where('expires_at', '>', now)]);
    if (!gone) fail(404, 'this code was just used; make a new one on your first device');
    const receipt = randomBytes(16).toString('base64url');
    try {
      await exec(store, [db.insertInto('student_devices').values({ receipt_hash: hashToken(receipt), class_code: cls.code, student_id: link.student_id, added_at: now })]);
    } catch (e) {
      if (e?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || e?.code === '23503') fail(404, 'this student was removed from the class meanwhile');
      throw e;
    }
    return { student_id: link.student_id, receipt, name: link.name, class: cls.code };
  });

  app.post('/api/classes/:code/students/merge', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    const j = fields(req, ['into', 'from']);
    for (const k of ['into', 'from']) if (typeof j[k] !== 'string' || !ID_RE.test(j[k])) fail(400, `/${k}: a student id (as the dashboard lists them)`);
    if (j.into === j.from) fail(400, '/from: is the same student as /into');
    const [into, from] = await Promise.all([course.student(cls.code, j.into), course.student(cls.code, j.from)]);
    if (!into) fail(404, `/into: no student ${j.into} in class ${cls.code}`);
    if (!from) fail(404, `/from: no student ${j.from} in class ${cls.code}`);
    const links = await db.selectFrom('roster').select(['id', 'student_id', 'name']).where('class_code', '=', cls.code).where('student_id', 'in', [into.id, from.id]).execute();
    if (links.length === 2) fail(409, `both are on the roster (${links.map((l) => l.name).join(' and ')}); remove the wrong roster entry first`);
    const now = new Date().toISOString();
    // Everything of `from` goes to `into`: records, devices (its own receipt becomes one of
    // into's, so its browser goes on working), its roster entry; then `from` is deleted.
    const counts = await exec(store, [
      db.updateTable('progress').set({ student_id: into.id }).where('class_code', '=', cls.code).where('student_id', '=', from.id),
      db.insertInto('student_devices').values({ receipt_hash: from.receipt_hash, class_code: cls.code, student_id: into.id, added_at: now }),
      db.updateTable('student_devices').set({ student_id: into.id }).where('student_id', '=', from.id),
      db.updateTable('roster').set({ student_id: into.id }).where('student_id', '=', from.id),
      db.deleteFrom('device_links').where('student_id', '=', from.id),
      db.deleteFrom('students').where('class_code', '=', cls.code).where('id', '=', from.id),
    ]);
    return { into: into.id, name: into.name, removed: from.id, records: counts[0] };
  });

  // ---- scores and the gradebook ----
  const langParam = (q) => { const l = q?.lang ?? 'en'; if (!LANGS.includes(l)) fail(400, `lang: one of ${LANGS.join(', ')}`); return l; };

  /** Every row of the gradebook: the roster (in name order) with each joined student's
   * scores, then the students who joined without the roster. */
  async function gradebook(cls) {
    const [settings, roster, students, attempts] = await Promise.all([course.settings(cls.code), course.roster(cls.code), course.students(cls.code), course.attemptsByStudent(cls.code)]);
    const lessons = gradedLessons(catalog(), settings);
    const score = (id) => studentScores(attempts.get(id) ?? [], lessons, settings);
    const linked = new Set(roster.map((r) => r.student_id).filter(Boolean));
    const rows = [
      ...roster.map((r) => ({ entry: r.id, student_id: r.student_id, name: r.name, sis_id: r.sis_id, email: r.email, login: r.login, canvas_id: r.canvas_id, section: r.section, scores: r.student_id ? score(r.student_id) : null })),
      ...students.filter((s) => !linked.has(s.id)).map((s) => ({ entry: null, student_id: s.id, name: s.name, sis_id: null, email: null, login: null, canvas_id: null, section: null, scores: score(s.id) })),
    ];
    return { settings, lessons, rows };
  }

  app.get('/api/classes/:code/scores', async (req) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    const { settings, lessons, rows } = await gradebook(cls);
    return { class: cls.code, settings, lessons, students: rows };
  });

  app.get('/api/classes/:code/students/me/scores', async (req) => {
    const cls = await loadClass(req.params.code);
    const student = await studentOf(req, cls);
    const settings = await course.settings(cls.code);
    const lessons = gradedLessons(catalog(), settings);
    const attempts = await course.attemptsByStudent(cls.code, student.id);
    return { class: cls.code, name: student.name, settings, lessons, scores: studentScores(attempts.get(student.id) ?? [], lessons, settings) };
  });

  app.get('/api/classes/:code/grades', async (req, reply) => {
    const cls = await loadClass(req.params.code);
    teacherOnly(req, cls);
    const format = req.query?.format ?? 'plain';
    if (!FORMATS.includes(format)) fail(400, `format: one of ${FORMATS.join(', ')}`);
    const lang = langParam(req.query);
    const bom = bomParam(req.query);
    const { lessons, rows } = await gradebook(cls);
    reply.type('text/csv; charset=utf-8').header('Content-Disposition', `attachment; filename="vmemlab-${cls.code}-grades${format === 'plain' ? '' : `-${format}`}.csv"`);
    return gradebookCsv({ lessons, rows, format, lang, bom });
  });
}

export { utc };
