/* The live guest under Node: restore the saved state, run the marked-page program, read the
 * guest's CR3 and page tables, walk the marked address with the engine (native and through
 * each host mode) and find the marker bytes at the physical address it gives; then the
 * differential test against v86's own MMU over thousands of guest addresses. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { readRegs, type SerialConsole, type V86Emulator } from '../../web/src/live/guestDriver';
import { buildScenario, buildScenarios, mappedPages, snapshotTables, tablePages, type TableSnapshot } from '../../web/src/live/liveTables';
import { haveGuest, root, startGuest } from './nodeGuest';

let emu: V86Emulator;
let serial: SerialConsole;
let engine: Vmsim;
let restoreMs = 0;
const CPU_FIELDS = ['reg32', 'instruction_pointer', 'previous_ip', 'flags', 'flags_changed', 'cpl', 'sreg', 'segment_is_null', 'segment_offsets', 'segment_limits', 'segment_access_bytes', 'protected_mode', 'is_32', 'stack_size_32', 'in_hlt', 'last_op1', 'last_result', 'prefixes', 'cr'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!haveGuest)('live guest (v86, headless)', () => {
  beforeAll(async () => {
    engine = await loadVmsim({ wasmBinary: readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) });
    ({ emu, serial, ms: restoreMs } = await startGuest());
  }, 30_000);
  afterAll(async () => { await emu?.destroy(); });

  it('restores from the saved state to a prompt and runs a command', async () => {
    expect(restoreMs).toBeLessThan(10_000);
    const out = await serial.run('echo $((6*7)); uname -r');
    expect(out.trim()).toMatch(/^42\n6\.1\.0-\d+-686$/);
  }, 20_000);

  let markVa = 0, pid = 0, snap: TableSnapshot;
  it('walks the marked page with the engine and finds the marker at the physical address', async () => {
    const from = serial.text.length;
    serial.send('markpage 40 VMEMLAB-TEST &\n');
    const m = await serial.waitLine(/MARK va=0x([0-9a-f]+) pid=(\d+) text=/, 15_000, from);
    markVa = parseInt(m[1], 16); pid = Number(m[2]);
    const marker = `VMEMLAB-TEST pid=${pid}`;
    const cpu = emu.v86.cpu;
    let found: { pa: number; cr3: number } | null = null;
    for (let tries = 0; tries < 200 && !found; tries++) {
      await sleep(20); // the emulator runs a slice; registers and memory are read between slices
      const regs = readRegs(cpu);
      expect(regs.paging).toBe('32bit');
      const s = snapshotTables(cpu.mem8, regs);
      const r = engine.run(buildScenario(s, [markVa]));
      const a = r.accesses[0];
      if (a.outcome !== 'ok') continue; // another process (or the idle task) was on the CPU
      const pa = Number(a.hpa);
      const bytes = new TextDecoder().decode(cpu.mem8.subarray(pa, pa + marker.length));
      if (bytes === marker) { found = { pa, cr3: regs.cr3 }; snap = s; }
    }
    expect(found, 'the marked process was never sampled with its marker in place').not.toBeNull();
    // the engine's walk: the PDE at CR3 + 4 * index, then the real leaf PTE
    const r = engine.run(buildScenario(snap, [markVa]));
    const steps = r.accesses[0].steps.filter((st) => st.ref);
    expect(steps.length).toBe(2);
    expect(Number(steps[0].table)).toBe(found!.cr3 & 0xfffff000);
    expect(Number(steps[1].entry) >>> 12).toBe(found!.pa >>> 12);
    // and at the addresses the guest's MMU reads: the directory entry at CR3 + 4 * (va >> 22),
    // the page-table entry inside the real page table the PDE names, with the real values
    const pde = snap.pd[markVa >>> 22];
    expect(Number(steps[0].entry_hpa)).toBe(((found!.cr3 & 0xfffff000) + 4 * (markVa >>> 22)) >>> 0);
    expect(Number(steps[0].entry) >>> 0).toBe(pde >>> 0);
    expect(Number(steps[1].table)).toBe((pde & 0xfffff000) >>> 0);
    expect(Number(steps[1].entry_hpa)).toBe(((pde & 0xfffff000) + 4 * ((markVa >>> 12) & 1023)) >>> 0);
    // every host mode gives the same guest-physical address, and the host half is walked
    for (const mode of ['ept', 'npt', 'flat'] as const) {
      const rr = engine.run(buildScenario(snap, [markVa], { mode }));
      expect(rr.accesses[0].outcome, mode).toBe('ok');
      expect(Number(rr.accesses[0].gpa), mode).toBe(found!.pa);
      expect(rr.accesses[0].hpa, mode).not.toBe(rr.accesses[0].gpa);
    }
    // a 2-level guest over a 4-level EPT: (2 + 1)(4 + 1) - 1 = 14 references, real entries in the guest steps
    const ept = engine.run(buildScenario(snap, [markVa], { mode: 'ept' }));
    expect(ept.accesses[0].memory_refs).toBe(14);
    const flat = engine.run(buildScenario(snap, [markVa], { mode: 'flat' }));
    expect(flat.accesses[0].memory_refs).toBe(5);
  }, 30_000);

  it('agrees with v86\'s MMU on thousands of addresses (mapped, unmapped, user, kernel)', async () => {
    expect(snap).toBeDefined();
    const cpu = emu.v86.cpu;
    await (emu.stop() as Promise<void>);
    const s = snapshotTables(cpu.mem8, readRegs(cpu));
    expect(tablePages(s).total).toBeGreaterThan(2);
    // addresses: every mapped page (user and kernel) with an offset, its neighbours (often
    // unmapped), and a deterministic spread over the whole 4 GiB
    const pages = mappedPages(s);
    const vas = new Set<number>();
    let seed = 12345;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0), seed);
    for (const p of pages) { vas.add((p.gva + (rnd() % p.size)) >>> 0); vas.add((p.gva + p.size + 0x123) >>> 0); }
    for (let i = 0; i < 2000; i++) vas.add((rnd() & 0xfffffffc) >>> 0);
    vas.add(markVa);
    const list = [...vas].filter((v) => v < 0x100000000).slice(0, 8000);
    const userCount = pages.filter((p) => p.user).length;
    expect(userCount).toBeGreaterThan(3);
    expect(list.length).toBeGreaterThan(2000);
    // the engine first (v86's walker sets A bits and, on a fault, starts a #PF in the guest)
    const engineAns = new Map<number, number | null>();
    for (const { scenario, gvas } of buildScenarios(s, list)) {
      const r = engine.run(scenario);
      gvas.forEach((g, i) => engineAns.set(g, r.accesses[i].outcome === 'ok' ? Number(r.accesses[i].hpa) : null));
    }
    // v86's walker has side effects when it faults: it starts a #PF in the guest (pushes on the
    // stack, jumps to the handler) before the wasm panics. Put the CPU state back each time.
    const saved = CPU_FIELDS.map((f) => [f, (cpu as any)[f]?.slice?.()] as const).filter(([, v]) => v);
    const putBack = () => { for (const [f, v] of saved) (cpu as any)[f].set(v); };
    let mapped = 0, faults = 0;
    const mismatches: string[] = [];
    const quiet = { log: console.log, error: console.error, warn: console.warn };
    console.log = console.error = console.warn = () => {}; // each fault prints a Rust panic message
    try {
    for (const va of list) {
      let v86pa: number | null;
      try { v86pa = cpu.translate_address_system_read(va | 0) >>> 0; } catch { v86pa = null; putBack(); }
      const e = engineAns.get(va)!;
      if (e !== v86pa) mismatches.push(`${va.toString(16)}: engine ${e?.toString(16)} v86 ${v86pa?.toString(16)}`);
      if (v86pa === null) faults++; else mapped++;
      if (cpu.cr[3] >>> 0 !== s.regs.cr3) throw new Error('CR3 changed under the test');
    }
    } finally { Object.assign(console, quiet); }
    expect(mismatches.slice(0, 10)).toEqual([]);
    // and the tables v86 walked are the ones the engine was given (A bits aside)
    const after = snapshotTables(cpu.mem8, readRegs(cpu));
    const strip = (a: Uint32Array) => Array.from(a, (e) => e & ~0x60);
    expect(strip(after.pd)).toEqual(strip(s.pd));
    expect(mapped).toBeGreaterThan(1000);
    expect(faults).toBeGreaterThan(500);
    console.log(`differential: ${list.length} addresses, ${mapped} mapped, ${faults} faults, ${userCount} user pages, ${tablePages(s).total} table pages`);
  }, 40_000);
});
