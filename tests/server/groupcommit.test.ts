/* SQLite group commit: uploads that arrive together share one transaction, every one is
 * stored and acknowledged only after its commit, and a row that violates a constraint
 * fails alone while the rest of its batch is kept. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../web/server/db.mjs';

let dir: string;
let store: Store & { groupCommit?: { batches: number } };
const row = (i: number, cls = 'CLASS-A') => ({
  id: `r${i}`, class_code: cls, receipt_hash: 'h'.repeat(64), created_at: new Date(1e12 + i).toISOString(),
  cpu_model: `cpu ${i}`, hypervisor: 'kvm', tdp: 'EPT on', summary: '{}', body: '{}',
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vmemlab-gc-'));
  store = await openStore({ dataDir: dir, databaseUrl: '' });
  await store.createClass({ code: 'CLASS-A', name: 'a', teacher_hash: 't'.repeat(64), created_at: new Date().toISOString() });
});
afterAll(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); });

describe('SQLite group commit', () => {
  it('commits 300 concurrent uploads in a few transactions and keeps every one', async () => {
    expect(store.kind).toBe('sqlite');
    const before = store.groupCommit!.batches;
    await Promise.all(Array.from({ length: 300 }, (_, i) => store.insertResult(row(i))));
    const batches = store.groupCommit!.batches - before;
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
    expect(await store.countResults('CLASS-A')).toBe(302);
  });
});
