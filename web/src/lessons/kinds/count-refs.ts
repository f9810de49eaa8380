import type { Scenario } from '../../../../wasm-core/js/vmsim';
import { msg, hex, digits, type ExerciseSpec, type Exercise } from '../shape';

export function countRefs(spec: ExerciseSpec, seed: number): Exercise {
  const mode = spec.mode ?? 'ept';
  const nested = mode === 'ept' || mode === 'npt';
  // guest levels, guest page, reads, and under EPT/NPT the nested levels and page
  const [gl, gp, k, nl, np] = digits(seed, [2, 3, 4, nested ? 2 : 1, nested ? 2 : 1]);
  const glevels = [4, 5][gl];
  const guestPage = (['4K', '2M', '1G'] as const)[gp];
  const reads = k + 1;
  const nestedPage = nested ? (['4K', '2M'] as const)[np] : '4K';
  const levels = (nested ? [4, 5][nl] : 4) as 4 | 5;
  const gpa = guestPage === '1G' ? 0x40000000n : 0x200000n;
  const s: Scenario = {
    name: `exercise-count-refs-${seed}`,
    mode: mode as Scenario['mode'],
    guest: { paging: glevels === 5 ? '5level' : '4level', mappings: [{ gva: '0x40000000', gpa: hex(gpa), page: guestPage }] },
    accesses: Array.from({ length: reads }, () => ({ gva: '0x40000123', op: 'read' as const })),
  } as Scenario;
  if (nested) {
    s.nested = {
      levels,
      mappings: nestedPage === '2M'
        ? [{ gpa: '0x0', hpa: '0x80000000', page: '2M', pages: 1024 }]
        : [{ gpa: '0x0', hpa: '0x80000000', pages: 512 }, { gpa: hex(gpa), hpa: '0x100000000', pages: 1 }],
    };
  } else if (mode === 'flat') {
    // guest RAM up to 2 GiB, so that a 1 GiB page at gpa 1 GiB is inside it
    (s as unknown as { flat: object }).flat = { guest_ram: '0x80000000', prefill: true,
      mappings: [{ gpa: '0x0', hpa: '0x40000000', pages: 512 }, { gpa: hex(gpa), hpa: '0x100000000', pages: guestPage === '4K' ? 1 : 512 }] };
  }
  // sizes as the walk view writes them, in binary units ("2 MiB", not "2M")
  const size = { '4K': '4 KiB', '2M': '2 MiB', '1G': '1 GiB' } as const;
  const page = size[guestPage];
  const desc = mode === 'native' ? msg('countRefs.native', { page, glevels })
    : mode === 'flat' ? msg('countRefs.flat', { page, glevels })
    : msg('countRefs.nested', { page, glevels, levels, mode: mode.toUpperCase(), nestedPage: size[nestedPage] });
  return {
    spec, seed, scenarios: [s], input: { type: 'number', unit: 'refs' },
    prompt: msg('countRefs.prompt', { desc, reads: msg('countRefs.reads', { count: reads }) }),
    nudge: msg('countRefs.nudge'),
    hint: msg(mode === 'native' ? 'countRefs.hintNative' : mode === 'flat' ? 'countRefs.hintFlat' : 'countRefs.hint'),
    expected: ([res]) => String(res.accesses.reduce((c, a) => c + a.memory_refs, 0)),
  };
}
