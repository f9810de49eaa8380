// One reader per class for the teacher's event stream (dashboard.mjs). Every open stream of a
// class is fed by the class's one feed, which reads what arrived once and fans it out, so
// eight open dashboards cost the database what one does. A feed exists while its class has
// a stream open on this process.
//
// A feed reads when it is woken and at least every pollMs. It is woken at once by a write
// on this process (progress.mjs and the teacher's routes call publish()) and, on
// PostgreSQL, by a write on another instance sharing the database (LISTEN/NOTIFY on one
// connection of its own per process); the poll covers notifications lost while that
// connection was down and writes made by another process on the same SQLite file.
//
// received_at is taken when a request is handled, not when its transaction commits, so a
// record stamped earlier can become visible after a later one was read. Each read lists the
// ids (an index-only scan of (class_code, received_at, id)) from lateMs before the newest
// record seen on, and fetches whole only the rows it has not seen: a late record still
// comes, once, and the window is read as ids, not rows.
import { randomBytes } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';

/** The PostgreSQL channel the class server's instances tell each other of writes on. */
export const CHANNEL = 'vmemlab_feed';
/** Ids read at a time from the late window; rows fetched by id at a time. */
const ID_PAGE = 2000;
const FETCH_PAGE = 500;
/** A feed is kept this long after its last stream closes. */
export const LINGER_MS = 30_000;
/** A woken feed reads at most this often (a burst of writes is one read). */
export const MIN_GAP_MS = 100;

const before = (iso, ms) => new Date(Date.parse(iso) - ms).toISOString();
/** Rows fetched by id, put in (received_at, id) order here: an ORDER BY in the query made
 * SQLite walk the class's whole keyset index instead of looking each id up. */
