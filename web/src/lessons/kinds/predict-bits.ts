import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, digits, type ExerciseSpec, type Exercise } from '../shape';

/* The exit information itself: an EPT violation's qualification or an #NPF's EXITINFO1,
 * for a read or write that the nested table refuses, at the data page or at one of the
 * guest's page-table pages. */
export function predictBits(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const mode = spec.mode === 'npt' ? 'npt' : 'ept';
  const perms = mode === 'ept' ? ['0x7', '0x2', '0x6', '0x4'] as const : ['0x1', '0x2', '0x4'] as const;
  const [o, t, p] = digits(seed, [3, 2, perms.length]);
  const op = (['read', 'write', 'fetch'] as const)[o];
  const onTable = t === 1;
  const perm = perms[p];
  const gva = hex(0x400000n + BigInt(1 + Math.floor(r() * 255)) * 16n);
  const s: Scenario = {
    name: `exercise-bits-${seed}`, mode,
    guest: { paging: '4level', mappings: [{ gva: '0x400000', gpa: '0x200000' }] },
    nested: {
      mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }],
      overrides: [onTable
        ? { guest_table: { gva: '0x400000', level: 1 }, level: 1, clear: perm }
        : { gpa: '0x200000', level: 1, clear: perm }],
    },
    accesses: [{ gva, op }],
  };

  return {
    spec, seed, scenarios: [s], input: { type: 'hex' },
    prompt: msg(`predictBits.${mode}`, {
      target: msg(onTable ? 'predictBits.onTable' : 'predictBits.onData'),
      cleared: msg(`predictBits.cleared.${mode}.${perm}`),
      op: msg(`op.${op}`), gva,
    }),
    nudge: msg('predictBits.nudge'), hint: msg(`predictBits.hint.${mode}`),
    expected: ([res]) => {
      const f = res.accesses[0].fault as Record<string, string> | null;
      return f?.qualification ?? f?.exitinfo1 ?? '0x0';
    },
  };
}
