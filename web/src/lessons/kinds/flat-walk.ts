import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, digits, evRead, type ExerciseSpec, type Exercise, type Ev } from '../shape';

/** Flat nested tables: the references and exits of a walk through a lazily filled flat
 * table, and which fault a bad address gives (a guest #PF or a flat-table miss that the
 * VMM cannot fill). */
export function flatWalk(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  // c: the outcome question's target, or for the others how the last read stands to the
  // ones before it (the first read of all, a page not read yet, a page read before)
  const [v, sw, c] = digits(seed, [3, 2, 3]);
  const variant = (['refs', 'exits', 'outcome'] as const)[v];
  const sunway = sw === 1;
  const page = sunway ? 8192n : 4096n;
  const at = (base: bigint, i: number) => hex(base + BigInt(i) * page);
  const guestPage = sunway ? { page: '8K' as const } : {};
  const paging = sunway ? 'sunway' : '4level';
  if (variant === 'outcome') {
    const target = (['inside', 'outside', 'unmapped'] as const)[c];
    const page = target === 'inside' ? at(0x400000n, Math.floor(r() * 2)) : target === 'outside' ? at(0x600000n, Math.floor(r() * 2)) : at(0x800000n, Math.floor(r() * 4));
    const gva = hex(BigInt(page) + BigInt(Math.floor(r() * 256)) * 16n);
    const s = {
      name: `exercise-flat-outcome-${seed}`, mode: 'flat',
      guest: { paging, mappings: [{ gva: '0x400000', gpa: '0x200000', pages: 2, ...guestPage }, { gva: '0x600000', gpa: '0x3000000', pages: 2, ...guestPage }] },
      flat: { guest_ram: '0x40000000', prefill: true, mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: sunway ? 512 : 1024 }] },
      accesses: [{ gva, op: 'read' }],
    } as Scenario;
    return {
      spec, seed, variant, scenarios: [s], input: { type: 'choice', choices: ['ok', 'guest_page_fault', 'flat_fault'] },
      prompt: msg('flatWalk.outcome', { guest: msg(sunway ? 'flatWalk.sunway' : 'flatWalk.x86'), gva }),
      nudge: msg('flatWalk.nudgeOutcome'), hint: msg('flatWalk.hintOutcome'),
      expected: ([res]) => res.accesses[0].outcome,
    };
  }
  const end = (['first', 'fresh', 'again'] as const)[c];
  const evs: Ev[] = [];
  const read = new Set<number>();
  const before = end === 'first' ? 0 : 1 + Math.floor(r() * 3);
  for (let i = 0; i < before; i++) {
    // one of the four pages is kept back for a fresh last read
    const p = Math.floor(r() * 3);
    read.add(p);
    evs.push(evRead(at(0x400000n, p)));
  }
  const last = end === 'fresh' ? 3 : end === 'again' ? [...read][Math.floor(r() * read.size)] : Math.floor(r() * 4);
  evs.push(evRead(at(0x400000n, last)));
  const s = {
    name: `exercise-flat-walk-${seed}`, mode: 'flat',
    guest: { paging, mappings: [{ gva: '0x400000', gpa: '0x200000', pages: 4, ...guestPage }] },
    flat: { guest_ram: '0x40000000', mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: sunway ? 512 : 1024 }] },
    accesses: evs.map((e) => e.access),
  } as Scenario;
  return {
    spec, seed, variant, scenarios: [s], input: { type: 'number', unit: variant }, walkAccess: evs.length - 1,
    prompt: msg(`flatWalk.${variant}`, { guest: msg(sunway ? 'flatWalk.sunway' : 'flatWalk.x86'), events: evs.map((e) => e.words) }),
    nudge: msg('flatWalk.nudge'), hint: msg('flatWalk.hint'),
    expected: ([res]) => {
      const last = res.accesses[res.accesses.length - 1];
      return String(variant === 'refs' ? last.memory_refs : last.exits);
    },
  };
}
