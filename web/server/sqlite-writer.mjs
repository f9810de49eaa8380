// Every SQLite write of the class server, on a thread of its own (worker_threads) with its
// own connection, so that a commit (and its fsync) never stops the event loop that accepts
// connections and reads requests. Writes that arrive while a commit runs are committed
// together in the next transaction (group commit: one fsync for all of them); each is
// acknowledged only after that commit, and a batch that fails is retried one write at a
// time, so a bad row (or the one that no longer fits on a full disk) fails alone.
// If the thread dies, the writes it held are answered with an error (the server answers
// 503) and a new thread takes over.
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const SQL = {
  insertResult: `insert into results (id, class_code, receipt_hash, created_at, cpu_model, hypervisor, tdp, summary, body, student_name, idem_hash, body_hash)
    values (@id, @class_code, @receipt_hash, @created_at, @cpu_model, @hypervisor, @tdp, @summary, @body, @student_name, @idem_hash, @body_hash)
    on conflict (class_code, idem_hash) do nothing`,
  createClass: 'insert into classes (code, name, teacher_hash, created_at) values (@code, @name, @teacher_hash, @created_at)',
  deleteResult: 'delete from results where class_code = @class_code and id = @id',
  // traces.mjs's table (created by its own migration, after this thread starts)
  insertTrace: `insert into traces (id, class_code, receipt_hash, created_at, label, header, report, trace)
    values (@id, @class_code, @receipt_hash, @created_at, @label, @header, @report, @trace)`,
  deleteTrace: 'delete from traces where class_code = @class_code and id = @id',
  // progress.mjs's tables (its own migration): a student joins once per name, a record is
  // stored once per id; a student's deletion takes their progress (on delete cascade)
  insertStudent: `insert into students (id, class_code, name, receipt_hash, joined_at)
    values (@id, @class_code, @name, @receipt_hash, @joined_at) on conflict (class_code, name) do nothing`,
  insertProgress: `insert into progress (id, class_code, student_id, type, lesson, exercise, kind, seed, answer, verdict, tries, hint, shown, hint_opened, score_right, score_of, at, received_at)
    values (@id, @class_code, @student_id, @type, @lesson, @exercise, @kind, @seed, @answer, @verdict, @tries, @hint, @shown, @hint_opened, @score_right, @score_of, @at, @received_at)
    on conflict (class_code, id) do nothing`,
  deleteStudent: 'delete from students where class_code = @class_code and id = @id',
  renameStudent: 'update students set name = @name where class_code = @class_code and id = @id',
  // a class's life (db.mjs: setClosed, touchClass)
  markDeleting: 'update classes set deleting_at = coalesce(deleting_at, @at) where code = @code',
  setClosed: 'update classes set closed_at = @closed_at, last_activity = @at where code = @code',
  touchClass: 'update classes set last_activity = @at where code = @code and coalesce(last_activity, created_at) < @recent',
};

/* Writes of more than one statement, or on a table named in the write: a class deleted
 * with everything in it (db.mjs's deleteClass). Tables are only ever these. */
const CLASS_TABLES = new Set(['progress', 'students', 'traces', 'results']);
const tableOf = (t) => { if (!CLASS_TABLES.has(t)) throw Object.assign(new Error(`not a class table: ${t}`), { code: 'SQLITE_ERROR' }); return t; };
const OPS = {
  // One chunk of a class's rows in one table: how many went.
  deleteClassChunk: (db, stmts, { table, code, limit }) => (stmts[`chunk:${table}`] ??= db.prepare(
    `delete from ${tableOf(table)} where class_code = ? and id in (select id from ${table} where class_code = ? limit ?)`)).run(code, code, limit).changes,
  // Statements a plugin compiled with Kysely (course/store.mjs's exec), in one transaction
  // of their own (a savepoint inside the batch's): how many rows each changed.
  compiled: (db, stmts, { queries }) => (stmts.compiledTx ??= db.transaction((qs) => qs.map(({ sql, parameters }) => {
    let st = stmts[`q:${sql}`];
    if (!st) { st = db.prepare(sql); if (Object.keys(stmts).length < 1000) stmts[`q:${sql}`] = st; }
    return st.run(...parameters).changes;
  })))(queries),
  // Whatever is left of the class (how many rows of each table), then the class itself
  // (gone: 1, or 0 when it was gone already).
  deleteClassRows: (db, stmts, { tables, code }) => {
    const rest = {};
    for (const t of tables) rest[t] = (stmts[`rest:${t}`] ??= db.prepare(`delete from ${tableOf(t)} where class_code = ?`)).run(code).changes;
    return { rest, gone: (stmts.deleteClass ??= db.prepare('delete from classes where code = ?')).run(code).changes };
  },
};

