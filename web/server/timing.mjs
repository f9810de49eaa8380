// VMEMLAB_SERVER_TIMING=1: where a progress request's time goes, for whoever measures the
// server (npm run bench:class turns it on). Each answer of POST /api/classes/:code/progress
// carries a Server-Timing header: pre (from the request's arrival: its body, the class, the
// receipt and the closing time looked up), grader (the whole wait for its grading), queue
// and grade within it (the wait for the batch's first turn at the worker; its records' time
// there), db (the insert) and app (the handler from the arrival to the answer). At close the
// process prints one line `vmemlab timing {...}`: its event loop's delay and, on PostgreSQL,
// the waits for a connection of the pool. Off by default: the header tells any client how
// busy the grader is.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const r1 = (x) => Math.round(x * 10) / 10;

export class ServerTiming {
  constructor(store) {
    this.store = store;
    this.loop = monitorEventLoopDelay({ resolution: 10 });
    this.loop.enable();
  }

  /** A request's phases from `since` (performance.now() when it arrived): mark(name) closes
   * the phase running since the last mark. */
  start(reply, since = performance.now()) {
    const phases = [];
    let last = since;
    return {
      mark(name) { const now = performance.now(); phases.push([name, now - last]); last = now; },
      add(name, ms) { phases.push([name, ms]); },
      send() { reply.header('Server-Timing', [...phases, ['app', performance.now() - since]].map(([n, d]) => `${n};dur=${r1(d)}`).join(', ')); },
    };
  }

  summary() {
    const ms = (ns) => r1(ns / 1e6);
    const l = this.loop;
    const pool = this.store.pool;
    return {
      loop: { p50: ms(l.percentile(50)), p99: ms(l.percentile(99)), max: ms(l.max) },
      ...(pool ? { pool: { ...pool.waits, ms: Math.round(pool.waits.ms), ...pool.size() } } : {}),
    };
  }

  close() { this.loop.disable(); }
}
