import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, page4k, nestedFor, type ExerciseSpec, type Exercise } from '../shape';

export function computeHpa(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const mode = spec.mode ?? 'ept';
  const gva = page4k(r, 0x400000, 0x40000000);
  const gpa = page4k(r, 0x200000, 0x3000000);
  const hpa = page4k(r, 0x80000000, 0xf0000000);
  const off = BigInt(Math.floor(r() * 4096));
  const s: Scenario = {
    name: `exercise-compute-hpa-${seed}`,
    mode: mode as Scenario['mode'],
    guest: { paging: '4level', mappings: [{ gva: hex(gva), gpa: hex(gpa) }] },
    ...(nestedFor(mode, [{ gpa: hex(gpa), hpa: mode === 'native' ? hex(gpa) : hex(hpa) }]) as object),
    accesses: [{ gva: hex(gva + off), op: 'read' }],
  } as Scenario;
  return {
    spec, seed, scenarios: [s], input: { type: 'hex' },
    prompt: mode === 'native'
      ? msg('computeHpa.native', { gva: hex(gva), gpa: hex(gpa), addr: hex(gva + off) })
      : msg('computeHpa.nested', { gva: hex(gva), gpa: hex(gpa), hpa: hex(hpa), addr: hex(gva + off) }),
    nudge: msg('computeHpa.nudge'), hint: msg('computeHpa.hint'),
    expected: ([res]) => res.accesses[0].hpa ?? res.accesses[0].outcome,
  };
}
