/* The walk laid out as a grid: for 2-D modes guest levels plus the final gpa down and
 * nested levels across (the classic 24-cell picture); for 1-D modes one column per table
 * that the walk reads (guest tables natively; shadow table plus the VMM's software walk
 * of the guest tables under shadow paging). Agile paging is the 2-D grid with the shadow
 * table's and the VMM walk's columns first: shadow cells on the rows above the switch,
 * the 2-D cells on the rows below it. Steps with no cell (exits, TLB hits, VMFUNC
 * list reads) still appear in the step list. */
import type { AccessResult, Result, Step } from '../../../wasm-core/js/types';
import { guestLevels, levelName, nestedLevels } from './decode';
import { tEn, type T } from '../i18n';

export interface GridRow { key: number; label: string }
export interface GridCol { key: string; label: string }
export interface GridModel {
  kind: '2d' | '1d';
  rows: GridRow[];
  cols: GridCol[];
  /** cell key -> step numbers (n) that land there, in order. */
  cells: Map<string, number[]>;
  /** step index (n - 1) -> cell key, or null. */
  stepCell: (string | null)[];
}

export const key = (row: number, col: string) => `${row}:${col}`;

function colOf(step: Step, mode: string): { row: number; col: string } | null {
  if (step.kind === 'vmexit' || step.kind === 'eptp_list' || step.kind === 'tlb_hit') return null;
  if (mode === 'ept' || mode === 'npt' || mode === 'flat') {
    if (step.dim === 'guest') return { row: step.level, col: 'G' };
    return { row: step.stage, col: mode === 'flat' ? 'F' : `N${step.level}` };
  }
  if (mode === 'shadow') return { row: step.level, col: step.dim === 'nested' ? 'S' : 'V' };
  if (mode === 'agile') {
    // the shadow part (and the VMM's fills and software walk) in its own columns, on the
    // rows of the levels it covers; the 2-D part below the switch as in ept
    if (step.kind === 'vmm_read') return { row: step.level, col: 'V' };
    if (step.dim === 'nested' && !step.gpa) return { row: step.level, col: 'S' };
    if (step.dim === 'guest') return { row: step.level, col: 'G' };
    return { row: step.stage, col: `N${step.level}` };
  }
  return { row: step.level, col: 'G' };
}

export function gridModel(result: Pick<Result, 'mode' | 'guest_paging' | 'nested_levels'>, access: AccessResult, t: T = tEn): GridModel {
  const mode = result.mode;
  const paging = result.guest_paging;
  const glevels = guestLevels(paging);
  let rows: GridRow[];
  let cols: GridCol[];
  let kind: '2d' | '1d' = '1d';
  if (mode === 'ept' || mode === 'npt' || mode === 'flat') {
    kind = '2d';
    rows = [...glevels.map((l) => ({ key: l, label: `gL${l} ${levelName(paging, l)}` })), { key: 0, label: t('walk.row.final') }];
    const nl = nestedLevels(result);
    cols = [
      ...(mode === 'flat' ? [{ key: 'F', label: t('walk.col.flat') }] : nl.map((l) => ({ key: `N${l}`, label: `nL${l}` }))),
      { key: 'G', label: t('walk.col.guestEntry') },
    ];
  } else if (mode === 'agile') {
    kind = '2d';
    rows = [...glevels.map((l) => ({ key: l, label: `gL${l} ${levelName(paging, l)}` })), { key: 0, label: t('walk.row.final') }];
    cols = [
      { key: 'S', label: t('walk.col.shadow') }, { key: 'V', label: t('walk.col.vmmWalk') },
      ...nestedLevels(result).map((l) => ({ key: `N${l}`, label: `nL${l}` })),
      { key: 'G', label: t('walk.col.guestEntry') },
    ];
  } else if (mode === 'shadow') {
    const shadowLevels = [...new Set(access.steps.filter((s) => s.dim === 'nested').map((s) => s.level))];
    const levels = [...new Set([...glevels, ...shadowLevels])].sort((a, b) => b - a);
    rows = levels.map((l) => ({ key: l, label: `L${l} ${levelName(paging, l)}` }));
    cols = [{ key: 'S', label: t('walk.col.shadow') }, { key: 'V', label: t('walk.col.vmmWalk') }];
  } else {
    rows = glevels.map((l) => ({ key: l, label: `L${l} ${levelName(paging, l)}` }));
    cols = [{ key: 'G', label: t('walk.col.guest') }];
  }
  const cells = new Map<string, number[]>();
  const stepCell: (string | null)[] = [];
  for (const s of access.steps) {
    const c = colOf(s, mode);
    const k = c ? key(c.row, c.col) : null;
    stepCell.push(k);
    if (k) {
      if (!cells.has(k)) cells.set(k, []);
      cells.get(k)!.push(s.n);
    }
  }
  return { kind, rows, cols, cells, stepCell };
}
