/* Pure functions from a trace to the words and numbers the views show. Nothing here
 * knows about pixels: every view reads these, and the component tests check them
 * against real engine traces. Bit meanings follow wasm-core/docs/model.md section 4.3. */
import type { AccessResult, Fault, GuestPaging, Result, Step } from '../../../wasm-core/js/types';

export const hexToBig = (h: string | null | undefined): bigint => (h ? BigInt(h) : 0n);
export const hex = (v: bigint | number): string => '0x' + BigInt(v).toString(16);

export interface IndexField {
  /** Guest level (1 = PTE) or 0 for the page offset. */
  level: number;
  hi: number;
  lo: number;
  value: number;
  label: string;
}

const LEVEL_NAMES: Record<string, Record<number, string>> = {
  x86: { 5: 'PML5', 4: 'PML4', 3: 'PDPT', 2: 'PD', 1: 'PT' },
  sunway: { 4: 'L4', 3: 'L3', 2: 'L2', 1: 'L1' },
};

export function levelName(paging: GuestPaging | string, level: number): string {
  return (paging === 'sunway' ? LEVEL_NAMES.sunway : LEVEL_NAMES.x86)[level] ?? `L${level}`;
}

/** The bit ranges of each guest level for a paging format, top level first. */
export function guestFieldLayout(paging: GuestPaging | string): { level: number; hi: number; lo: number }[] {
  switch (paging) {
    case '5level':
      return [5, 4, 3, 2, 1].map((l) => ({ level: l, hi: 12 + 9 * l - 1, lo: 12 + 9 * (l - 1) }));
    case 'pae':
      return [{ level: 3, hi: 31, lo: 30 }, { level: 2, hi: 29, lo: 21 }, { level: 1, hi: 20, lo: 12 }];
    case '32bit':
      return [{ level: 2, hi: 31, lo: 22 }, { level: 1, hi: 21, lo: 12 }];
    case 'sunway':
      return [4, 3, 2, 1].map((l) => ({ level: l, hi: 13 + 10 * l - 1, lo: 13 + 10 * (l - 1) }));
    default:
      return [4, 3, 2, 1].map((l) => ({ level: l, hi: 12 + 9 * l - 1, lo: 12 + 9 * (l - 1) }));
  }
}

const bits = (v: bigint, hi: number, lo: number) => Number((v >> BigInt(lo)) & ((1n << BigInt(hi - lo + 1)) - 1n));

/** The gva cut into one index per level plus the page offset (for 4 KiB pages, or 8 KiB on Sunway). */
export function splitGva(gva: string, paging: GuestPaging | string): IndexField[] {
  const v = hexToBig(gva);
  const layout = guestFieldLayout(paging);
  const fields: IndexField[] = layout.map(({ level, hi, lo }) => ({
    level, hi, lo, value: bits(v, hi, lo), label: levelName(paging, level),
  }));
  const offHi = layout[layout.length - 1].lo - 1;
  fields.push({ level: 0, hi: offHi, lo: 0, value: bits(v, offHi, 0), label: 'offset' });
  return fields;
}

/** The gpa cut into nested indices (9 bits per level from bit 12), as an EPT/NPT walk uses it. */
export function splitGpa(gpa: string, levels: number): IndexField[] {
  const v = hexToBig(gpa);
  const out: IndexField[] = [];
  for (let l = levels; l >= 1; l--) {
    const lo = 12 + 9 * (l - 1);
    out.push({ level: l, hi: lo + 8, lo, value: bits(v, lo + 8, lo), label: `N${l}` });
  }
  out.push({ level: 0, hi: 11, lo: 0, value: bits(v, 11, 0), label: 'offset' });
  return out;
}

export function isTwoD(mode: string): boolean {
  return mode === 'ept' || mode === 'npt' || mode === 'flat';
}

/** Guest levels of the walk, top first: the rows of the 2-D grid before the final gpa row. */
export function guestLevels(paging: GuestPaging | string): number[] {
  return guestFieldLayout(paging).map((f) => f.level);
}

/** Nested levels across the grid: flat mode has one (the flat table), EPT/NPT 4 or 5. */
export function nestedLevels(result: Pick<Result, 'mode' | 'nested_levels'>): number[] {
  if (result.mode === 'flat') return [1];
  const n = result.nested_levels || 4;
  return Array.from({ length: n }, (_, i) => n - i);
}

