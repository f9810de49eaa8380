/* "Your machine": a hw-lab result's costs, and the replay's counts priced with them. */
import { describe, expect, it } from 'vitest';
import type { ReplayReport } from '../../../wasm-core/js/replay';
import result from '../../../tests/server/fixtures/result-quick.json';
import fixtures from './explain.fixtures.json';
import { machineFromResult, overheadOn, type HwResult } from './machine';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const reports = fixtures as unknown as Record<'2m' | '4k' | 'sw' | 'od', ReplayReport>;

describe('machineFromResult', () => {
  it('takes the exit from cpuid in a VM and a reference from the pointer chase', () => {
    const m = machineFromResult(result as unknown as HwResult);
    const cpuid = (result as unknown as HwResult).benchmarks!.find((b) => b.name === 'cpuid_exit')!.cases!;
    const min = (n: string) => cpuid.find((c) => c.name === n)!.metrics![0].min!;
    expect(m.inVm).toBe(true);
    expect(m.exit).toBe(min('cpuid_leaf0') - min('timer_overhead'));
    expect(m.exitFrom).toContain('cpuid_leaf0');
    const chase = (result as unknown as HwResult).benchmarks!.find((b) => b.name === 'ptrchase')!.cases!;
    const med = (n: string) => chase.find((c) => c.name === n)!.metrics![0].median!;
    expect(m.ref).toBeCloseTo(med('4k_64MiB') - med('thp_64MiB'), 1);
    expect(m.basePage).toBe(4096);
    expect(m.hugePage).toBe(2097152);
  });
  it('measures no exit on bare metal', () => {
    const bare = JSON.parse(JSON.stringify(result));
    bare.probe.virtualization.in_vm = false;
    const m = machineFromResult(bare);
    expect(m.exit).toBeNull();
    expect(m.ref).not.toBeNull();
  });
  it('refuses a file that is not a result', () => {
    expect(() => machineFromResult({} as HwResult)).toThrow(/not a hw-lab result/);
  });
});

describe('overheadOn', () => {
  it('with the report\'s own costs gives the report\'s overheads', () => {
    for (const r of Object.values(reports)) {
      const own = overheadOn(r, { exit: null, ref: null, exitFrom: null, refFrom: null, cpu: '', inVm: false, basePage: null, hugePage: null, thp: null });
      for (const x of r.modes) expect(own[x.mode]).toBeCloseTo(x.overhead_pct ?? 0, 2);
    }
  });
  it('prices exits and references with the machine\'s costs', () => {
    const r = reports.od;      // tables filled on demand: shadow paging exits on each first touch
    const m = { exit: 3400, ref: 80, exitFrom: '', refFrom: '', cpu: '', inVm: true, basePage: 4096, hugePage: null, thp: null };
    const o = overheadOn(r, m);
    const n = r.modes.find((x) => x.mode === 'native')!, s = r.modes.find((x) => x.mode === 'shadow')!;
    const cyc = (x: typeof n) => x.accesses * 10 + x.refs * 80 + x.exits * 3400;
    expect(o.shadow).toBeCloseTo((100 * (cyc(s) - cyc(n))) / cyc(n), 6);
    expect(o.shadow).toBeGreaterThan(s.overhead_pct!);
  });
});

/* The CLI's --machine (wasm-core/cli/machine.c) is a second implementation of the same
 * rules: on the same result both take the same exit and the same reference. */
describe('vmsim replay --machine agrees with the page', () => {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
  const trace = join(root, 'hw-lab', 'build', 'traces', 'pointer-chase.vmtrace');
  it.skipIf(!existsSync(trace))('takes the same costs from the same result', () => {
    const file = join(root, 'tests', 'server', 'fixtures', 'result-quick.json');
    const out = JSON.parse(execFileSync(join(root, 'wasm-core', 'build', 'vmsim'), ['replay', trace, '--quiet', '--format', 'json', '--machine', file], { encoding: 'utf8' }));
    const m = machineFromResult(result as unknown as HwResult);
    expect(out.your_machine.cycles_per_exit).toBe(m.exit);
    expect(out.your_machine.cycles_per_ref).toBe(m.ref);
    const page = overheadOn(out, m);
    for (const x of out.modes) expect(x.overhead_pct_machine).toBeCloseTo(page[x.mode], 3);
  });
});

