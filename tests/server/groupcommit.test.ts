/* SQLite writes (web/server/sqlite-writer.mjs, on a thread of their own): uploads that
 * arrive together share one transaction, every one is stored and acknowledged only after its
 * commit, a row that violates a constraint fails alone while the rest of its batch is kept,
 * a repeated Idempotency-Key stores nothing, and a writer thread that dies fails only the
 * writes it held, then a new one takes over. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../web/server/db.mjs';

type Writer = { batches: number; restarts: number; worker: { terminate: () => Promise<number> } };
let dir: string;
let store: Store & { writer?: Writer };
const row = (i: number, cls = 'CLASS-A', idem: string | null = null) => ({
  id: `r${i}`, class_code: cls, receipt_hash: 'h'.repeat(64), created_at: new Date(1e12 + i).toISOString(),
  cpu_model: `cpu ${i}`, hypervisor: 'kvm', tdp: 'EPT on', summary: '{}', body: '{}', idem_hash: idem,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vmemlab-gc-'));
  store = await openStore({ dataDir: dir, databaseUrl: '' });
  await store.createClass({ code: 'CLASS-A', name: 'a', teacher_hash: 't'.repeat(64), created_at: new Date().toISOString() });
});
afterAll(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); });

describe('SQLite writer thread', () => {
  it('commits 300 concurrent uploads in a few transactions and keeps every one', async () => {
    expect(store.kind).toBe('sqlite');
    const before = store.writer!.batches;
    const done = await Promise.all(Array.from({ length: 300 }, (_, i) => store.insertResult(row(i))));
    expect(done.every((d) => d === true)).toBe(true);
    const batches = store.writer!.batches - before;
    expect(batches).toBeGreaterThan(0);
    expect(batches).toBeLessThan(30);
    expect(await store.countResults('CLASS-A')).toBe(300);
  });

  it('fails only the row that breaks a constraint', async () => {
    const results = await Promise.allSettled([
      store.insertResult(row(1000)), store.insertResult(row(1001, 'NO-SUCH-CLASS')), store.insertResult(row(1002)),
      store.insertResult(row(1000)),   // the same id again: primary key
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    expect((results[1] as PromiseRejectedResult).reason.code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(await store.countResults('CLASS-A')).toBe(302);
  });

  it('stores one row per Idempotency-Key, even when both arrive in one batch', async () => {
    const k = 'k'.repeat(64);
    const [a, b] = await Promise.all([store.insertResult(row(2000, 'CLASS-A', k)), store.insertResult(row(2001, 'CLASS-A', k))]);
    expect([a, b]).toEqual([true, false]);
    expect((await store.findByIdem('CLASS-A', k))?.id).toBe('r2000');
    expect(await store.countResults('CLASS-A')).toBe(303);
  });

  it('a writer thread that dies fails the writes it held; a retry with the same key stores once', async () => {
    const w = store.writer!;
    const restarts = w.restarts;
    const key = 'r'.repeat(64);
    const held = store.insertResult(row(3000, 'CLASS-A', key));
    await w.worker.terminate();
    // Committed just before the thread stopped, or not: either way never acknowledged twice,
    // and the client's retry with the same key settles it.
    const outcome = await held.then(() => 'stored', (e: Error) => e.message);
    expect(outcome === 'stored' || /writer stopped/.test(outcome), outcome).toBe(true);
    await expect.poll(() => w.restarts).toBe(restarts + 1);
    const retry = await store.insertResult(row(3001, 'CLASS-A', key)); // sent before the next thread is up: it waits
    if (outcome === 'stored') expect(retry).toBe(false);
    expect(await store.findByIdem('CLASS-A', key)).toBeTruthy();
    expect(await store.countResults('CLASS-A')).toBe(304);
  });
});
