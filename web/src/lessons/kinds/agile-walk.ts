import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, pick, page4k, digits, type ExerciseSpec, type Exercise } from '../shape';

/** Agile paging (model.md 1, "Agile paging"): the references of a warm walk switched at
 * level S (a 4- or 5-level guest on a 4- or 5-level EPT), or whether a guest page-table
 * write at level L exits once the VMM has walked the page's tables. */
const AGILE_CHOICES = ['exit', 'noExit'];
export function agileWalk(spec: ExerciseSpec, seed: number): Exercise {
  const variant = (['refs', 'write'] as const)[digits(seed, [2])[0]];
  const r = rng(seed);
  const guest = pick(r, [4, 5] as const);
  const nested = variant === 'refs' ? pick(r, [4, 5] as const) : 4;
  const sw = Math.floor(r() * (guest + 1));
  const level = 1 + Math.floor(r() * guest);
  const gva = hex(page4k(r, 0x400000, 0x40000000));
  const read = { gva, op: 'read' as const };
  const s: Scenario = {
    name: `exercise-agile-${seed}`, mode: 'agile',
    guest: { paging: guest === 5 ? '5level' : '4level', mappings: [{ gva, gpa: '0x200000' }] },
    nested: { levels: nested, mappings: [{ gpa: '0x0', hpa: '0x40000000', pages: 1024 }] },
    agile: { switch_level: sw },
    accesses: variant === 'refs' ? [read, read] : [read, { pte_write: { gva, level } }],
  } as Scenario;
  const setup = msg('agileWalk.setup', {
    guest, nested, gva, switch: sw === 0 ? msg('agileWalk.never') : sw === guest ? msg('agileWalk.root', { level: sw }) : msg('agileWalk.at', { level: sw }),
  });
  return {
    spec, seed, variant, scenarios: [s], walkAccess: variant === 'refs' ? 1 : 0,
    input: variant === 'refs' ? { type: 'number', unit: 'refs' } : { type: 'choice', choices: AGILE_CHOICES },
    prompt: msg(`agileWalk.${variant}`, { setup, gva, level }),
    nudge: msg(`agileWalk.nudge${variant === 'refs' ? 'Refs' : 'Write'}`),
    hint: msg(`agileWalk.hint${variant === 'refs' ? 'Refs' : 'Write'}`),
    expected: ([res]) => variant === 'refs' ? String(res.accesses[1].memory_refs) : res.accesses[1].exits > 0 ? 'exit' : 'noExit',
  };
}
