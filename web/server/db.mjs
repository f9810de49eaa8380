// One query layer (Kysely) over SQLite (better-sqlite3, WAL) or PostgreSQL (pg), picked by
// DATABASE_URL. Migrations run at start. Every query the server makes lives in this file
// (SQLite's writes in sqlite-writer.mjs, on a thread of their own).
import { randomBytes } from 'node:crypto';
import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { keyset, pageOf } from './paging.mjs';
import { BARE_METAL, TDP_IN_VM, summarize } from '../src/results/extract.mjs';
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
  // The class list and the CSV export read a class a page at a time in (created_at, id)
  // order (paging.mjs): with id in the index a page starts at its cursor and reads only its
  // own rows, with no sort. It replaces (class_code, created_at), a prefix of it.
  '003_results_keyset': {
    async up(db) {
      await db.schema.createIndex('results_class_keyset').on('results').columns(['class_code', 'created_at', 'id']).execute();
      await db.schema.dropIndex('results_class').execute();
    },
    async down(db) {
      await db.schema.createIndex('results_class').on('results').columns(['class_code', 'created_at']).execute();
      await db.schema.dropIndex('results_class_keyset').execute();
    },
  },
  // A class's life: closed_at (set: the teacher closed it, uploads are refused; null: open)
  // and last_activity (the last write in the class, for VMEMLAB_RETENTION_DAYS). A class
  // that has none yet counts from its newest upload, else from its creation.
  '004_class_lifecycle': {
    async up(db) {
      await db.schema.alterTable('classes').addColumn('closed_at', 'varchar(32)').execute();
      await db.schema.alterTable('classes').addColumn('last_activity', 'varchar(32)').execute();
      await sql`update classes set last_activity = coalesce((select max(r.created_at) from results r where r.class_code = classes.code), created_at)`.execute(db);
    },
    async down(db) {
      for (const c of ['last_activity', 'closed_at']) await db.schema.alterTable('classes').dropColumn(c).execute();
    },
  },
  // Uploads measured inside a VM were filed under the VM's own KVM backend ("shadow paging
  // (kvm_pvm)", or the EPT setting a nested KVM showed), which is not the paging the
  // measured memory ran under: their summaries are made again from the stored files
  // (extract.mjs: tdp says the host's setting is not visible; kvm_backend keeps the VM's
  // own backend), a few hundred at a time.
  '005_vm_tdp': {
    async up(db) {
      let after = '';
      for (;;) {
        const rows = await db.selectFrom('results').select(['id', 'body']).where('hypervisor', '<>', BARE_METAL)
          .where('tdp', '<>', TDP_IN_VM).where('id', '>', after).orderBy('id').limit(200).execute();
        for (const r of rows) {
          let s;
          try { s = summarize(JSON.parse(r.body)); } catch { continue; } // stored after its schema check: not expected
          await db.updateTable('results').set({ tdp: s.tdp, summary: JSON.stringify(s) }).where('id', '=', r.id).execute();
        }
        if (rows.length < 200) break;
        after = rows[rows.length - 1].id;
      }
    },
    async down() { /* the old grouping is not restored */ },
  },
  // A class being deleted is marked first (deleting_at): from then on every reader finds no
  // class, and a delete cut short (kill -9, a lost database) is finished at the next start.
  '006_class_tombstone': {
    async up(db) {
      await db.schema.alterTable('classes').addColumn('deleting_at', 'varchar(32)').execute();
    },
    async down(db) {
      await db.schema.alterTable('classes').dropColumn('deleting_at').execute();
    },
  },
};

/* PostgreSQL limits. A database that stops answering with its sockets still open (a frozen
 * host or process, a network that drops packets) holds a request for about 1.5 s at most;
 * the request is then answered 503 (faults.mjs). */
// A new connection must be made within this.
export const PG_CONNECT_MS = 1500;
// No answer to a query by then fails it here, in the server, and closes its connection.
export const PG_QUERY_MS = 1500;
// A request waiting for a free connection of the pool gives up once the database has
// answered no query for this long: it does not answer, and the wait would not end.
export const PG_STALL_MS = 1500;
// The longest wait for a free connection while the database does answer (under load the
// queries go on finishing and a request waits its turn).
export const PG_QUEUE_MS = 10_000;
// The database itself cancels a statement (or a lock wait) that runs longer: it ends first
// on a database that still answers, so that the connection stays usable.
export const PG_STATEMENT_MS = 1000;
// A connection left in an open transaction is closed by the database, freeing its locks.
export const PG_IDLE_TX_MS = 10_000;

