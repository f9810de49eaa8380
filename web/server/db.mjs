// One query layer (Kysely) over SQLite (better-sqlite3, WAL) or PostgreSQL (pg), picked by
// DATABASE_URL. Migrations run at start. Every query the server makes lives in this file
// (SQLite's writes in sqlite-writer.mjs, on a thread of their own).
import { randomBytes } from 'node:crypto';
import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { SqliteWriter, sqlitePragmas } from './sqlite-writer.mjs';

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
  // Who uploaded (an optional display name) and idempotent uploads: the hash of the
  // client's Idempotency-Key (unique per class) and of the body it came with. The server's
  // own key for receipts of keyed uploads (see receiptFor in app.mjs) lives in settings.
  '002_names_idempotency': {
    async up(db) {
      await db.schema.alterTable('results').addColumn('student_name', 'text').execute();
      await db.schema.alterTable('results').addColumn('idem_hash', 'varchar(64)').execute();
      await db.schema.alterTable('results').addColumn('body_hash', 'varchar(64)').execute();
      await db.schema.createIndex('results_idem').unique().on('results').columns(['class_code', 'idem_hash']).execute();
      await db.schema.createTable('settings')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
      await db.insertInto('settings').values({ name: 'receipt_key', value: randomBytes(32).toString('hex') }).execute();
    },
    async down(db) {
      await db.schema.dropTable('settings').execute();
      await db.schema.dropIndex('results_idem').execute();
      for (const c of ['body_hash', 'idem_hash', 'student_name']) await db.schema.alterTable('results').dropColumn(c).execute();
    },
  },
};

/**
 * @param {{ databaseUrl?: string, dataDir?: string, sqliteSync?: 'FULL'|'NORMAL', sqliteMaxMiB?: number, pgPool?: number, log?: (msg: string) => void }} opts
 */
export async function openStore(opts = {}) {
  const url = opts.databaseUrl ?? process.env.DATABASE_URL ?? '';
  const log = opts.log ?? (() => {});
  let db; let kind; let file = null; let writerOpts = null; let reader = null;
  if (url) {
    const { default: pg } = await import('pg');
    kind = 'postgres';
    const pool = new pg.Pool({
      connectionString: url,
      max: opts.pgPool ?? Number(process.env.VMEMLAB_PG_POOL ?? 10),
      // A database that does not answer is reported (503) instead of holding requests.
      connectionTimeoutMillis: 10_000, query_timeout: 30_000, keepAlive: true,
      // An upload is acknowledged only once its commit is on disk, whatever the database's
      // own default says (with synchronous_commit=off a crash loses the last commits).
      options: '-c synchronous_commit=on',
    });
    // A dropped idle connection is replaced on the next query.
    pool.on('error', (e) => log(`database connection lost while idle: ${e.message}`));
    // A connection lost while it runs a query fails that query (the request gets 503) and
    // is dropped from the pool when released; without a listener the 'error' event of a
    // checked-out client would end the process.
    pool.on('connect', (client) => { client.on('error', (e) => log(`database connection lost: ${e.message}`)); });
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
    writerOpts = { file, sync: opts.sqliteSync ?? process.env.VMEMLAB_SQLITE_SYNC ?? 'FULL', maxMiB: opts.sqliteMaxMiB ?? 0 };
    const handle = new Database(file);
    // This connection reads (and migrates at start); a WAL reader waits for no writer.
    sqlitePragmas(handle, { ...writerOpts, busyMs: 1000 });
    db = new Kysely({ dialect: new SqliteDialect({ database: handle }) });
    reader = handle;
  }
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${error.message ?? error}`);
  }
  const secret = await db.selectFrom('settings').select('value').where('name', '=', 'receipt_key').executeTakeFirstOrThrow();
  const store = new Store(db, kind, file, Buffer.from(secret.value, 'hex'));
  if (writerOpts) {
    store.writer = new SqliteWriter(writerOpts);
    // The upload path's own query, prepared once (Kysely prepares each query again).
    store.idemQuery = reader.prepare('select id, body_hash, created_at, student_name from results where class_code = ? and idem_hash = ?');
  }
  return store;
}

/* Classes never change once created, so the upload path finds them in memory (for a
 * minute, so that a class removed by hand in the database is forgotten soon). */
const CLASS_TTL_MS = 60_000;
const CLASS_CACHE_MAX = 1000;

export class Store {
  constructor(db, kind, file, receiptKey) {
    this.db = db; this.kind = kind; this.file = file; this.receiptKey = receiptKey;
    this.classes = new Map();
  }

  async close() {
    if (this.writer) await this.writer.close();
    return this.db.destroy();
  }

  async ping() { await sql`select 1`.execute(this.db); }

  async createClass(row) {
    if (this.writer) await this.writer.run('createClass', row);
    else await this.db.insertInto('classes').values(row).execute();
  }

  async getClass(code) {
    const hit = this.classes.get(code);
    if (hit && hit.until > Date.now()) return hit.row;
    const row = await this.db.selectFrom('classes').select(['code', 'name', 'teacher_hash', 'created_at']).where('code', '=', code).executeTakeFirst();
    if (row) {
      if (this.classes.size >= CLASS_CACHE_MAX) this.classes.delete(this.classes.keys().next().value);
      this.classes.set(code, { row, until: Date.now() + CLASS_TTL_MS });
    }
    return row;
  }

  /** Stores an upload once per (class, idem_hash): true if stored now, false if that key
   * is already stored (a repeat). */
  async insertResult(row) {
    const r = { student_name: null, idem_hash: null, body_hash: null, ...row };
    if (this.writer) return (await this.writer.run('insertResult', r)) > 0;
    const res = await this.db.insertInto('results').values(r).onConflict((oc) => oc.columns(['class_code', 'idem_hash']).doNothing()).executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  /** The upload stored with this key in this class, if any. */
  async findByIdem(code, idemHash) {
    if (this.idemQuery) return this.idemQuery.get(code, idemHash);
    return this.db.selectFrom('results').select(['id', 'body_hash', 'created_at', 'student_name'])
      .where('class_code', '=', code).where('idem_hash', '=', idemHash).executeTakeFirst();
  }

  async countResults(code) {
    const r = await this.db.selectFrom('results').select((eb) => eb.fn.countAll().as('n')).where('class_code', '=', code).executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  listResults(code) {
    return this.db.selectFrom('results')
      .select(['id', 'created_at', 'cpu_model', 'hypervisor', 'tdp', 'summary', 'student_name'])
      .where('class_code', '=', code).orderBy('created_at').orderBy('id').execute();
  }

  getResult(code, id) {
    return this.db.selectFrom('results').select(['id', 'class_code', 'receipt_hash', 'created_at', 'body'])
      .where('class_code', '=', code).where('id', '=', id).executeTakeFirst();
  }

  async deleteResult(code, id) {
    if (this.writer) return this.writer.run('deleteResult', { class_code: code, id });
    const r = await this.db.deleteFrom('results').where('class_code', '=', code).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows ?? 0);
  }

  /** Test and operator helper: how many uploads exist in all classes. */
  async totalResults() {
    const r = await this.db.selectFrom('results').select((eb) => eb.fn.countAll().as('n')).executeTakeFirst();
    return Number(r?.n ?? 0);
  }
}
