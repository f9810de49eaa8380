// One query layer (Kysely) over SQLite (better-sqlite3, WAL) or PostgreSQL (pg), picked by
// DATABASE_URL. Migrations run at start. Every query the server makes lives in this file.
import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';

const migrations = {
  '001_classes_results': {
    async up(db) {
      await db.schema.createTable('classes')
        .addColumn('code', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('name', 'varchar(200)', (c) => c.notNull())
        .addColumn('teacher_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema.createTable('results')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('class_code', 'varchar(64)', (c) => c.notNull().references('classes.code').onDelete('cascade'))
        .addColumn('receipt_hash', 'varchar(64)', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('cpu_model', 'varchar(200)', (c) => c.notNull())
        .addColumn('hypervisor', 'varchar(80)', (c) => c.notNull())
        .addColumn('tdp', 'varchar(40)', (c) => c.notNull())
        .addColumn('summary', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('results_class').on('results').columns(['class_code', 'created_at']).execute();
    },
    async down(db) {
      await db.schema.dropTable('results').execute();
      await db.schema.dropTable('classes').execute();
    },
  },
};

/**
 * @param {{ databaseUrl?: string, dataDir?: string, sqliteSync?: 'FULL'|'NORMAL' }} opts
 */
export async function openStore(opts = {}) {
  const url = opts.databaseUrl ?? process.env.DATABASE_URL ?? '';
  let db; let kind; let file = null; let sqliteHandle = null;
  if (url) {
    const { default: pg } = await import('pg');
    kind = 'postgres';
    const pool = new pg.Pool({ connectionString: url, max: Number(process.env.VMEMLAB_PG_POOL ?? 10) });
    pool.on('error', () => { /* a dropped idle connection is replaced on the next query */ });
    db = new Kysely({ dialect: new PostgresDialect({ pool }) });
  } else {
    const { default: Database } = await import('better-sqlite3');
    kind = 'sqlite';
    const dir = resolve(opts.dataDir ?? process.env.VMEMLAB_DATA_DIR ?? 'data');
    if (!existsSync(dir)) {
      mkdirSync(dir, { recursive: true });
      // Keep the uploads out of git wherever the data folder is created.
      writeFileSync(join(dir, '.gitignore'), '*\n');
    }
    file = join(dir, 'vmemlab.sqlite');
    const handle = new Database(file);
    handle.pragma('journal_mode = WAL');
    // FULL: a commit is on disk before the upload is acknowledged (power loss included).
    handle.pragma(`synchronous = ${opts.sqliteSync ?? process.env.VMEMLAB_SQLITE_SYNC ?? 'FULL'}`);
    handle.pragma('busy_timeout = 5000');
    handle.pragma('foreign_keys = ON');
    db = new Kysely({ dialect: new SqliteDialect({ database: handle }) });
    sqliteHandle = handle;
  }
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${error.message ?? error}`);
  }
  const store = new Store(db, kind, file);
  if (sqliteHandle) store.groupCommit = new GroupCommit(sqliteHandle);
  return store;
}

/* SQLite commits one at a time, and with synchronous=FULL each commit waits for the disk.
 * Uploads that arrive in the same turn of the event loop are inserted in one transaction
 * (one fsync for all of them); each upload is acknowledged only after that commit, so
 * durability is what it was. A failed batch is retried row by row, so one bad row fails
 * only its own upload. */
class GroupCommit {
  constructor(handle) {
    this.pending = [];
    this.insert = handle.prepare(`insert into results (id, class_code, receipt_hash, created_at, cpu_model, hypervisor, tdp, summary, body)
      values (@id, @class_code, @receipt_hash, @created_at, @cpu_model, @hypervisor, @tdp, @summary, @body)`);
    this.batch = handle.transaction((rows) => { for (const r of rows) this.insert.run(r.row); });
    this.batches = 0;
  }

  add(row) {
    return new Promise((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => this.flush());
    });
  }

  flush() {
    const rows = this.pending;
    this.pending = [];
    this.batches++;
    try {
      this.batch(rows);
      for (const r of rows) r.resolve();
    } catch {
      for (const r of rows) {
        try { this.insert.run(r.row); r.resolve(); } catch (e) { r.reject(e); }
      }
    }
  }
}

export class Store {
  constructor(db, kind, file) { this.db = db; this.kind = kind; this.file = file; }

  close() {
    if (this.groupCommit?.pending.length) this.groupCommit.flush();
    return this.db.destroy();
  }

  async ping() { await sql`select 1`.execute(this.db); }

  createClass(row) { return this.db.insertInto('classes').values(row).execute(); }

  getClass(code) {
    return this.db.selectFrom('classes').select(['code', 'name', 'teacher_hash', 'created_at']).where('code', '=', code).executeTakeFirst();
  }

  insertResult(row) {
    if (this.groupCommit) return this.groupCommit.add(row);
    return this.db.insertInto('results').values(row).execute();
  }

  async countResults(code) {
    const r = await this.db.selectFrom('results').select((eb) => eb.fn.countAll().as('n')).where('class_code', '=', code).executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  listResults(code) {
    return this.db.selectFrom('results')
      .select(['id', 'created_at', 'cpu_model', 'hypervisor', 'tdp', 'summary'])
      .where('class_code', '=', code).orderBy('created_at').orderBy('id').execute();
  }

  getResult(code, id) {
    return this.db.selectFrom('results').select(['id', 'class_code', 'receipt_hash', 'created_at', 'body'])
      .where('class_code', '=', code).where('id', '=', id).executeTakeFirst();
  }

  async deleteResult(code, id) {
    const r = await this.db.deleteFrom('results').where('class_code', '=', code).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows ?? 0);
  }

  /** Test and operator helper: how many uploads exist in all classes. */
  async totalResults() {
    const r = await this.db.selectFrom('results').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
    return Number(r?.n ?? 0);
  }
}
