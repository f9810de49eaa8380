/* Which host frames a trace touches and in what role. Derived from the steps alone, so
 * the memory view draws what the engine reported, never a guess at the layout. */
import type { AccessResult, Result, Step } from '../../../wasm-core/js/types';
import { hexToBig, tableOf } from './decode';
import { tEn, type T } from '../i18n';

export type FrameRole = 'guest' | 'nested' | 'shadow' | 'flat' | 'eptp' | 'data';
/** A frame's role in words (views namespace: memory.role.*). */
export const roleWords = (r: FrameRole, t: T = tEn) => t(`memory.role.${r}`);

export interface Frame {
  /** Host frame number (hpa >> 12). */
  pfn: bigint;
  role: FrameRole;
  /** Step numbers (n) of the access that touch it. */
  steps: number[];
}

export function stepRole(step: Step, mode: string): FrameRole {
  return step.kind === 'eptp_list' ? 'eptp' : tableOf(step, mode);
}

/** Steps that touch no frame: a cache answered (its entry_hpa is 0x0) or the CPU exited. */
const NO_FRAME = new Set(['tlb_hit', 'pwc_hit', 'ntlb_hit', 'vmexit']);
const touchesMemory = (s: Step) => !NO_FRAME.has(s.kind);

export function framesOf(result: Pick<Result, 'mode'>, access: AccessResult): Frame[] {
  const byPfn = new Map<bigint, Frame>();
  const add = (pfn: bigint, role: FrameRole, n: number | null) => {
    let f = byPfn.get(pfn);
    if (!f) byPfn.set(pfn, (f = { pfn, role, steps: [] }));
    if (n !== null) f.steps.push(n);
  };
  for (const s of access.steps) if (touchesMemory(s)) add(hexToBig(s.entry_hpa) >> 12n, stepRole(s, result.mode), s.n);
  if (access.hpa) add(hexToBig(access.hpa) >> 12n, 'data', null);
  return [...byPfn.values()].sort((a, b) => (a.pfn < b.pfn ? -1 : a.pfn > b.pfn ? 1 : 0));
}

/** The frame the step at `n` touches, or null (before the first step, TLB hits, exits). */
export function currentPfn(access: AccessResult, n: number): bigint | null {
  const s = access.steps[n - 1];
  if (!s) return n > access.steps.length && access.hpa ? hexToBig(access.hpa) >> 12n : null;
  return touchesMemory(s) ? hexToBig(s.entry_hpa) >> 12n : null;
}
