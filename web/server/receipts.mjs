// The student a progress request's receipt names, kept in memory for a minute per class and
// receipt, so that a student's check costs the database one statement (the insert) instead
// of two: under a lecture hall's load each statement waits its turn at the pool and at the
// database's CPU. What it may keep stale is checked where it matters: the insert refers to
// the student's row (a foreign key), so a student removed or merged through another server
// instance fails it, and progress.mjs then forgets the entry and looks the receipt up again.
// A student removed through this instance is forgotten at once.

/** How long a receipt's student is kept. */
export const RECEIPT_TTL_MS = 60_000;
/** Receipts kept at most (the oldest goes first). */
export const RECEIPT_CACHE_MAX = 10_000;

export class ReceiptCache {
  constructor({ ttlMs = RECEIPT_TTL_MS, max = RECEIPT_CACHE_MAX, now = Date.now } = {}) {
    this.ttlMs = ttlMs; this.max = max; this.now = now;
    this.rows = new Map(); // `${code}\0${hash}` -> { row, until }
  }

  get(code, hash) {
    const key = `${code}\0${hash}`;
    const hit = this.rows.get(key);
    if (!hit) return null;
    if (hit.until > this.now()) return hit.row;
    this.rows.delete(key);
    return null;
  }

  set(code, hash, row) {
    const key = `${code}\0${hash}`;
    this.rows.delete(key);
    if (this.rows.size >= this.max) this.rows.delete(this.rows.keys().next().value);
    this.rows.set(key, { row, until: this.now() + this.ttlMs });
  }

  forget(code, hash) { this.rows.delete(`${code}\0${hash}`); }

  /** A student removed here: every receipt of theirs (a scan: removals are rare). */
  forgetStudent(id) { for (const [k, v] of this.rows) if (v.row.id === id) this.rows.delete(k); }
}
