import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, page4k, digits, type ExerciseSpec, type Exercise } from '../shape';

const OUTCOMES = ['ok', 'guest_page_fault', 'ept_violation', 'ept_misconfig', 'npt_fault'];

export function predictExit(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const mode = spec.mode === 'npt' ? 'npt' : 'ept';
  const [variant, o] = digits(seed, [4, 3]);
  const op = (['read', 'write', 'fetch'] as const)[o];
  // the data page: a gva page above 4 MiB, a gpa page in 2-4 MiB (the guest's tables sit below)
  const page = page4k(r, 0x400000, 0x800000);
  const gpa = page4k(r, 0x200000, 0x400000);
  const gva = hex((variant === 0 ? page + 0x1000n : page) + BigInt(Math.floor(r() * 256)) * 16n);
  const s: Scenario = {
    name: `exercise-predict-${seed}`, mode,
    guest: { paging: '4level', mappings: [{ gva: hex(page), gpa: hex(gpa) }] },
    nested: { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }], overrides: [] },
    accesses: [{ gva, op }],
  };
  const what = msg(['predictExit.unmapped', 'predictExit.notPresent', 'predictExit.readOnly',
    mode === 'ept' ? 'predictExit.writeNoRead' : 'predictExit.unchanged'][variant], { mode: mode.toUpperCase(), gpa: hex(gpa) });
  const ovr = s.nested!.overrides!;
  if (variant === 1) ovr.push({ gpa: hex(gpa), level: 1, clear: mode === 'ept' ? '0x7' : '0x1' });
  if (variant === 2) ovr.push({ gpa: hex(gpa), level: 1, clear: '0x2' });
  if (variant === 3 && mode === 'ept') ovr.push({ gpa: hex(gpa), level: 1, clear: '0x1' });
  return {
    spec, seed, scenarios: [s],
    input: { type: 'choice', choices: mode === 'ept' ? OUTCOMES.slice(0, 4) : ['ok', 'guest_page_fault', 'npt_fault'] },
    prompt: msg('predictExit.prompt', { page: hex(page), gpa: hex(gpa), what, op: msg(`op.${op}`), gva }),
    nudge: msg('predictExit.nudge'), hint: msg('predictExit.hint'),
    expected: ([res]) => res.accesses[0].outcome,
  };
}
