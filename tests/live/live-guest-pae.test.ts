/* The PAE guest (Debian's -686-pae kernel): the marked page walked through the real PAE
 * tables (PDPTE registers, 8-byte entries) by the engine, and the differential test against
 * v86's MMU over thousands of addresses. Needs `make -C public guest-pae`. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadVmsim, type Vmsim } from '../../wasm-core/js/vmsim';
import { readRegs, type SerialConsole, type V86Emulator } from '../../web/src/live/guestDriver';
import { buildScenarioPae, buildScenariosPae, mappedPagesPae, snapshotPae, tablePagesPae, type PaeSnapshot } from '../../web/src/live/liveTablesPae';
import { haveGuestPae, root, startGuest } from './nodeGuest';

const CPU_FIELDS = ['reg32', 'instruction_pointer', 'previous_ip', 'flags', 'flags_changed', 'cpl', 'sreg', 'segment_is_null', 'segment_offsets', 'segment_limits', 'segment_access_bytes', 'protected_mode', 'is_32', 'stack_size_32', 'in_hlt', 'last_op1', 'last_result', 'prefixes', 'cr'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let emu: V86Emulator, serial: SerialConsole, engine: Vmsim;

describe.skipIf(!haveGuestPae)('live PAE guest (v86, headless)', () => {
  beforeAll(async () => {
    engine = await loadVmsim({ wasmBinary: readFileSync(join(root, 'wasm-core', 'build', 'wasm', 'vmsim.wasm')) });
    ({ emu, serial } = await startGuest({ pae: true }));
  }, 30_000);
  afterAll(async () => { await emu?.destroy(); });

  let markVa = 0;
  it('walks the marked page through the real PAE tables and finds the marker', async () => {
    const from = serial.text.length;
    serial.send('markpage 40 VMEMLAB-PAE &\n');
    const m = await serial.waitLine(/MARK va=0x([0-9a-f]+) pid=(\d+) text=/, 15_000, from);
    markVa = parseInt(m[1], 16);
    const marker = `VMEMLAB-PAE pid=${m[2]}`;
    const cpu = emu.v86.cpu;
    let snap: PaeSnapshot | null = null, pa = 0;
    for (let tries = 0; tries < 200 && !snap; tries++) {
      await sleep(20);
      const regs = readRegs(cpu);
      expect(regs.paging).toBe('pae');
      const s = snapshotPae(cpu.mem8, regs);
      const a = engine.run(buildScenarioPae(s, [markVa])).accesses[0];
      if (a.outcome !== 'ok') continue;
      pa = Number(a.hpa);
      if (new TextDecoder().decode(cpu.mem8.subarray(pa, pa + marker.length)) === marker) snap = s;
    }
    expect(snap, 'never sampled the marked process').not.toBeNull();
    // Intel: the four PDPTEs are registers, loaded at mov cr3 (2 x 5 + 4 = 14 references);
    // AMD: the PDPTE is read through the nested walk on every walk (3 x 5 + 4 = 19)
    const e = engine.run(buildScenarioPae(snap!, [markVa], { mode: 'ept' })).accesses[0];
    expect(e.outcome).toBe('ok');
    expect(Number(e.gpa)).toBe(pa);
    expect(e.steps.some((st) => st.kind === 'pdpte')).toBe(true);
    expect(e.steps.filter((st) => st.ref).length).toBe(14);
    const r = engine.run(buildScenarioPae(snap!, [markVa], { mode: 'npt' }));
    expect(r.accesses[0].outcome).toBe('ok');
    expect(Number(r.accesses[0].gpa)).toBe(pa);
    expect(r.accesses[0].steps.some((st) => st.kind === 'pdpte')).toBe(false);
    const nref = r.accesses[0].steps.filter((st) => st.ref);
    expect(nref.length).toBe(19);
    expect(nref.some((st) => st.entry !== undefined && BigInt(st.entry) === snap!.pdpt[markVa >>> 30])).toBe(true);
    // natively, the directory and table entries are read where the guest's MMU reads them
    const n = engine.run(buildScenarioPae(snap!, [markVa])).accesses[0].steps.filter((st) => st.ref);
    const pdpte = snap!.pdpt[markVa >>> 30];
    const pdAddr = Number(pdpte & 0x000ffffffffff000n);
    const pde = snap!.pds.get(markVa >>> 30)![(markVa >>> 21) & 511];
    expect(Number(n[0].entry_hpa)).toBe(pdAddr + 8 * ((markVa >>> 21) & 511));
    expect(BigInt(n[0].entry)).toBe(pde);
    expect(Number(n[1].entry_hpa)).toBe(Number(pde & 0x000ffffffffff000n) + 8 * ((markVa >>> 12) & 511));
  }, 30_000);

  it('agrees with v86\'s MMU on thousands of PAE addresses', async () => {
    const cpu = emu.v86.cpu;
    await (emu.stop() as Promise<void>);
    const s = snapshotPae(cpu.mem8, readRegs(cpu));
    const pages = mappedPagesPae(s);
    const vas = new Set<number>([markVa]);
    let seed = 777;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0), seed);
    for (const p of pages) { vas.add((p.gva + (rnd() % p.size)) >>> 0); vas.add((p.gva + p.size + 0x321) >>> 0); }
    for (let i = 0; i < 2000; i++) vas.add((rnd() & 0xfffffffc) >>> 0);
    const list = [...vas].filter((v) => v < 2 ** 32).slice(0, 8000);
    const engineAns = new Map<number, number | null>();
    for (const { scenario, gvas } of buildScenariosPae(s, list)) {
      const r = engine.run(scenario);
      gvas.forEach((g, i) => engineAns.set(g, r.accesses[i].outcome === 'ok' ? Number(r.accesses[i].hpa) : null));
    }
    const saved = CPU_FIELDS.map((f) => [f, (cpu as any)[f]?.slice?.()] as const).filter(([, v]) => v);
    const putBack = () => { for (const [f, v] of saved) (cpu as any)[f].set(v); };
    const mismatches: string[] = [];
    let mapped = 0, faults = 0;
    const quiet = { log: console.log, error: console.error, warn: console.warn };
    console.log = console.error = console.warn = () => {};
    try {
      for (const va of list) {
        let v: number | null;
        try { v = cpu.translate_address_system_read(va | 0) >>> 0; } catch { v = null; putBack(); }
        if (engineAns.get(va) !== v) mismatches.push(`${va.toString(16)}: engine ${engineAns.get(va)?.toString(16)} v86 ${v?.toString(16)}`);
        if (v === null) faults++; else mapped++;
      }
    } finally { Object.assign(console, quiet); }
    expect(mismatches.slice(0, 10)).toEqual([]);
    expect(mapped).toBeGreaterThan(1000);
    expect(faults).toBeGreaterThan(500);
    console.log(`PAE differential: ${list.length} addresses, ${mapped} mapped, ${faults} faults, ${pages.filter((p) => p.user).length} user pages, ${tablePagesPae(s).total} table pages`);
  }, 40_000);
});