/** The pool the server's queries use (see the limits above), as Kysely's PostgresDialect
 * takes it: connect() and end(). */
function servingPool(pg, url, max, log) {
  let answered = Date.now(); // when the database last answered a query (or a connection)
  // How long queries waited for a connection (VMEMLAB_SERVER_TIMING's summary, timing.mjs).
  const waits = { n: 0, ms: 0, longest: 0, over100: 0 };
  class Client extends pg.Client {
    // pg gives one connectionTimeoutMillis to both the wait for a free connection of the
    // pool and the making of a new one: the pool's is PG_QUEUE_MS, a connection's own this.
    constructor(config) { super({ ...config, connectionTimeoutMillis: PG_CONNECT_MS }); }

    query(...args) {
      const r = super.query(...args);
      if (r && typeof r.then === 'function') {
        r.then(() => { answered = Date.now(); }, (e) => {
          // A query that got no answer in time may still be under way on its connection;
          // back in the pool, that connection would make the next query wait behind it. It
          // is closed at once instead (the pool drops it when Kysely releases it).
          if (e?.message !== 'Query read timeout') { answered = Date.now(); return; }
          log('database query timed out; its connection is closed');
          this.end().catch(() => {});
        });
      }
      return r;
    }
  }
  const pool = new pg.Pool({
    Client, connectionString: url, max,
    connectionTimeoutMillis: PG_QUEUE_MS, query_timeout: PG_QUERY_MS, keepAlive: true,
    // An upload is acknowledged only once its commit is on disk, whatever the database's
    // own default says (with synchronous_commit=off a crash loses the last commits).
    options: `-c synchronous_commit=on -c statement_timeout=${PG_STATEMENT_MS} -c lock_timeout=${PG_STATEMENT_MS} -c idle_in_transaction_session_timeout=${PG_IDLE_TX_MS}`,
  });
  // A dropped idle connection is replaced on the next query.
  pool.on('error', (e) => log(`database connection lost while idle: ${e.message}`));
  // A connection lost while it runs a query fails that query (the request gets 503) and
  // is dropped from the pool when released; without a listener the 'error' event of a
  // checked-out client would end the process.
  pool.on('connect', (client) => { client.on('error', (e) => log(`database connection lost: ${e.message}`)); answered = Date.now(); });
  return {
    connect() {
      const since = Date.now();
      return new Promise((resolve, reject) => {
        let done = false; let timer;
        const check = () => {
          const due = Math.max(answered, since) + PG_STALL_MS;
          if (Date.now() < due) { timer = setTimeout(check, due - Date.now()); return; }
          done = true;
          reject(Object.assign(new Error(`no database connection became free: the database answered nothing for ${PG_STALL_MS} ms`), { code: 'ETIMEDOUT' }));
        };
        timer = setTimeout(check, PG_STALL_MS);
        // A connection that comes after the request gave up goes back to the pool at once.
        pool.connect().then((client) => {
          clearTimeout(timer);
          if (done) { client.release(); return; }
          done = true;
          const w = Date.now() - since;
          waits.n++; waits.ms += w; if (w > waits.longest) waits.longest = w; if (w > 100) waits.over100++;
          resolve(client);
        },
          (e) => { clearTimeout(timer); if (!done) { done = true; reject(e); } });
      });
    },
    end: () => pool.end(),
    waits,
    size: () => ({ max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
}

/**
 * @param {{ databaseUrl?: string, dataDir?: string, sqliteSync?: 'FULL'|'NORMAL', sqliteMaxMiB?: number, pgPool?: number, log?: (msg: string) => void, now?: () => number }} opts
 * now: the clock of the class cache, of class activity and of retention (tests move it on).
 */
export async function openStore(opts = {}) {
  const url = opts.databaseUrl ?? process.env.DATABASE_URL ?? '';
  const log = opts.log ?? (() => {});
  let db; let kind; let file = null; let writerOpts = null; let reader = null; let migrationDb = null; let pool = null;
  if (url) {
    const { default: pg } = await import('pg');
    kind = 'postgres';
    // Migrations may build an index on a large table: they run on a connection of their own,
    // without the serving limits (servingPool), closed once they are done.
    migrationDb = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 30_000, options: '-c synchronous_commit=on' }) }) });
    pool = servingPool(pg, url, opts.pgPool ?? Number(process.env.VMEMLAB_PG_POOL ?? 10), log);
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
  const migrator = new Migrator({ db: migrationDb ?? db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  await migrationDb?.destroy();
  if (error) {
    await db.destroy();
    const failed = results?.find((r) => r.status === 'Error');
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${error.message ?? error}`);
  }
  const secret = await db.selectFrom('settings').select('value').where('name', '=', 'receipt_key').executeTakeFirstOrThrow();
  const store = new Store(db, kind, file, Buffer.from(secret.value, 'hex'), opts.now);
  store.url = url || null; // feed.mjs listens on its own connection (PostgreSQL)
  store.pool = pool; // PostgreSQL: its waits for a connection (timing.mjs)
  if (writerOpts) {
    store.writer = new SqliteWriter(writerOpts);
    // The upload path's own query, prepared once (Kysely prepares each query again).
    store.idemQuery = reader.prepare('select id, body_hash, created_at, student_name from results where class_code = ? and idem_hash = ?');
  }
  return store;
}

/* A class changes only when its teacher closes, reopens or deletes it, so the upload path
 * finds it in memory: for a minute (a class closed or deleted through another server
 * instance, or by hand in the database, is forgotten soon), and not at all once this
 * instance closed, reopened or deleted it. */
const CLASS_TTL_MS = 60_000;
const CLASS_CACHE_MAX = 1000;
/* A class's last_activity is written at most once in this long by one instance: retention
 * counts in days, and a class's row updated by every upload would make uploads to one
 * class wait for each other on PostgreSQL's row lock. */
export const TOUCH_MS = 10 * 60_000;
/* The tables that hold a class's records (results, traces.mjs's traces, the progress
 * plugin's students and progress), emptied when the class is deleted, a chunk at a time
 * so that no statement runs long. Each has id and class_code. */
export const CLASS_TABLES = ['progress', 'students', 'traces', 'results'];
const DELETE_CHUNK = 2000;

export class Store {
  constructor(db, kind, file, receiptKey, now = Date.now) {
    this.db = db; this.kind = kind; this.file = file; this.receiptKey = receiptKey;
    this.now = now;
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
    if (hit && hit.until > this.now()) return hit.row;
    const row = await this.db.selectFrom('classes').select(['code', 'name', 'teacher_hash', 'created_at', 'closed_at', 'last_activity'])
      .where('code', '=', code).where('deleting_at', 'is', null).executeTakeFirst();
    if (row) {
      if (this.classes.size >= CLASS_CACHE_MAX) this.classes.delete(this.classes.keys().next().value);
      this.classes.set(code, { row, until: this.now() + CLASS_TTL_MS });
    }
    return row;
  }

  /** Drops a class from the cache: the next look-up reads the database. */
  forget(code) { this.classes.delete(code); }

  /** Closes (closed_at: an ISO time) or reopens (null) a class; either is activity. */
  async setClosed(code, closedAt) {
    const row = { code, closed_at: closedAt, at: new Date(this.now()).toISOString() };
    this.forget(code);
    if (this.writer) await this.writer.run('setClosed', row);
    else await this.db.updateTable('classes').set({ closed_at: row.closed_at, last_activity: row.at }).where('code', '=', code).execute();
    this.forget(code);
  }

  /**
   * Records a write in a class (last_activity), at most once per TOUCH_MS on this instance:
   * the cached row says when it was last written, and the update changes nothing when
   * another instance wrote it meanwhile.
   */
  async touchClass(code) {
    const now = this.now();
    const hit = this.classes.get(code);
    const last = hit ? Date.parse(hit.row.last_activity ?? hit.row.created_at) : NaN;
    if (now - last < TOUCH_MS) return;
    const row = { code, at: new Date(now).toISOString(), recent: new Date(now - TOUCH_MS).toISOString() };
    if (this.writer) await this.writer.run('touchClass', row);
    else {
      await this.db.updateTable('classes').set({ last_activity: row.at }).where('code', '=', code)
        .where((eb) => eb(eb.fn.coalesce('last_activity', 'created_at'), '<', row.recent)).execute();
    }
    if (hit) hit.row.last_activity = row.at;
  }

  /** Which of CLASS_TABLES exist in this database (plugins create theirs at start). */
  async classTables() {
    const q = this.kind === 'sqlite'
      ? sql`select name from sqlite_master where type = 'table'`
      : sql`select table_name as name from information_schema.tables where table_schema = current_schema()`;
    const names = new Set((await q.execute(this.db)).rows.map((r) => r.name));
    return CLASS_TABLES.filter((t) => names.has(t));
  }

  /**
   * Deletes a class with everything in it: its uploads, traces, students (their names) and
   * progress, then the class. The class is marked first (deleting_at, one committed write):
   * from then on every reader finds no class, and a delete cut short (kill -9, the database
   * lost) is finished by finishDeletes() at the next start, so a class is seen whole or
   * gone. Rows then go a chunk at a time (no long statement, on SQLite no long hold of the
   * writer thread); the last step deletes whatever is left with the class in one
   * transaction. Returns how many rows of each table went (the last step's included), or
   * null when there was no such class.
   */
  async deleteClass(code) {
    this.forget(code);
    const at = new Date(this.now()).toISOString();
    const marked = this.writer
      ? await this.writer.run('markDeleting', { code, at })
      : Number((await this.db.updateTable('classes').set({ deleting_at: sql`coalesce(deleting_at, ${at})` }).where('code', '=', code).executeTakeFirst()).numUpdatedRows ?? 0);
    this.forget(code);
    if (!marked) return null;
    const tables = await this.classTables();
    const counts = Object.fromEntries(tables.map((t) => [t, 0]));
    for (const table of tables) {
      for (;;) {
        const n = this.writer
          ? await this.writer.run('deleteClassChunk', { table, code, limit: DELETE_CHUNK })
          : await this.deleteChunkPg(table, code);
        counts[table] += n;
        if (n < DELETE_CHUNK) break;
      }
    }
    let last;
    if (this.writer) last = await this.writer.run('deleteClassRows', { tables, code });
    else {
      last = await this.db.transaction().execute(async (tx) => {
        const rest = {};
        for (const table of tables) rest[table] = Number((await tx.deleteFrom(table).where('class_code', '=', code).executeTakeFirst()).numDeletedRows ?? 0);
        return { rest, gone: Number((await tx.deleteFrom('classes').where('code', '=', code).executeTakeFirst()).numDeletedRows ?? 0) };
      });
    }
    for (const t of tables) counts[t] += last.rest[t] ?? 0;
    this.forget(code);
    return last.gone > 0 ? counts : null;
  }

  /** Finishes the deletes a stop cut short (classes marked deleting_at); run at start. */
  async finishDeletes(log = () => {}) {
    const rows = await this.db.selectFrom('classes').select('code').where('deleting_at', 'is not', null).execute();
    for (const { code } of rows) {
      const counts = await this.deleteClass(code);
      log(`class ${code}: a delete cut short was finished (${JSON.stringify(counts)})`);
    }
    return rows.length;
  }

  /* PostgreSQL: one chunk of a class's rows, its ids read first and then deleted as a
   * list, each found through the primary key. One statement with "id in (select ...)" was
   * planned as a nested loop on a table grown since its last analyze: 2,000 rows in 0.9 s,
   * close to the statement timeout. */
  async deleteChunkPg(table, code) {
    const ids = (await this.db.selectFrom(table).select('id').where('class_code', '=', code).limit(DELETE_CHUNK).execute()).map((r) => r.id);
    if (!ids.length) return 0;
    const r = await this.db.deleteFrom(table).where('class_code', '=', code).where('id', 'in', ids).executeTakeFirst();
    return Number(r.numDeletedRows ?? 0);
  }

  /** Codes of the classes with no write since `before` (an ISO time), oldest first. */
  async idleClasses(before) {
    const rows = await this.db.selectFrom('classes').select('code')
      .where((eb) => eb(eb.fn.coalesce('last_activity', 'created_at'), '<', before))
      .orderBy(sql`coalesce(last_activity, created_at)`).execute();
    return rows.map((r) => r.code);
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

  /**
   * One page of a class's uploads in (created_at, id) order: { rows, next_cursor }
   * (paging.mjs; page is pageParams' { limit, after }). The class list and the CSV export
   * read a class this way, never whole.
   */
  async listResultsPage(code, page) {
    let q = this.db.selectFrom('results')
      .select(['id', 'created_at', 'cpu_model', 'hypervisor', 'tdp', 'summary', 'student_name'])
      .where('class_code', '=', code);
    // Redundant with keyset's condition, but it lets the index be entered at the cursor
    // instead of at the class's first row.
    if (page.after) q = q.where('created_at', '>=', page.after.created_at);
    return pageOf(await keyset(q, page).execute(), page);
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
