/* Faults made with clicks: the entries one access's walk read (guest, or EPT/NPT nested),
 * the permission and present bits each format has, and the scenario edit that flips one:
 * a guest or nested override (merged with one already aimed at the same entry), or, for
 * given tables, the entry's value itself. The engine then runs the edited scenario; this
 * file only writes the scenario, it never decides what the walk does. */
import type { AccessResult, Result, Scenario, Step } from '../../../wasm-core/js/types';
import { hex } from './decode';

export type BitName = 'P' | 'R' | 'W' | 'X' | 'U';
/** One checkbox: which bit of the entry, and whether "on" means the bit is clear (XD, NX, FOE). */
export interface EntryBit { name: BitName; bit: number; inverted?: boolean }

const X86: EntryBit[] = [{ name: 'P', bit: 0 }, { name: 'W', bit: 1 }, { name: 'U', bit: 2 }, { name: 'X', bit: 63, inverted: true }];

/** The bits a learner can flip on an entry a step read, or [] where the scenario has no
 * handle on it (shadow and flat tables are the VMM's, built on demand). */
export function entryBits(step: Step, result: Pick<Result, 'mode' | 'guest_paging'>, s: Scenario): EntryBit[] {
  if (step.dim === 'guest') {
    if (step.kind === 'pdpte') return [{ name: 'P', bit: 0 }];
    if (result.guest_paging === 'sunway')
      return [{ name: 'P', bit: 0 }, { name: 'R', bit: 8 }, { name: 'W', bit: 12 }, { name: 'U', bit: 9 }, { name: 'X', bit: 3, inverted: true }];
    if (result.guest_paging === '32bit' || s.guest.efer_nxe === false) return X86.slice(0, 3);
    return X86;
  }
  if (result.mode === 'ept') return [{ name: 'R', bit: 0 }, { name: 'W', bit: 1 }, { name: 'X', bit: 2 }];
  if (result.mode === 'npt') return s.nested?.host_nxe === false ? X86.slice(0, 3) : X86;
  return [];
}

/** Whether a checkbox is on for the entry as the step read it. */
export function bitOn(step: Step, b: EntryBit): boolean {
  const set = ((BigInt(step.entry) >> BigInt(b.bit)) & 1n) === 1n;
  return b.inverted ? !set : set;
}

/** The entries of one access that can be changed: each entry once, in walk order. */
export function toggleableSteps(access: AccessResult, result: Pick<Result, 'mode' | 'guest_paging'>, s: Scenario): Step[] {
  const seen = new Set<string>();
  return access.steps.filter((st) => {
    const readsEntry = st.kind === 'read' || st.kind === 'pdpte' || (st.kind === 'vmm_read' && st.dim === 'guest');
    if (!readsEntry || entryBits(st, result, s).length === 0) return false;
    const k = `${st.dim}:${st.entry_hpa}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

type Ovr = { set?: string; clear?: string };
function flipIn<T extends Ovr>(o: T, mask: bigint, on: boolean): T {
  let set = BigInt(o.set ?? '0x0'), clear = BigInt(o.clear ?? '0x0');
  // Undoing this override's own change drops it from the override; otherwise the override grows.
  if (on) { if (clear & mask) clear &= ~mask; else set |= mask; } else if (set & mask) set &= ~mask; else clear |= mask;
  const out = { ...o };
  delete out.set; delete out.clear;
  if (set) out.set = hex(set);
  if (clear) out.clear = hex(clear);
  return out;
}
const empty = (o: Ovr) => !o.set && !o.clear;
/* An override replaced where it stood (overrides apply in order), dropped when it no longer changes anything. */
function put<T extends Ovr>(list: T[], i: number, next: T) {
  if (i >= 0 && empty(next)) list.splice(i, 1);
  else if (i >= 0) list[i] = next;
  else if (!empty(next)) list.push(next);
}

/** The scenario with one bit of the entry `step` read flipped. `gva` is the access's gva
 * (guest overrides descend along it). Throws when the scenario cannot express the change. */
export function flipBit(s: Scenario, step: Step, b: EntryBit, gva: string): Scenario {
  const out = structuredClone(s);
  const mask = 1n << BigInt(b.bit);
  const rawOn = ((BigInt(step.entry) >> BigInt(b.bit)) & 1n) === 0n;   // the raw bit after the flip
  if (step.dim === 'guest') {
    if (out.guest.tables) {
      const table = out.guest.tables.find((tb) => BigInt(tb.gpa) === BigInt(step.table));
      if (!table) throw new Error(`no given table at ${step.table}`);
      const v = BigInt(table.entries[String(step.index)] ?? '0x0');
      table.entries[String(step.index)] = hex(rawOn ? v | mask : v & ~mask);
      return out;
    }
    const key = hex(BigInt(gva) & ~0xfffn);
    const list = out.guest.overrides ?? [];
    const i = list.findIndex((o) => BigInt(o.gva) === BigInt(key) && o.level === step.level);
    put(list, i, flipIn(i >= 0 ? list[i] : { gva: key, level: step.level }, mask, rawOn));
    if (list.length) out.guest.overrides = list; else delete out.guest.overrides;
    return out;
  }
  if (!out.nested || !step.gpa) throw new Error('only EPT and NPT entries can be changed');
  const gpa = hex(BigInt(step.gpa) & ~0xfffn);
  const list = out.nested.overrides ?? [];
  const i = list.findIndex((o) => o.gpa !== undefined && BigInt(o.gpa) === BigInt(gpa) && o.level === step.level);
  put(list, i, flipIn(i >= 0 ? list[i] : { gpa, level: step.level }, mask, rawOn));
  if (list.length) out.nested.overrides = list; else delete out.nested.overrides;
  return out;
}