export const inKeysetOrder = (rows) => rows.sort((a, b) => (a.received_at < b.received_at ? -1 : a.received_at > b.received_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
const newer = (t, id, mark) => !mark || t > mark.t || (t === mark.t && id > mark.id);

export class Feeds {
  /**
   * @param {{ store: import('./db.mjs').Store, log?: { warn: Function }, pollMs: number, lateMs: number,
   *   commentMs: number, progressQuery: (code: string) => any, progressItem: (row: object) => object,
   *   studentItem: (row: object) => object }} opts
   */
  constructor(opts) {
    this.opts = opts;
    this.db = opts.store.db;
    this.feeds = new Map();
    this.instance = randomBytes(6).toString('base64url');
    this.closed = false;
    this.listener = null;
    this.notifying = new Set();
  }

  /** A class's feed, made when its first stream opens. */
  subscribe(code, sub) {
    let f = this.feeds.get(code);
    if (!f) { f = new Feed(this, code); this.feeds.set(code, f); }
    f.subs.add(sub);
    if (this.opts.store.kind === 'postgres' && !this.listener) this.listen();
    clearTimeout(f.linger);
    return () => {
      f.subs.delete(sub);
      if (f.subs.size) return;
      // kept a while: a dashboard that reconnects finds its feed where it was
      clearTimeout(f.linger);
      f.linger = setTimeout(() => { if (!f.subs.size) { f.stop(); if (this.feeds.get(code) === f) this.feeds.delete(code); } }, LINGER_MS);
      f.linger.unref();
    };
  }

  /**
   * A write in a class on this process: `what` is 'progress' (records or a student joined),
   * 'gone' (the class deleted), or a student event ({ removed: id } or { renamed: {id, name} })
   * that every open stream of the class passes on. Other instances hear it through NOTIFY.
   */
  publish(code, what = 'progress') {
    this.deliver(code, what);
    if (this.opts.store.kind !== 'postgres' || this.closed) return;
    // Records: one NOTIFY per class per MIN_GAP_MS (the feed that hears it reads all that is
    // new); the rarer student events each go out.
    if (what === 'progress') {
      if (this.notifying.has(code)) return;
      this.notifying.add(code);
      setTimeout(() => { this.notifying.delete(code); this.notify(code, what); }, MIN_GAP_MS).unref();
    } else this.notify(code, what);
  }

  notify(code, what) {
    const payload = JSON.stringify({ i: this.instance, c: code, w: what });
    if (payload.length >= 7000) return;
    this.db.selectNoFrom((eb) => eb.fn('pg_notify', [eb.val(CHANNEL), eb.val(payload)]).as('n')).execute()
      .catch((e) => this.opts.log?.warn({ err: e }, 'could not tell other instances of a write'));
  }

  /** Where a class's feed is (the newest record it read), once it has started. */
  async position(code) {
    const f = this.feeds.get(code);
    if (!f) return null;
    await f.started;
    return f.high;
  }

  deliver(code, what) {
    const f = this.feeds.get(code);
    if (!f) return;
    if (what === 'progress') f.wake();
    else if (what === 'gone') f.checkGone();
    else f.fan([f.studentChange(what)]);
  }

  /** PostgreSQL: one connection per process listens for the other instances' writes; lost,
   * it is made again (the poll carries the streams meanwhile). */
  async listen() {
    if (this.closed || this.listener) return;
    const url = this.opts.store.url;
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500, keepAlive: true });
    this.listener = client;
    const again = () => {
      if (this.listener !== client) return;
      this.listener = null;
      client.end().catch(() => {});
      if (!this.closed && this.feeds.size) setTimeout(() => this.listen(), 2000).unref();
    };
    client.on('error', again);
    client.on('end', again);
    client.on('notification', (n) => {
      try {
        const m = JSON.parse(n.payload);
        if (m.i !== this.instance && typeof m.c === 'string') this.deliver(m.c, m.w);
      } catch { /* not ours */ }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (e) {
      this.opts.log?.warn({ err: e }, 'dashboard feed: could not listen for other instances\' writes; polling');
      again();
    }
  }

  async close() {
    this.closed = true;
    for (const f of this.feeds.values()) { clearTimeout(f.linger); f.stop(); }
    this.feeds.clear();
    const l = this.listener; this.listener = null;
    if (l) await l.end().catch(() => {});
  }
}

class Feed {
  constructor(feeds, code) {
    this.feeds = feeds; this.code = code; this.subs = new Set();
    const { pollMs, commentMs } = feeds.opts;
    this.high = null; this.studentsHigh = null; // the newest (t, id) read
    this.seen = new Map(); this.seenStudents = new Map(); // id -> t, within the late window
    this.reading = false; this.again = false; this.lastRead = 0; this.wakeTimer = null; this.failing = false;
    this.lastGoneCheck = Date.now(); this.commentMs = commentMs;
    // a start that fails (the database away) is tried again by the next read
    this.ready = false;
    this.started = this.start().then(() => { this.ready = true; }, () => {});
    this.poll = setInterval(() => this.wake(), pollMs);
    this.poll.unref();
  }

  /** Where the class is now: what arrived before this is each stream's backlog, not the feed's. */
  async start() {
    const db = this.feeds.db; const late = this.feeds.opts.lateMs;
    const p = await db.selectFrom('progress').select(['received_at', 'id']).where('class_code', '=', this.code)
      .orderBy('received_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
    if (p) {
      this.high = { t: p.received_at, id: p.id };
      for (const r of await this.ids('progress', 'received_at', before(p.received_at, late))) this.seen.set(r.id, r.t);
    }
    const s = await db.selectFrom('students').select(['joined_at', 'id']).where('class_code', '=', this.code)
      .orderBy('joined_at', 'desc').orderBy('id', 'desc').limit(1).executeTakeFirst();
    if (s) {
      this.studentsHigh = { t: s.joined_at, id: s.id };
      for (const r of await this.ids('students', 'joined_at', before(s.joined_at, late))) this.seenStudents.set(r.id, r.t);
    }
  }

  /** Ids (and times) of a table's rows of this class from `from` on, in order. */
  async ids(table, time, from) {
    const out = [];
    let after = null;
    for (;;) {
      let q = this.feeds.db.selectFrom(table).select([`${time} as t`, 'id']).where('class_code', '=', this.code).where(time, '>=', from);
      if (after) q = q.where((eb) => eb.or([eb(time, '>', after.t), eb.and([eb(time, '=', after.t), eb('id', '>', after.id)])]));
      const rows = await q.orderBy(time).orderBy('id').limit(ID_PAGE).execute();
      out.push(...rows);
      if (rows.length < ID_PAGE) return out;
      after = rows[rows.length - 1];
      await turn();
    }
  }

  wake() {
    if (this.stopped || !this.subs.size) return; // lingering without streams: nothing to read for
    if (this.reading) { this.again = true; return; }
    if (this.wakeTimer) return;
    const wait = Math.max(0, this.lastRead + MIN_GAP_MS - Date.now());
    this.wakeTimer = setTimeout(() => { this.wakeTimer = null; this.read(); }, wait);
  }

  async read() {
    if (this.stopped) return;
    this.reading = true; this.again = false; this.reads = (this.reads ?? 0) + 1;
    try {
      await this.started;
      if (!this.ready) { await this.start(); this.ready = true; }
      const { lateMs, progressQuery, progressItem, studentItem, commentMs } = this.feeds.opts;
      const db = this.feeds.db;
      // Students who joined
      const sFrom = this.studentsHigh ? before(this.studentsHigh.t, lateMs) : '';
      const newStudents = (await this.ids('students', 'joined_at', sFrom)).filter((r) => !this.seenStudents.has(r.id));
      if (newStudents.length) {
        const items = [];
        for (let i = 0; i < newStudents.length; i += FETCH_PAGE) {
          const rows = await db.selectFrom('students').select(['id', 'name', 'joined_at']).where('class_code', '=', this.code)
            .where('id', 'in', newStudents.slice(i, i + FETCH_PAGE).map((r) => r.id)).execute()
            .then((list) => list.sort((a, b) => (a.joined_at < b.joined_at ? -1 : a.joined_at > b.joined_at ? 1 : a.id < b.id ? -1 : 1)));
          for (const r of rows) {
            this.seenStudents.set(r.id, r.joined_at);
            if (newer(r.joined_at, r.id, this.studentsHigh)) this.studentsHigh = { t: r.joined_at, id: r.id };
            items.push(studentItem(r));
          }
        }
        this.fan(items);
      }
      // Records: those after the newest one read, by keyset; the late window is listed
      // (as ids) only when it holds more records than this feed has seen in it, which a
      // count over the index tells.
      const pFrom = this.high ? before(this.high.t, lateMs) : '';
      let fresh;
      if (!this.high) fresh = await this.ids('progress', 'received_at', '');
      else {
        const inWindow = Number((await db.selectFrom('progress').select((eb) => eb.fn.countAll().as('n')).where('class_code', '=', this.code)
          .where('received_at', '>=', pFrom).where('received_at', '<=', this.high.t).executeTakeFirst())?.n ?? 0);
        let seenInWindow = 0;
        for (const t of this.seen.values()) if (t >= pFrom && t <= this.high.t) seenInWindow++;
        const late = inWindow > seenInWindow ? (await this.ids('progress', 'received_at', pFrom)).filter((r) => r.t <= this.high.t && !this.seen.has(r.id)) : [];
        const after = (await this.ids('progress', 'received_at', this.high.t)).filter((r) => !this.seen.has(r.id));
        fresh = [...late, ...after];
      }
      for (let i = 0; i < fresh.length; i += FETCH_PAGE) {
        const rows = await progressQuery(this.code).where('p.id', 'in', fresh.slice(i, i + FETCH_PAGE).map((r) => r.id))
          .execute().then(inKeysetOrder);
        const items = [];
        for (const r of rows) {
          this.seen.set(r.id, r.received_at);
          if (newer(r.received_at, r.id, this.high)) this.high = { t: r.received_at, id: r.id };
          items.push(progressItem(r));
        }
        this.fan(items);
        if (i + FETCH_PAGE < fresh.length) await turn();
      }
      // Ids before the late window are never listed again: forget them.
      for (const [map, mark] of [[this.seen, this.high], [this.seenStudents, this.studentsHigh]]) {
        if (!mark) continue;
        const floor = before(mark.t, lateMs);
        for (const [id, t] of map) if (t < floor) map.delete(id);
      }
      if (Date.now() - this.lastGoneCheck >= commentMs) await this.checkGone();
      this.failing = false;
    } catch (e) {
      // The database away: the streams stay open and the next read tries again.
      if (!this.failing) this.feeds.opts.log?.warn({ err: e }, 'dashboard feed: a read failed');
      this.failing = true;
    } finally {
      this.reading = false; this.lastRead = Date.now();
      if (this.again) this.wake();
    }
  }

  /** The class deleted (or being deleted): every stream gets `gone` and ends. */
  async checkGone() {
    this.lastGoneCheck = Date.now();
    const cls = await this.feeds.db.selectFrom('classes').select('code').where('code', '=', this.code).where('deleting_at', 'is', null).executeTakeFirst()
      .catch(() => ({ code: this.code })); // a database away says nothing about the class
    if (!cls) { this.fan([{ kind: 'gone' }]); this.stop(); }
  }

  studentChange(what) {
    if (what?.removed) return { kind: 'removed', id: what.removed, text: `event: removed\ndata: ${JSON.stringify({ id: what.removed })}\n\n` };
    if (what?.renamed) return { kind: 'renamed', id: what.renamed.id, text: `event: student\ndata: ${JSON.stringify(what.renamed)}\n\n` };
    return { kind: 'none' };
  }

  fan(items) {
    if (!items.length) return;
    for (const sub of this.subs) sub.push(items);
  }

  stop() {
    this.stopped = true;
    clearInterval(this.poll); clearTimeout(this.wakeTimer);
  }
}

/**
 * One stream's side: what its feed fans out waits here until the stream's reader pulls it.
 * A reader that falls more than `max` items behind is ended (its client reconnects from
 * the last position it has) rather than kept in memory without bound.
 */
export class Subscriber {
  constructor(max = 20_000) { this.queue = []; this.max = max; this.waiter = null; this.overflowed = false; }
  push(items) {
    if (this.overflowed) return;
    if (this.queue.length + items.length > this.max) { this.overflowed = true; this.queue = []; }
    else this.queue.push(...items);
    this.waiter?.(); this.waiter = null;
  }
  /** Resolves once items wait (or after ms, or when signal aborts). */
  wait(ms, signal) {
    if (this.queue.length || this.overflowed || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => { clearTimeout(t); signal.removeEventListener('abort', done); this.waiter = null; resolve(); };
      const t = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.waiter = done;
    });
  }
  take() { const q = this.queue; this.queue = []; return q; }
}
