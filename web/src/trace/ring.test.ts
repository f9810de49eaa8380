/* The rings the page's replay workers hand each other their work through (ring.ts), in one
 * thread: a message given in parts arrives whole, every reader reads each message, the
 * counts say how far each reader has taken, and the lead's choice of which pieces of pass 1
 * it scans ahead follows the pieces the scanning worker must still scan itself. */
import { describe, expect, it } from 'vitest';
import { newRing, ringCounts, ringReader, ringWriter } from './ring';
import { groupWhileBehind, scanAheadWhileBehind } from './protocol';

describe('ring', () => {
  it('joins a message given in parts and hands it to every reader in order', () => {
    const ring = newRing(2, 16, 4);
    const write = ringWriter(ring);
    const [a, b] = [ringReader(ring, 0), ringReader(ring, 1)];
    write(() => [Uint8Array.of(1, 2), Uint8Array.of(), Uint8Array.of(3)]);
    write(() => Uint8Array.of(9));
    expect(ringCounts(ring, 0)).toEqual({ written: 2, taken: 0 });
    expect([...a.next()]).toEqual([1, 2, 3]);
    a.release();
    expect([...a.next()]).toEqual([9]);
    a.release();
    expect(a.poll()).toBeUndefined();
    expect(ringCounts(ring, 0)).toEqual({ written: 2, taken: 2 });
    expect(ringCounts(ring, 1)).toEqual({ written: 2, taken: 0 });
    expect([...b.next()]).toEqual([1, 2, 3]);
  });

  it('refuses a message larger than its slot, counting its parts together', () => {
    const write = ringWriter(newRing(1, 4, 2));
    expect(() => write(() => [Uint8Array.of(1, 2, 3), Uint8Array.of(4, 5)])).toThrow(/5 bytes does not fit the ring's 4/);
  });
});

describe('scanAheadWhileBehind', () => {
  it('scans ahead while three pieces or more wait that the scanning worker must scan itself', () => {
    const ring = newRing(1, 8, 8);
    const write = ringWriter(ring);
    const reader = ringReader(ring, 0);
    const choose = scanAheadWhileBehind(ring);
    const send = () => { const yes = choose(); write(() => Uint8Array.of(yes ? 1 : 0)); return yes; };
    expect(send()).toBe(false);      // nothing waiting
    expect(send()).toBe(false);      // one plain piece waiting
    expect(send()).toBe(false);      // two
    expect(send()).toBe(true);       // three
    expect(send()).toBe(true);       // still three plain ones (the one scanned ahead does not count)
    reader.next(); reader.release(); // the worker takes a plain piece: two plain left, and two scanned ahead
    expect(send()).toBe(false);
    expect(send()).toBe(true);       // the one just sent is plain: three again
    for (let i = 0; i < 6; i++) { reader.next(); reader.release(); }
    expect(ringCounts(ring, 0)).toEqual({ written: 7, taken: 7 });
    expect(send()).toBe(false);      // caught up
    // over many laps of the ring its choices stay tied to the right pieces
    let plain = 0;
    for (let i = 0; i < 100; i++) {
      if (!send()) plain++;
      const { written, taken } = ringCounts(ring, 0);
      if (i % 3 === 2 || written - taken >= 6) for (let k = 0; k < 2 && written - taken - k > 0; k++) { reader.next(); reader.release(); }
    }
    expect(plain).toBeGreaterThan(0);
    expect(plain).toBeLessThan(100);
  });
});

describe('groupWhileBehind', () => {
  it('groups a batch while the slowest other worker has three or more waiting', () => {
    const ring = newRing(2, 8, 8);
    const write = ringWriter(ring);
    const fast = ringReader(ring, 0), slow = ringReader(ring, 1);
    const choose = groupWhileBehind(ring);
    const send = () => { const yes = choose(); write(() => Uint8Array.of(yes ? 1 : 0)); return yes; };
    const take = (r: typeof fast) => { r.next(); r.release(); };
    expect(send()).toBe(false);      // nothing waiting
    expect(send()).toBe(false);      // one
    expect(send()).toBe(false);      // two
    expect(send()).toBe(true);       // three for both
    take(fast); take(fast); take(fast); take(fast);
    expect(send()).toBe(true);       // the fast one caught up, the slow one has four
    take(slow); take(slow); take(slow);
    expect(send()).toBe(false);      // the slow one has two left
    take(fast); take(fast); take(slow); take(slow); take(slow);
    expect(ringCounts(ring, 1)).toEqual({ written: 6, taken: 6 });
    expect(send()).toBe(false);      // both caught up
  });
});
