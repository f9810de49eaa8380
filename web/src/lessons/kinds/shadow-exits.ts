import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, pick, PAGE, evRead, evWrite, lastIsAccess, type ExerciseSpec, type Exercise, type Ev } from '../shape';

/** Shadow paging: which events exit (hidden page faults, guest page-table writes, mov cr3
 * outside the CR3-target values) and what a shadow walk costs. The guest maps three pages;
 * its page-table writes change a bit the MMU ignores (bit 9), so only the resync is taught. */
export function shadowExits(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const variant = pick(r, ['exits', 'refs'] as const);
  const spaces = pick(r, [2, 3]);
  const targets = pick(r, [0, 1, 2]);
  const n = 5 + Math.floor(r() * 3);
  const evs: Ev[] = [];
  let cur = 0;
  for (let i = 0; i < n; i++) {
    const k = r();
    const gva = PAGE(0x400000n, Math.floor(r() * 3));
    if (k < 0.42) evs.push(evRead(gva));
    else if (k < 0.6) evs.push(evWrite(gva));
    else if (k < 0.78) {
      const set = r() < 0.5;
      evs.push({ access: { pte_write: { gva, level: 1, ...(set ? { set: '0x200' } : { clear: '0x200' }) } }, words: msg('ev.pteWrite', { gva }) });
    } else {
      const to = (cur + 1 + Math.floor(r() * (spaces - 1))) % spaces;
      cur = to;
      evs.push({ access: { mov_cr3: to }, words: msg('ev.movCr3', { n: to }) });
    }
  }
  if (variant === 'refs' && !lastIsAccess(evs)) evs.push(evRead(PAGE(0x400000n, Math.floor(r() * 3))));
  const s = {
    name: `exercise-shadow-${seed}`, mode: 'shadow',
    guest: { paging: '4level', address_spaces: spaces, mappings: [{ gva: '0x400000', gpa: '0x200000', pages: 3 }] },
    shadow: { mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }], cr3_targets: targets },
    accesses: evs.map((e) => e.access),
  } as Scenario;
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', unit: variant }, walkAccess: evs.length - 1,
    prompt: msg(`shadowExits.${variant}`, {
      setup: msg('shadowExits.setup', { spaces, targets: targets ? msg('shadowExits.targets', { targets }) : msg('shadowExits.noTargets') }),
      events: evs.map((e) => e.words),
    }),
    nudge: msg('shadowExits.nudge'), hint: msg(variant === 'exits' ? 'shadowExits.hint' : 'shadowExits.hintRefs'),
    expected: ([res]) => String(variant === 'exits'
      ? res.accesses.reduce((c, a) => c + a.exits, 0)
      : res.accesses[res.accesses.length - 1].memory_refs),
  };
}
