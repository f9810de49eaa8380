// The course's tables and every query on them: the roster, the grading settings (points,
// which answer counts, costs, closing times), device links and the receipts of a
// student's further devices. Their own migration (vmemlab_course_migration), run after
// progress.mjs's (the rows refer to its students). A class's deletion takes these rows
// with it (on delete cascade from classes and students).
//
// Writes go through exec(): on SQLite as one write of the writer thread (sqlite-writer.mjs's
// "compiled" op: the statements in one transaction, off the event loop), on PostgreSQL in a
// transaction of the pool.
import { Migrator, sql } from 'kysely';
import { DEFAULT_SETTINGS } from './scoring.mjs';

const migrations = {
  '001_roster_settings_devices': {
    async up(db) {
      await db.schema.createTable('course_settings')
        .addColumn('class_code', 'varchar(64)', (c) => c.primaryKey().references('classes.code').onDelete('cascade'))
        .addColumn('settings', 'text', (c) => c.notNull())            // JSON, checked by settings.mjs
        .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createTable('roster')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('class_code', 'varchar(64)', (c) => c.notNull().references('classes.code').onDelete('cascade'))
        .addColumn('name', 'varchar(200)', (c) => c.notNull())
        .addColumn('sis_id', 'varchar(64)')        // student ID: Canvas's SIS User ID, Moodle's ID number
        .addColumn('email', 'varchar(254)')
        .addColumn('login', 'varchar(100)')        // Canvas's SIS Login ID, Moodle's username
        .addColumn('canvas_id', 'varchar(20)')     // Canvas's own user id (its export's ID column)
        .addColumn('section', 'varchar(100)')
        // who joined as this student; a student's removal unlinks the entry
        .addColumn('student_id', 'varchar(32)', (c) => c.references('students.id').onDelete('set null'))
        .addColumn('added_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('roster_class_name').unique().on('roster').columns(['class_code', 'name']).execute();
      await db.schema.createIndex('roster_student').unique().on('roster').columns(['student_id']).execute();
      await db.schema.createTable('device_links')
        .addColumn('code_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('class_code', 'varchar(64)', (c) => c.notNull().references('classes.code').onDelete('cascade'))
        .addColumn('student_id', 'varchar(32)', (c) => c.notNull().references('students.id').onDelete('cascade'))
        .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('device_links_student').on('device_links').columns(['student_id']).execute();
      await db.schema.createTable('student_devices')
        .addColumn('receipt_hash', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('class_code', 'varchar(64)', (c) => c.notNull().references('classes.code').onDelete('cascade'))
        .addColumn('student_id', 'varchar(32)', (c) => c.notNull().references('students.id').onDelete('cascade'))
        .addColumn('added_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('student_devices_student').on('student_devices').columns(['student_id']).execute();
    },
    async down(db) {
      for (const t of ['student_devices', 'device_links', 'roster', 'course_settings']) await db.schema.dropTable(t).execute();
    },
  },
};

export async function migrateCourse(db) {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations }, migrationTableName: 'vmemlab_course_migration', migrationLockTableName: 'vmemlab_course_migration_lock' });
  const { error } = await migrator.migrateToLatest();
  if (error) throw new Error(`database migration of the course tables (roster, grading settings, devices) failed: ${error.message ?? error}`);
}

/**
 * Runs Kysely queries (builders) in order in one transaction; resolves with how many rows
 * each changed.
 * @param {import('../db.mjs').Store} store
 */
export async function exec(store, queries) {
  const compiled = queries.map((q) => q.compile());
  if (store.writer) {
    return store.writer.run('compiled', { queries: compiled.map((c) => ({ sql: c.sql, parameters: c.parameters.map((p) => (typeof p === 'boolean' ? (p ? 1 : 0) : p)) })) });
  }
  return store.db.transaction().execute(async (tx) => {
    const out = [];
    for (const c of compiled) out.push(Number((await tx.executeQuery(c)).numAffectedRows ?? 0));
    return out;
  });
}

/* Settings change when the teacher saves them; every progress batch reads them (closing
 * times), so they are kept in memory a few seconds (another server instance sees a change
 * within that), and forgotten at once on this instance when saved. */
const SETTINGS_TTL_MS = 5000;
const SETTINGS_CACHE_MAX = 1000;

export class CourseStore {
  /** @param {import('../db.mjs').Store} store */
  constructor(store) { this.store = store; this.db = store.db; this.cache = new Map(); }

  async settings(code) {
    const now = Date.now();
    const hit = this.cache.get(code);
    if (hit && hit.until > now) return hit.settings;
    const row = await this.db.selectFrom('course_settings').select(['settings']).where('class_code', '=', code).executeTakeFirst();
    const settings = { ...DEFAULT_SETTINGS, ...(row ? JSON.parse(row.settings) : {}) };
    if (this.cache.size >= SETTINGS_CACHE_MAX) this.cache.delete(this.cache.keys().next().value);
    this.cache.set(code, { settings, until: now + SETTINGS_TTL_MS });
    return settings;
  }

  async saveSettings(code, settings) {
    const row = { class_code: code, settings: JSON.stringify(settings), updated_at: new Date().toISOString() };
    this.cache.delete(code);
    await exec(this.store, [this.db.insertInto('course_settings').values(row)
      .onConflict((oc) => oc.column('class_code').doUpdateSet({ settings: row.settings, updated_at: row.updated_at }))]);
    this.cache.delete(code);
  }

  roster(code) {
    return this.db.selectFrom('roster as r').leftJoin('students as s', 's.id', 'r.student_id')
      .select(['r.id', 'r.name', 'r.sis_id', 'r.email', 'r.login', 'r.canvas_id', 'r.section', 'r.student_id', 's.name as student_name'])
      .where('r.class_code', '=', code).orderBy('r.name').execute();
  }

  /** The roster entry a typed ID, email or login names (case does not matter). */
  rosterByKey(code, key) {
    return this.db.selectFrom('roster').selectAll().where('class_code', '=', code)
      .where((eb) => eb.or([eb(eb.fn('lower', ['sis_id']), '=', key), eb(eb.fn('lower', ['email']), '=', key), eb(eb.fn('lower', ['login']), '=', key)]))
      .limit(2).execute();
  }

  rosterEntry(code, id) {
    return this.db.selectFrom('roster').selectAll().where('class_code', '=', code).where('id', '=', id).executeTakeFirst();
  }

  students(code) {
    return this.db.selectFrom('students').select(['id', 'name', 'joined_at']).where('class_code', '=', code).orderBy('joined_at').orderBy('id').execute();
  }

  student(code, id) {
    return this.db.selectFrom('students').select(['id', 'name', 'receipt_hash']).where('class_code', '=', code).where('id', '=', id).executeTakeFirst();
  }

  /** A student of the class by a receipt's hash: the one they joined with, or a further
   * device's (a device link's). receipt_hash is the matching one. */
  async studentByReceipt(code, hash) {
    const row = await this.db.selectFrom('students').select(['id', 'name', 'receipt_hash']).where('class_code', '=', code).where('receipt_hash', '=', hash).executeTakeFirst();
    if (row) return row;
    return this.db.selectFrom('student_devices as d').innerJoin('students as s', 's.id', 'd.student_id')
      .select(['s.id', 's.name', 'd.receipt_hash']).where('d.class_code', '=', code).where('d.receipt_hash', '=', hash).executeTakeFirst();
  }

  /**
   * A class's graded attempts a page at a time, in (received_at, id) order (the progress
   * table's keyset index): each page is { rows, after } (after: null on the last).
   */
  async attemptsPage(code, after, limit = 2000, studentId = null) {
    let q = this.db.selectFrom('progress')
      .select(['id', 'student_id', 'lesson', 'exercise', 'seed', 'verdict', 'hint', 'shown', 'score_right', 'score_of', 'at', 'received_at'])
      .where('class_code', '=', code).where('type', '=', 'attempt');
    if (studentId) q = q.where('student_id', '=', studentId);
    if (after) q = q.where('received_at', '>=', after.received_at).where((eb) => eb.or([eb('received_at', '>', after.received_at), eb.and([eb('received_at', '=', after.received_at), eb('id', '>', after.id)])]));
    const rows = await q.orderBy('received_at').orderBy('id').limit(limit).execute();
    const last = rows[rows.length - 1];
    return { rows, after: rows.length === limit ? { received_at: last.received_at, id: last.id } : null };
  }

  /** Every graded attempt of a class (or of one student), by student id, read a page at a
   * time with the event loop turning between pages. */
  async attemptsByStudent(code, studentId = null) {
    const by = new Map();
    let after = null;
    do {
      const page = await this.attemptsPage(code, after, 2000, studentId);
      for (const r of page.rows) {
        if (!by.has(r.student_id)) by.set(r.student_id, []);
        by.get(r.student_id).push({ lesson: r.lesson, exercise: Number(r.exercise), seed: Number(r.seed), verdict: r.verdict, hint: !!Number(r.hint), shown: !!Number(r.shown),
          ...(r.score_of === null || r.score_of === undefined ? {} : { score: { right: Number(r.score_right), of: Number(r.score_of) } }), at: r.at, received_at: r.received_at });
      }
      after = page.after;
      if (after) await new Promise((resolve) => setImmediate(resolve));
    } while (after);
    return by;
  }
}

export { sql };
