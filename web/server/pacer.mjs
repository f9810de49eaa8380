// Runs the CPU-heavy steps of requests (parsing, checking and summarizing an upload) in
// slices of a few milliseconds per turn of the event loop. Node accepts one new connection
// per turn, so a turn that handled every waiting upload at once (200 of them: tens of ms)
// left the next classroom's connections unaccepted for seconds; with slices, a turn stays
// short and new connections come in while the queue drains (first come, first served).
export class Pacer {
  constructor(sliceMs = 1) {
    this.sliceMs = sliceMs;
    this.queue = [];
    this.head = 0;
    this.scheduled = false;
    this.turns = 0;
    this.pump = this.pump.bind(this);
  }

  /** Runs fn (synchronous) in a later slice; resolves with what it returns. */
  run(fn) {
    return new Promise((resolve, reject) => {
      this.queue.push({ fn, resolve, reject });
      if (!this.scheduled) { this.scheduled = true; setImmediate(this.pump); }
    });
  }

  pump() {
    this.turns++;
    const end = performance.now() + this.sliceMs;
    do {
      const job = this.queue[this.head];
      this.queue[this.head++] = undefined;
      try { job.resolve(job.fn()); } catch (e) { job.reject(e); }
    } while (this.head < this.queue.length && performance.now() < end);
    if (this.head === this.queue.length) { this.queue = []; this.head = 0; this.scheduled = false; return; }
    if (this.head > 1024) { this.queue = this.queue.slice(this.head); this.head = 0; }
    setImmediate(this.pump); // the rest in the next turn, after the loop has polled
  }
}
