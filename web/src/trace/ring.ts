/* The ring the replay's lead worker hands its decoded batches through to the other workers
 * (replay.md, "Modes in parallel"): RING_SLOTS slots of SLOT_BYTES in a SharedArrayBuffer,
 * one writer and `readers` readers, each batch read by every reader in order. The heads are
 * counts of batches in an Int32Array of the same memory: [0] written, [1 + i] taken by
 * reader i, [1 + readers + slot] the bytes in that slot. The writer waits (Atomics.wait:
 * workers may block) while the slowest reader is RING_SLOTS behind; a reader waits while it
 * has taken every batch written. Memory: RING_SLOTS x SLOT_BYTES, whatever the trace. */

export const RING_SLOTS = 8;
/** A batch of the engine (vmsim_replay_batch_bytes: 32,768 accesses, about 640 KiB) fits. */
export const SLOT_BYTES = 1 << 20;

export interface Ring {
  control: SharedArrayBuffer;
  data: SharedArrayBuffer;
  readers: number;
}

/** Whether this page may share memory with its workers: cross-origin isolated (the server's
 * COOP and COEP headers), with SharedArrayBuffer and Atomics. */
export function canShare(): boolean {
  return typeof SharedArrayBuffer === 'function' && typeof Atomics === 'object' &&
    typeof crossOriginIsolated === 'boolean' && crossOriginIsolated;
}

export function newRing(readers: number): Ring {
  return {
    control: new SharedArrayBuffer(4 * (1 + readers + RING_SLOTS)),
    data: new SharedArrayBuffer(RING_SLOTS * SLOT_BYTES),
    readers,
  };
}

/** The writer's side: put copies a batch into the next slot, waiting for room. */
export function ringWriter(ring: Ring): (batch: Uint8Array) => void {
  const ctl = new Int32Array(ring.control);
  const data = new Uint8Array(ring.data);
  return (batch) => {
    if (batch.length > SLOT_BYTES) throw new Error(`a batch of ${batch.length} bytes does not fit the ring's ${SLOT_BYTES}`);
    const head = Atomics.load(ctl, 0);
    for (let i = 0; i < ring.readers; i++) {
      for (;;) {
        const taken = Atomics.load(ctl, 1 + i);
        if (head - taken < RING_SLOTS) break;
        Atomics.wait(ctl, 1 + i, taken);
      }
    }
    const slot = head % RING_SLOTS;
    data.set(batch, slot * SLOT_BYTES);
    Atomics.store(ctl, 1 + ring.readers + slot, batch.length);
    Atomics.store(ctl, 0, head + 1);
    Atomics.notify(ctl, 0);
  };
}

/** Reader i's side: next waits for the next batch and returns a view of its slot, valid
 * until release. */
export function ringReader(ring: Ring, i: number): { next(): Uint8Array; release(): void } {
  const ctl = new Int32Array(ring.control);
  let taken = 0;
  return {
    next() {
      taken = Atomics.load(ctl, 1 + i);
      while (Atomics.load(ctl, 0) === taken) Atomics.wait(ctl, 0, taken);
      const slot = taken % RING_SLOTS;
      return new Uint8Array(ring.data, slot * SLOT_BYTES, Atomics.load(ctl, 1 + ring.readers + slot));
    },
    release() {
      Atomics.store(ctl, 1 + i, taken + 1);
      Atomics.notify(ctl, 1 + i);
    },
  };
}