/** Where a step sits in the 2-D grid: row = guest stage (0 = final gpa), col = nested level or 'guest'. */
export function cellOf(step: Step): { row: number; col: number | 'guest' } | null {
  if (step.kind === 'vmexit' || step.kind === 'vmm_read' || step.kind === 'eptp_list' || step.kind === 'tlb_hit')
    return null;
  if (step.dim === 'guest') return { row: step.level, col: 'guest' };
  return { row: step.stage, col: step.level };
}

export const cellKey = (row: number, col: number | 'guest') => `${row}:${col}`;

export function stageLabel(step: Step, paging: GuestPaging | string): string {
  if (step.dim === 'guest') return `guest ${levelName(paging, step.level)} entry (level ${step.level})`;
  if (step.stage === 0) return 'the final gpa';
  return `the gpa of the guest ${levelName(paging, step.stage)} entry`;
}

const KIND_WORDS: Record<string, string> = {
  read: 'memory reference',
  ad_write: 'A/D bit write',
  pdpte: 'PDPTE register (no memory reference)',
  vmm_fill: 'VMM fills the entry',
  eptp_list: 'EPTP-list read (VMFUNC)',
  tlb_hit: 'TLB hit: no walk',
  pwc_hit: 'page-walk cache hit',
  ntlb_hit: 'nested TLB hit',
  vmexit: 'VM exit',
  vmm_read: 'VMM reads the guest table in software',
};
export const kindWords = (k: string) => KIND_WORDS[k] ?? k;

/** One sentence saying what a step does, in the vocabulary of the glossary. */
export function explainStep(step: Step, result: Pick<Result, 'mode' | 'guest_paging'>): string {
  const paging = result.guest_paging;
  const table = result.mode === 'shadow' && step.dim === 'nested' ? 'shadow' : result.mode === 'flat' && step.dim === 'nested' ? 'flat' : step.dim;
  switch (step.kind) {
    case 'tlb_hit':
      return `The TLB holds this gva page: the translation is answered with no table walk.`;
    case 'vmexit':
      return `VM exit (${step.result.replace(/_/g, ' ')}): the hypervisor takes over.`;
    case 'vmm_read':
      return `The VMM reads guest ${levelName(paging, step.level)} entry ${step.index} in software (not a reference of the walk).`;
    case 'vmm_fill':
      return `The VMM writes the missing ${table} entry ${step.index} and re-enters the guest.`;
    case 'eptp_list':
      return `VMFUNC reads EPTP-list entry ${step.index}: ${step.result === 'page' ? 'a valid EPTP becomes the active EPT' : step.result}.`;
    case 'ad_write':
      return step.result === 'blocked'
        ? `Setting ${step.ad_set} in the guest ${levelName(paging, step.level)} entry is blocked: its nested translation is read-only.`
        : `The walk sets ${step.ad_set} in the guest ${levelName(paging, step.level)} entry.`;
    case 'pdpte':
      return `PAE: PDPTE ${step.index} comes from a register loaded at CR3 load.`;
    case 'pwc_hit':
      return `The page-walk cache supplies the ${table} level-${step.level} entry for ${stageLabel(step, paging)}: no memory reference.`;
    case 'ntlb_hit':
      return `The nested TLB translates ${stageLabel(step, paging)} in one lookup: the whole nested walk is skipped.`;
    default: {
      const what = step.dim === 'guest'
        ? `guest ${levelName(paging, step.level)} entry ${step.index}`
        : `${table === 'nested' ? 'nested' : table} level-${step.level} entry ${step.index} to translate ${stageLabel(step, paging)}`;
      const res: Record<string, string> = {
        table: 'points to the next table',
        page: 'maps the page',
        not_present: 'is not present',
        reserved: 'has reserved bits set',
        misconfig: 'is misconfigured',
      };
      return `Read ${what}: it ${res[step.result] ?? step.result}.`;
    }
  }
}

