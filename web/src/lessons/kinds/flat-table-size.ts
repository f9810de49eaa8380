import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, hex, digits, type ExerciseSpec, type Exercise } from '../shape';

export function flatTableSize(spec: ExerciseSpec, seed: number): Exercise {
  const [g, k] = digits(seed, [10, 2]);
  const gib = [1, 2, 3, 4, 5, 6, 8, 10, 12, 16][g];
  const sunway = k === 1;
  const s = {
    name: `exercise-flat-${seed}`, mode: 'flat',
    guest: { paging: sunway ? 'sunway' : '4level', mappings: [{ gva: '0x400000', gpa: '0x200000', page: sunway ? '8K' : '4K' }] },
    flat: { guest_ram: hex(BigInt(gib) << 30n), mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }] },
    accesses: [],
  } as unknown as Scenario;
  return {
    spec, seed, scenarios: [s], input: { type: 'number', unit: 'MiB' },
    prompt: msg('flatTableSize.prompt', { gib, guest: msg(sunway ? 'flatTableSize.sunway' : 'flatTableSize.x86') }),
    nudge: msg('flatTableSize.nudge'), hint: msg('flatTableSize.hint'),
    expected: ([res]) => String((res.flat_table_bytes ?? 0) / (1 << 20)),
  };
}
