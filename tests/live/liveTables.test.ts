/* The live-table extraction on a hand-made 32-bit memory image (no guest needed): the
 * scenario built from it gives the engine the real entry values, and the engine's walks
 * land on the right frames or fault at the right level. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { buildScenario, buildScenarios, mappedPages, snapshotTables, tablePages } from '../../web/src/live/liveTables';

let engine: Vmsim;
beforeAll(async () => { engine = await loadVmsim({ wasmBinary: readFileSync(join(__dirname, '..', '..', 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) }); });

function image() {
  const mem = new Uint8Array(8 << 20);
  const dv = new DataView(mem.buffer);
  const put = (a: number, v: number) => dv.setUint32(a, v >>> 0, true);
  const CR3 = 0x100000;
  put(CR3 + 4 * 0x300, 0x00400000 | 0x1e3); // 4 MiB kernel page: P RW A D PS G
  put(CR3 + 4 * 1, 0x200000 | 0x067);        // user PT
  put(0x200000 + 4 * 5, 0x345000 | 0x067);   // P RW US A D
  put(0x200000 + 4 * 7, 0x346000 | 0x005);   // read-only user page, A clear
  put(CR3 + 4 * 2, 0x201000 | 0x027);        // present PT with nothing present in it
  put(0x201000 + 4 * 3, 0x00abc000);         // a not-present entry with bits (as a swap entry)
  const regs = { cr0: 0x80050033, cr3: CR3, cr4: 0x690, paging: '32bit' as const };
  return snapshotTables(mem, regs);
}

describe('live tables → engine scenario (32-bit)', () => {
  it('reads the directory and tables, counts the pages a shadow VMM would protect', () => {
    const s = image();
    expect(tablePages(s)).toEqual({ directory: 1, tables: 2, total: 3 });
    expect(mappedPages(s).map((p) => [p.gva.toString(16), p.user])).toEqual([['405000', true], ['407000', true], ['c0000000', false]]);
  });

  it('walks to the real frames with the real entries, and faults where the tables say', () => {
    const s = image();
    const vas = [0xc0012345, 0x405123, 0x407ffc, 0x406000, 0x803000, 0x1000000];
    const r = engine.run(buildScenario(s, vas));
    const a = r.accesses;
    expect(a.map((x) => x.outcome)).toEqual(['ok', 'ok', 'ok', 'guest_page_fault', 'guest_page_fault', 'guest_page_fault']);
    expect(a.slice(0, 3).map((x) => x.hpa)).toEqual(['0x412345', '0x345123', '0x346ffc']);
    const refs = (i: number) => a[i].steps.filter((st) => st.ref);
    expect(refs(0).map((st) => st.entry)).toEqual(['0x4001e3']);
    expect(Number(refs(1)[0].table)).toBe(0x100000); // the directory at the real CR3
    expect(Number(refs(1)[1].entry)).toBe(0x345067);  // the real PTE, A and D included
    expect(Number(refs(1)[0].entry) & 0xfff).toBe(0x067); // real PDE flags
    expect(Number(refs(4)[1].entry)).toBe(0xabc000);  // the not-present entry, bits and all
    expect(refs(5).length).toBe(1);                    // PDE not present: fault at level 2
    // host modes keep the guest answer and add the host half
    for (const mode of ['ept', 'npt', 'flat'] as const) {
      const h = engine.run(buildScenario(s, [0x405123], { mode, backing: '2M' }));
      expect(h.accesses[0].gpa, mode).toBe('0x345123');
    }
  });

  it('splits a large address list over scenarios within the engine limits', () => {
    const s = image();
    const vas = Array.from({ length: 9000 }, (_, i) => (0xc0000000 + i * 64) >>> 0);
    const parts = buildScenarios(s, vas);
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.reduce((n, p) => n + p.gvas.length, 0)).toBe(9000);
    for (const p of parts) expect(engine.run(p.scenario).totals.ok).toBe(p.gvas.length);
  });
});