const X86_FLAGS: Record<string, string> = {
  P: 'present', RW: 'writable', US: 'user', PWT: 'write-through', PCD: 'cache disabled', A: 'accessed', D: 'dirty',
  PS: 'page size (large page)', PAT: 'PAT', G: 'global', XD: 'execute disable',
  R: 'read', W: 'write', X: 'execute', IPAT: 'ignore PAT', UX: 'user execute', SVE: 'suppress #VE',
  V: 'valid', FOR: 'fault on read', FOW: 'fault on write', FOE: 'fault on execute', ASM: 'address space match',
  KRE: 'kernel read', URE: 'user read', KWE: 'kernel write', UWE: 'user write',
};
export function flagWords(flag: string): string {
  if (flag.startsWith('MT=')) {
    const mt: Record<string, string> = { '0': 'uncacheable', '1': 'write-combining', '4': 'write-through', '5': 'write-protected', '6': 'write-back' };
    return `memory type ${flag.slice(3)} (${mt[flag.slice(3)] ?? 'reserved'})`;
  }
  return X86_FLAGS[flag] ?? flag;
}

export interface BitWord { bit: number; set: boolean; words: string }

function decodeBits(value: string, table: [number, string][]): BitWord[] {
  const v = hexToBig(value);
  return table.map(([bit, words]) => ({ bit, set: ((v >> BigInt(bit)) & 1n) === 1n, words }));
}

export const eptQualification = (q: string) =>
  decodeBits(q, [
    [0, 'data read'], [1, 'data write'], [2, 'instruction fetch'],
    [3, 'the gpa was readable'], [4, 'the gpa was writable'], [5, 'the gpa was executable'],
    [7, 'guest linear address valid'], [8, 'access to the final gpa (clear: to a guest paging structure)'],
  ]);

export const nptExitInfo1 = (q: string) =>
  decodeBits(q, [
    [0, 'P: the entry was present'], [1, 'W: a write'], [2, 'U: user access'], [3, 'RSVD: reserved bits set'],
    [4, 'I/D: instruction fetch'], [32, 'the final gpa'], [33, 'a guest page-table access'],
  ]);

export const pfErrorCode = (q: string) =>
  decodeBits(q, [
    [0, 'P: protection violation (clear: not present)'], [1, 'W: a write'], [2, 'U: user mode'],
    [3, 'RSVD: reserved bit set'], [4, 'I/D: instruction fetch'],
  ]);

const OUTCOME_WORDS: Record<string, string> = {
  ok: 'translated',
  guest_page_fault: 'guest page fault (#PF, no exit)',
  ept_violation: 'EPT violation (VM exit 48)',
  ept_misconfig: 'EPT misconfiguration (VM exit 49)',
  npt_fault: 'nested page fault (#NPF, exit 0x400)',
  flat_fault: 'flat table miss outside every memory slot',
  vmfunc_exit: 'VMFUNC failed (VM exit 59)',
  invalid_opcode: 'invalid opcode (#UD in the guest)',
  vmcall_exit: 'VMCALL (VM exit 18)',
  shadow_unmapped: 'gpa outside the VMM memory slots',
};
export const outcomeWords = (o: string) => OUTCOME_WORDS[o] ?? o;

/** The fault's fields as label/value pairs plus decoded bit lists, whatever its kind. */
export function faultDetails(fault: Fault | null): { pairs: [string, string][]; bits: { title: string; bits: BitWord[] } | null } {
  if (!fault) return { pairs: [], bits: null };
  const f = fault as Record<string, unknown>;
  const pairs: [string, string][] = [];
  for (const [k, v] of Object.entries(f)) pairs.push([k.replace(/_/g, ' '), String(v)]);
  let b: { title: string; bits: BitWord[] } | null = null;
  if (typeof f.qualification === 'string') b = { title: 'Exit qualification', bits: eptQualification(f.qualification) };
  else if (typeof f.exitinfo1 === 'string') b = { title: 'EXITINFO1', bits: nptExitInfo1(f.exitinfo1) };
  else if (typeof f.error_code === 'string' && f.vector === 14) b = { title: 'Error code', bits: pfErrorCode(f.error_code) };
  return { pairs, bits: b };
}

/** Accesses that have something to walk (memory accesses), as opposed to vmfunc/mov_cr3/... events. */
export function accessLabel(a: AccessResult, i: number): string {
  const what = a.gva ? `${a.op} ${a.gva}${a.user ? ' (user)' : ''}` : a.op;
  return `#${i} ${what}: ${a.outcome}`;
}
