/* The rings the replay's workers hand each other their work through (replay.md, "Modes in
 * parallel"): `slots` slots of `slotBytes` in a SharedArrayBuffer, one writer and `readers`
 * readers, each message read by every reader in order. Three per replay on the shared
 * decoder: the lead's inflated pieces of pass 1 to the worker that scans them (one
 * reader), that worker's pages to the lead and the others, and the lead's decoded batches
 * of pass 2 to every other worker. The heads are counts of messages in an Int32Array of the
 * same memory: [0] written, [1 + i] taken by reader i, [1 + readers + slot] the bytes in
 * that slot. The writer waits (Atomics.wait: workers may block) while the slowest reader
 * is `slots` behind; a reader waits while it has taken every message written. Memory:
 * slots x slotBytes, whatever the trace. */
import { AHEAD_MAX_BYTES, type Inbox, type Outbox } from '../../../wasm-core/js/replay';

export const RING_SLOTS = 8;
/** A batch of the engine fits (vmsim_replay_batch_bytes: the most one hands out, 704.1 KiB,
 * its 32,768 accesses' runs with a run per access; tests/wasm/replay-parts.test.ts). */
export const SLOT_BYTES = 705 << 10;
/** An inflated piece of the engine's gzip reader (src/gunzip.c: at most 256 KiB) fits, with
 * the lead's scan ahead of it and its length (pieceMessage in wasm-core/js/replay.ts). */
export const PIECE_BYTES = (256 << 10) + AHEAD_MAX_BYTES + 4;
/** How long a writer with something else to do (whileFull) waits at a time, in ms. */
const WHILE_FULL_MS = 1;

export interface Ring {
  control: SharedArrayBuffer;
  data: SharedArrayBuffer;
  readers: number;
  slots: number;
  slotBytes: number;
}

/** The three rings of a replay on the shared decoder with `others` workers besides the lead. */
export interface Rings { pieces: Ring; pages: Ring; batches: Ring }

/** Whether this page may share memory with its workers: cross-origin isolated (the server's
 * COOP and COEP headers), with SharedArrayBuffer and Atomics. */
export function canShare(): boolean {
  return typeof SharedArrayBuffer === 'function' && typeof Atomics === 'object' &&
    typeof crossOriginIsolated === 'boolean' && crossOriginIsolated;
}

export function newRing(readers: number, slotBytes = SLOT_BYTES, slots = RING_SLOTS): Ring {
  return {
    control: new SharedArrayBuffer(4 * (1 + readers + slots)),
    data: new SharedArrayBuffer(slots * slotBytes),
    readers,
    slots,
    slotBytes,
  };
}

/** Pass 1's pieces go to one worker (the first after the lead); its pages go to the lead
 * (reader 0) and every other worker (reader i for worker i + 1); pass 2's batches to every
 * worker but the lead (reader i for worker i + 1). */
export function newRings(others: number): Rings {
  return { pieces: newRing(1, PIECE_BYTES), pages: newRing(others), batches: newRing(others) };
}

/** The writer's side: copies a message into the next slot, waiting for room (calling
 * whileFull between short waits when given). */
export function ringWriter(ring: Ring): Outbox {
  const ctl = new Int32Array(ring.control);
  const data = new Uint8Array(ring.data);
  return (bytes, whileFull) => {
    const head = Atomics.load(ctl, 0);
    for (let i = 0; i < ring.readers; i++) {
      for (;;) {
        const taken = Atomics.load(ctl, 1 + i);
        if (head - taken < ring.slots) break;
        if (whileFull) {
          whileFull();
          Atomics.wait(ctl, 1 + i, taken, WHILE_FULL_MS);
        } else Atomics.wait(ctl, 1 + i, taken);
      }
    }
    const got = bytes();
    const parts = got instanceof Uint8Array ? [got] : got;
    const length = parts.reduce((n, p) => n + p.length, 0);
    if (length > ring.slotBytes) throw new Error(`a message of ${length} bytes does not fit the ring's ${ring.slotBytes}`);
    const slot = head % ring.slots;
    let at = slot * ring.slotBytes;
    for (const p of parts) { data.set(p, at); at += p.length; }
    Atomics.store(ctl, 1 + ring.readers + slot, length);
    Atomics.store(ctl, 0, head + 1);
    Atomics.notify(ctl, 0);
  };
}

/** Messages written to the ring so far, and taken by reader i (those in between wait for it). */
export function ringCounts(ring: Ring, i: number): { written: number; taken: number } {
  const ctl = new Int32Array(ring.control);
  const taken = Atomics.load(ctl, 1 + i);
  return { written: Atomics.load(ctl, 0), taken };
}

/** Reader i's side: next waits for the next message and returns a view of its slot, valid
 * until release; poll returns it only when it is there. */
export function ringReader(ring: Ring, i: number): Inbox {
  const ctl = new Int32Array(ring.control);
  let taken = 0;
  const view = () => {
    const slot = taken % ring.slots;
    return new Uint8Array(ring.data, slot * ring.slotBytes, Atomics.load(ctl, 1 + ring.readers + slot));
  };
  return {
    next() {
      taken = Atomics.load(ctl, 1 + i);
      while (Atomics.load(ctl, 0) === taken) Atomics.wait(ctl, 0, taken);
      return view();
    },
    poll() {
      taken = Atomics.load(ctl, 1 + i);
      return Atomics.load(ctl, 0) === taken ? undefined : view();
    },
    release() {
      Atomics.store(ctl, 1 + i, taken + 1);
      Atomics.notify(ctl, 1 + i);
    },
  };
}
