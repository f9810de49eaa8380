import type { Scenario, Step } from '../../../../wasm-core/js/vmsim';
import { msg, rng, hex, page4k, digits, type ExerciseSpec, type Exercise } from '../shape';

/** The table a memory reference of a walk reads, as a grid cell says it: a guest level
 * (g4 is the guest's top table of four), a nested level (n4), or in agile paging a shadow
 * level (s4). */
export function tableOf(step: Step, mode: string): string {
  if (step.dim === 'guest') return `g${step.level}`;
  // agile paging's shadow-table reads are nested-dimension steps with no gpa to translate
  return `${mode === 'agile' && step.gpa === null ? 's' : 'n'}${step.level}`;
}

/** The 2-D walk filled in by hand: for each memory reference of one walk (24 for a 4-level
 * guest on a 4-level EPT), which table it reads, and at two chosen references an address
 * (the gpa a nested reference translates; the hpa at which a guest entry is read). The
 * answer is the grid as text, "n4 n3 ... g1 ... | 0x... 0x...", graded cell by cell
 * (exercises.ts gridScore), so a grid right but for one cell earns its share. Under
 * agile paging the walk is a warm one, switched at a level the prompt gives. */
export function walkGrid(spec: ExerciseSpec, seed: number): Exercise {
  const r = rng(seed);
  const mode = spec.mode === 'npt' ? 'npt' : spec.mode === 'agile' ? 'agile' : 'ept';
  const [gl, nl, sl] = digits(seed, [2, 2, mode === 'agile' ? 3 : 1]);
  const guest = [4, 5][gl];
  const nested = [4, 5][nl];
  const sw = 1 + sl;   // agile: switched at guest level 1, 2 or 3 (the levels above it shadow)
  const page = page4k(r, 0x400000, 0x40000000);
  const gva = page + BigInt(Math.floor(r() * 256)) * 16n;
  const gpa = page4k(r, 0x200000, 0x1000000);
  const s = {
    name: `exercise-grid-${seed}`, mode,
    guest: { paging: guest === 5 ? '5level' : '4level', mappings: [{ gva: hex(page), gpa: hex(gpa) }] },
    nested: { levels: nested, mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 4096 }] },
    ...(mode === 'agile' ? { agile: { switch_level: sw } } : {}),
    // agile: the first read fills the shadow part (an exit); the second is the warm walk asked for
    accesses: mode === 'agile' ? [{ gva: hex(gva), op: 'read' }, { gva: hex(gva), op: 'read' }] : [{ gva: hex(gva), op: 'read' }],
  } as Scenario;
  // the two address cells: a nested reference's gpa and a guest reference's hpa, picked
  // among the walk's references by position (the same for every walk of this shape)
  const refs = guest * (nested + 1) + nested - (mode === 'agile' ? (guest - sw) * nested : 0);
  const rows = mode === 'agile' ? sw : guest;
  const row = Math.floor(r() * rows);                   // a guest level's row of the 2-D part
  const top = mode === 'agile' ? guest - sw : 0;        // shadow references before it
  const nestedRef = top + row * (nested + 1) + 1 + Math.floor(r() * nested);
  const guestRef = top + (Math.floor(r() * rows) + 1) * (nested + 1);
  const cells = { refs, addresses: [{ ref: nestedRef, what: 'gpa' as const }, { ref: guestRef, what: 'hpa' as const }] };
  const options = [
    ...(mode === 'agile' ? Array.from({ length: guest }, (_, i) => `s${guest - i}`) : []),
    ...Array.from({ length: guest }, (_, i) => `g${guest - i}`),
    ...Array.from({ length: nested }, (_, i) => `n${nested - i}`),
  ];
  return {
    spec, seed, variant: mode, scenarios: [s], walkAccess: mode === 'agile' ? 1 : 0,
    input: { type: 'grid', refs, options, addresses: cells.addresses },
    prompt: msg(`walkGrid.prompt.${mode}`, {
      guest, nested, gva: hex(gva), page: hex(page), gpa: hex(gpa), sw, refs, nestedRef, guestRef,
    }),
    nudge: msg(mode === 'agile' ? 'walkGrid.nudgeAgile' : 'walkGrid.nudge'),
    hint: msg(mode === 'agile' ? 'walkGrid.hintAgile' : 'walkGrid.hint'),
    expected: (results) => {
      const a = results[0].accesses[mode === 'agile' ? 1 : 0];
      const steps = a.steps.filter((x) => x.ref !== null);
      const at = (k: number) => steps[k - 1];
      return `${steps.map((x) => tableOf(x, mode)).join(' ')} | ${at(nestedRef)?.gpa ?? '?'} ${at(guestRef)?.entry_hpa ?? '?'}`;
    },
  };
}