/** The pragmas both connections share. */
export function sqlitePragmas(handle, { sync = 'FULL', maxMiB = 0, busyMs = 5000 } = {}) {
  handle.pragma('journal_mode = WAL');
  // FULL: a commit is on disk before the upload is acknowledged (power loss included).
  handle.pragma(`synchronous = ${sync === 'NORMAL' ? 'NORMAL' : 'FULL'}`);
  handle.pragma(`busy_timeout = ${busyMs}`);
  handle.pragma('foreign_keys = ON');
  if (maxMiB > 0) {
    const page = handle.pragma('page_size', { simple: true });
    handle.pragma(`max_page_count = ${Math.max(1, Math.floor((maxMiB * 1024 * 1024) / page))}`);
  }
}

if (!isMainThread && workerData?.vmemlabSqliteWriter) {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(workerData.file);
  sqlitePragmas(db, workerData);
  // Prepared on first use: a table a plugin migrates later exists by then.
  const stmts = {};
  const apply = (w) => (OPS[w.op] ? OPS[w.op](db, stmts, w.row) : (stmts[w.op] ??= db.prepare(SQL[w.op])).run(w.row).changes);
  const batch = db.transaction((ws) => ws.map(apply)).immediate;
  let pending = [];
  const flush = () => {
    const ws = pending;
    pending = [];
    let out;
    try {
      out = batch(ws).map((changes, i) => ({ seq: ws[i].seq, changes }));
    } catch {
      out = ws.map((w) => {
        try { return { seq: w.seq, changes: apply(w) }; } catch (e) { return { seq: w.seq, error: { code: e.code ?? 'SQLITE_ERROR', message: e.message } }; }
      });
    }
    parentPort.postMessage(out);
  };
  parentPort.on('message', (m) => {
    if (m === 'close') {
      if (pending.length) flush();
      db.close();
      parentPort.close();
      return;
    }
    pending.push(m);
    if (pending.length === 1) setImmediate(flush);
  });
}

const ACKS_PER_TURN = 4;

/** The main thread's side: run(op, row) resolves with the number of rows changed once the
 * write is committed, or rejects with the SQLite error (its code kept). */
export class SqliteWriter {
  constructor(opts) {
    this.opts = opts; this.seq = 0; this.waiting = new Map(); this.batches = 0; this.closing = false; this.restarts = 0;
    this.worker = null; this.backlog = []; // writes sent while no thread runs go out when the next one starts
    this.acks = []; this.acking = false;
    this.ack = this.ack.bind(this);
    this.start();
  }

  start() {
    const w = new Worker(new URL(import.meta.url), { workerData: { ...this.opts, vmemlabSqliteWriter: true } });
    this.worker = w;
    for (const m of this.backlog) w.postMessage(m);
    this.backlog = [];
    w.on('message', (results) => {
      this.batches++;
      this.acks.push(...results);
      if (!this.acking) { this.acking = true; setImmediate(this.ack); }
    });
    w.on('error', (e) => { this.lastError = e; });
    w.on('exit', () => {
      w.exited = true;
      if (this.worker !== w) return;
      this.worker = null;
      this.backlog = [];
      // Writes the thread committed and answered before it stopped are acknowledged first.
      while (this.acks.length) this.ack(Infinity);
      const err = Object.assign(new Error(`the SQLite writer stopped${this.lastError ? `: ${this.lastError.message}` : ''}`), { code: this.lastError?.code ?? 'SQLITE_CANTOPEN' });
      for (const p of this.waiting.values()) p.reject(err);
      this.waiting.clear();
      if (!this.closing) { this.restarts++; this.timer = setTimeout(() => this.start(), Math.min(2000, 100 * this.restarts)); }
    });
  }

  /* A committed batch is answered ACKS_PER_TURN writes per turn of the event loop: each
   * answer is a response to write, and a turn that wrote a hundred of them would keep the
   * loop from accepting new connections (one per turn) for that long. */
  ack(most = ACKS_PER_TURN) {
    const n = Math.min(this.acks.length, most);
    for (const r of this.acks.splice(0, n)) {
      const p = this.waiting.get(r.seq);
      if (!p) continue;
      this.waiting.delete(r.seq);
      if (r.error) p.reject(Object.assign(new Error(r.error.message), { code: r.error.code })); else p.resolve(r.changes);
    }
    if (most !== ACKS_PER_TURN) return;
    if (this.acks.length) setImmediate(this.ack); else this.acking = false;
  }

  run(op, row) {
    if (this.closing) return Promise.reject(Object.assign(new Error('the server is closing'), { code: 'SQLITE_BUSY' }));
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.waiting.set(seq, { resolve, reject });
      if (this.worker) this.worker.postMessage({ seq, op, row }); else this.backlog.push({ seq, op, row });
    });
  }

  /** Lets the writes already sent commit, then stops the thread. */
  async close() {
    this.closing = true;
    clearTimeout(this.timer);
    const w = this.worker;
    if (!w || w.exited) return;
    const gone = new Promise((r) => w.once('exit', r));
    w.postMessage('close');
    await gone;
  }
}
