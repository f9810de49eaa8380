import type { Scenario, Result } from '../../../../wasm-core/js/vmsim';
import { msg, rng, pick, digits, evRead, type ExerciseSpec, type Exercise, type Ev } from '../shape';

/* VMFUNC answers as choices: a switch, the three reasons of exit 59, #UD. */
const VMFUNC_CHOICES = ['switched', 'exit59_range', 'exit59_invalid', 'exit59_function', 'ud'];
const VMFUNC_REASON: Record<string, string> = { index_out_of_range: 'exit59_range', invalid_eptp: 'exit59_invalid', function_disabled: 'exit59_function' };
function vmfuncChoice(a: Result['accesses'][number]): string {
  if (a.outcome === 'ok') return 'switched';
  if (a.outcome === 'invalid_opcode') return 'ud';
  return VMFUNC_REASON[(a.fault as { reason: string } | null)?.reason ?? ''] ?? a.outcome;
}

/** VMFUNC and EPTP switching: the EPTP index after a sequence of switches (failed ones
 * leave it unchanged), which accesses exit (the object is mapped only in the gate's
 * EPT), and what one VMFUNC does (switch, exit 59 for one of three reasons, #UD). */
export function vmfuncSwitch(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const variant = (['index', 'exits', 'outcome'] as const)[digits(seed, [3, 3])[0]];
  const base = (enabled: boolean, accesses: Scenario['accesses']): Scenario => ({
    name: `exercise-vmfunc-${seed}`, mode: 'ept',
    guest: { paging: '4level', mappings: [{ gva: '0x400000', gpa: '0x200000' }, { gva: '0x500000', gpa: '0x300000' }] },
    nested: {
      mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 768 }],
      ...(enabled ? {
        vmfunc: true,
        eptp_list: [{ mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 769 }] }, { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 768 }] }],
      } : {}),
    },
    accesses,
  });
  const setup = msg('vmfuncSwitch.setup');
  const vmf = (n: number): Ev => ({ access: { vmfunc: n }, words: msg('ev.vmfunc', { n }) });
  const indices = [0, 1, 2, 3, 5, 7, 100, 511, 512, 600, 4095];
  if (variant === 'outcome') {
    const enabled = r() < 0.8;
    const fn = r() < 0.2 ? 1 : 0;
    const n = pick(r, indices);
    const s = base(enabled, [{ vmfunc: n, ...(fn ? { function: fn } : {}) }]);
    return {
      spec, seed, variant, scenarios: [s], input: { type: 'choice', choices: VMFUNC_CHOICES },
      prompt: msg('vmfuncSwitch.outcome', { setup, enabled: msg(enabled ? 'vmfuncSwitch.enabled' : 'vmfuncSwitch.disabled'), fn, n }),
      nudge: msg('vmfuncSwitch.nudge'), hint: msg('vmfuncSwitch.hintOutcome'),
      expected: ([res]) => vmfuncChoice(res.accesses[0]),
    };
  }
  const evs: Ev[] = [];
  const n = 4 + Math.floor(r() * 3);
  if (variant === 'index') {
    // the entry the guest ends on, chosen first (0, 1 or 2 alike): its VMFUNC is the last
    // valid one, and the failed switches after it leave the index where it is
    const target = digits(seed, [3, 3])[1];
    const invalid = indices.filter((i) => i > 2);
    const tail = Math.floor(r() * 3);
    for (let i = 0; i < n - 1 - tail; i++) evs.push(vmf(pick(r, indices)));
    evs.push(vmf(target));
    for (let i = 0; i < tail; i++) evs.push(vmf(pick(r, invalid)));
  } else {
    for (let i = 0; i < n; i++) {
      if (r() < 0.5) evs.push(evRead(r() < 0.7 ? '0x500000' : '0x400000'));
      else evs.push(vmf(pick(r, indices)));
    }
  }
  const s = base(true, evs.map((e) => e.access));
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', ...(variant === 'exits' ? { unit: 'exits' as const } : {}) }, walkAccess: evs.length - 1,
    prompt: msg(`vmfuncSwitch.${variant}`, { setup, events: evs.map((e) => e.words) }),
    nudge: msg('vmfuncSwitch.nudge'), hint: msg(variant === 'exits' ? 'vmfuncSwitch.hintExits' : 'vmfuncSwitch.hint'),
    expected: ([res]) => String(variant === 'index'
      ? res.accesses[res.accesses.length - 1].eptp_index
      : res.accesses.reduce((c, a) => c + a.exits, 0)),
  };
}
