// A count per key over a fixed window (a minute, an hour), kept in this process: the write
// budget of progress.mjs (records and joins per client address; joins per class and
// address). @fastify/rate-limit counts requests; a batch of 50 records is 50 writes here.
// The map is bounded: past `keys` keys, windows that ended are dropped, then the oldest.

export class Budget {
  /** @param {number} max per window (0: no limit) @param {number} windowMs */
  constructor(max, windowMs, keys = 100_000) { this.max = max; this.windowMs = windowMs; this.keysMax = keys; this.used = new Map(); }

  /** Counts n against key: 0 when it fits, else the seconds until the window ends (nothing counted). */
  take(key, n = 1, now = Date.now()) {
    if (!this.max) return 0;
    let w = this.used.get(key);
    if (!w || now - w.start >= this.windowMs) {
      if (w) this.used.delete(key);
      w = { start: now, n: 0 };
      if (this.used.size >= this.keysMax) this.sweep(now);
      this.used.set(key, w);
    }
    if (w.n + n > this.max) return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
    w.n += n;
    return 0;
  }

  /** Gives back what a refused write took (nothing was stored). */
  give(key, n = 1) { const w = this.used.get(key); if (w) w.n = Math.max(0, w.n - n); }

  sweep(now) {
    for (const [k, w] of this.used) if (now - w.start >= this.windowMs) this.used.delete(k);
    while (this.used.size >= this.keysMax) this.used.delete(this.used.keys().next().value);
  }
}

/** The class server's write budget, one per server and shared by every route that stores a
 * student's write (progress.mjs's joins and records, course/routes.mjs's roster joins, device
 * codes and roster loads), so that moving to another route gains no room: writes per client
 * address per minute (rateLimit.writeMax), joins per class per address per hour (joinMax). */
export class WriteBudget {
  /** @param {{ writeMax?: number, joinMax?: number } | false | undefined} rateLimit */
  constructor(rateLimit) {
    this.writes = new Budget(rateLimit ? rateLimit.writeMax ?? 0 : 0, 60_000);
    this.joins = new Budget(rateLimit ? rateLimit.joinMax ?? 0 : 0, 3_600_000);
  }

  /** n writes from addr: null when they fit (counted), else why not and for how long. */
  write(addr, n = 1) {
    const wait = this.writes.take(addr, n);
    return wait ? { seconds: wait, message: `your address has sent ${this.writes.max} records and joins in the last minute (the most one address may)` } : null;
  }

  /** A join of class `code` from addr (a write too): null when it fits (counted), else why not. */
  join(code, addr) {
    const key = `${code}\0${addr}`;
    const wait = this.joins.take(key);
    if (wait) return { seconds: wait, message: `your address has joined class ${code} ${this.joins.max} times in the last hour (the most one address may)` };
    const over = this.write(addr);
    if (over) this.joins.give(key);
    return over;
  }

  /** Gives back n writes that stored nothing. */
  giveWrites(addr, n) { this.writes.give(addr, n); }
}
