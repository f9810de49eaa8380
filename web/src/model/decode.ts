/* Pure functions from a trace to the words and numbers the views show. Nothing here
 * knows about pixels: every view reads these, and the component tests check them
 * against real engine traces. Words come through i18next (namespace `views`): each
 * function takes the view's `t`, English by default. Bit meanings follow wasm-core/docs/model.md section 4.3. */
import type { AccessResult, Fault, GuestPaging, Result, Step } from '../../../wasm-core/js/types';
import { tEn, type T } from '../i18n';

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

export function stageLabel(step: Step, paging: GuestPaging | string, t: T = tEn): string {
  if (step.dim === 'guest') return t('step.stageGuest', { level: levelName(paging, step.level), n: step.level });
  if (step.stage === 0) return t('step.stageFinal');
  return t('step.stageEntry', { level: levelName(paging, step.stage) });
}

export const kindWords = (k: string, t: T = tEn) => t(`kind.${k}`, { defaultValue: k });

/** What a step of the second dimension is for: a shadow walk translates the gva itself; a
 * nested or flat one, the gpa of a guest entry or the final gpa. */
export function forWhat(step: Step, result: Pick<Result, 'mode' | 'guest_paging'>, t: T = tEn): string {
  if (isShadowStep(step, result.mode)) return t('step.forGva');
  return stageLabel(step, result.guest_paging, t);
}

/** A step on the VMM's shadow table: every second-dimension step under shadow paging;
 * under agile paging the ones with no gpa (the shadow part above the switch, its fills). */
export function isShadowStep(step: Pick<Step, 'dim'> & { gpa?: string | null }, mode: string): boolean {
  if (step.dim !== 'nested') return false;
  return mode === 'shadow' || (mode === 'agile' && !step.gpa);
}

/** Agile paging: a shadow entry with the switch bit (flag SW), where the walk goes on in
 * the guest's own tables through the nested walk. */
export const isSwitchStep = (step: Pick<Step, 'flags' | 'kind'>, mode: string) =>
  mode === 'agile' && (step.kind === 'read' || step.kind === 'vmm_fill') && step.flags.includes('SW');

/** The name of the table a step reads: guest, nested, or the shadow/flat table in those modes. */
export function tableOf(step: Pick<Step, 'dim'> & { gpa?: string | null }, mode: string): 'guest' | 'nested' | 'shadow' | 'flat' {
  if (step.dim === 'guest') return 'guest';
  return isShadowStep(step, mode) ? 'shadow' : mode === 'flat' ? 'flat' : 'nested';
}

/** A step result, an exit reason or a detail in words (the engine's code when unknown). */
export const resultWords = (r: string, t: T = tEn) => t(`result.${r}`, { defaultValue: r.replace(/_/g, ' ') });
export const reasonWords = (r: string, t: T = tEn) => t(`reason.${r}`, { defaultValue: r.replace(/_/g, ' ') });

/** One sentence saying what a step does, in the vocabulary of the glossary. */
export function explainStep(step: Step, result: Pick<Result, 'mode' | 'guest_paging'>, t: T = tEn): string {
  const paging = result.guest_paging;
  const table = t(`step.table.${tableOf(step, result.mode)}`);
  const level = levelName(paging, step.level);
  switch (step.kind) {
    case 'tlb_hit':
      return t('step.tlb_hit');
    case 'vmexit':
      return t('step.vmexit', { reason: resultWords(step.result, t) });
    case 'vmm_read':
      return t('step.vmm_read', { level, index: step.index });
    case 'vmm_fill':
      return t('step.vmm_fill', { table, index: step.index });
    case 'eptp_list':
      return step.result === 'page'
        ? t('step.eptp_valid', { index: step.index })
        : t('step.eptp_other', { index: step.index, result: resultWords(step.result, t) });
    case 'ad_write':
      return t(step.result === 'blocked' ? 'step.ad_blocked' : 'step.ad_write', { bits: step.ad_set, level });
    case 'pdpte':
      return t('step.pdpte', { index: step.index });
    case 'pwc_hit':
      return t('step.pwc_hit', { table, level: step.level, stage: forWhat(step, result, t) });
    case 'ntlb_hit':
      return t('step.ntlb_hit', { stage: stageLabel(step, paging, t) });
    default: {
      const what = step.dim === 'guest' ? t('step.whatGuest', { level, index: step.index })
        : isSwitchStep(step, result.mode) ? t('step.whatSwitch', { level, index: step.index, next: levelName(paging, step.level - 1) })
        : isShadowStep(step, result.mode) ? t('step.whatShadow', { level, index: step.index })
        : result.mode === 'flat' ? t('step.whatFlat', { index: step.index, stage: stageLabel(step, paging, t) })
        : t('step.whatNested', { table, level: step.level, index: step.index, stage: stageLabel(step, paging, t) });
      const known = ['table', 'page', 'not_present', 'reserved', 'misconfig'].includes(step.result);
      const res = known ? t(`step.res.${step.result}`) : t('step.res.other', { result: resultWords(step.result, t) });
      return t('step.read', { what, res });
    }
  }
}

export function flagWords(flag: string, t: T = tEn): string {
  if (flag.startsWith('MT=')) {
    const mt = flag.slice(3);
    const name = ['0', '1', '4', '5', '6'].includes(mt) ? t(`flag.mt.${mt}`) : t('flag.mt.other');
    return t('flag.memoryType', { mt, name });
  }
  return t(`flag.${flag}`, { defaultValue: flag });
}

export interface BitWord { bit: number; set: boolean; words: string }

function decodeBits(value: string, table: string, bitList: number[], t: T): BitWord[] {
  const v = hexToBig(value);
  return bitList.map((bit) => ({ bit, set: ((v >> BigInt(bit)) & 1n) === 1n, words: t(`bits.${table}.${bit}`) }));
}

export const eptQualification = (q: string, t: T = tEn) => decodeBits(q, 'ept', [0, 1, 2, 3, 4, 5, 7, 8], t);
export const nptExitInfo1 = (q: string, t: T = tEn) => decodeBits(q, 'npt', [0, 1, 2, 3, 4, 32, 33], t);
export const pfErrorCode = (q: string, t: T = tEn) => decodeBits(q, 'pf', [0, 1, 2, 3, 4], t);

export const outcomeWords = (o: string, t: T = tEn) => t(`outcome.${o}`, { defaultValue: o });

/** The outcome of one access or event in words: a memory access's outcome, or what a
 * VMFUNC, mov cr3, INVLPG or page-table write did ("switched to EPTP index 1, no VM exit"). */
export function outcomeSentence(a: Pick<AccessResult, 'op' | 'outcome' | 'exits' | 'eptp_index'>, t: T = tEn): string {
  if (a.outcome !== 'ok' || a.op === 'read' || a.op === 'write' || a.op === 'fetch') return outcomeWords(a.outcome, t);
  if (a.op === 'vmfunc') return t('outcome.vmfuncOk', { index: a.eptp_index ?? 0 });
  return t('outcome.eventOk', { op: t(`op.${a.op}`, { defaultValue: a.op }), exits: exitsWords(a.exits, t) });
}

/** "no VM exit", "1 VM exit", "5 VM exits" (i18next plural forms). */
export const exitsWords = (n: number, t: T = tEn) => t('count.exits', { count: n });

/** The references of an access split by the tables each dimension reads, named as that
 * mode names them: "4 guest + 20 nested", "4 guest + 5 flat", "5 shadow", "4 guest". */
export function refsSplit(a: Pick<AccessResult, 'guest_refs' | 'nested_refs'>, mode: string, t: T = tEn): string {
  const guest = t('count.dimRefs', { count: a.guest_refs, dim: t('dim.guest') });
  if (mode === 'native') return guest;
  const other = t('count.dimRefs', { count: a.nested_refs, dim: t(`dim.${mode === 'shadow' ? 'shadow' : mode === 'flat' ? 'flat' : mode === 'agile' ? 'shadowNested' : 'nested'}`) });
  if (mode === 'shadow') return a.guest_refs ? t('count.plus', { a: guest, b: other }) : other;
  return t('count.plus', { a: guest, b: other });
}

/** One line of counts for an access: references (split by dimension), A/D writes, exits. */
export function countsLine(a: AccessResult, mode: string, t: T = tEn): string {
  // a VMFUNC's one reference is its read of the EPTP list, no table of either dimension
  const split = a.op === 'vmfunc' ? t('dim.eptp') : refsSplit(a, mode, t);
  // ad_writes counts the guest's A/D write steps; the A/D bits the CPU sets in nested entries
  // as it reads them (EPT with A/D on, NPT) are no step of their own: said apart, so that a
  // walk whose nested steps show "A/D set" does not read "no A/D write".
  const nested = nestedAdSets(a);
  return [
    t('count.refs', { count: a.memory_refs, split }),
    ...(nested ? [t('count.adGuest', { count: a.ad_writes }), t('count.adNested', { count: nested })] : [t('count.ad', { count: a.ad_writes })]),
    exitsWords(a.exits, t),
  ].join(' · ');
}

/** Nested entries whose A/D bits the walk set as it read them. */
export function nestedAdSets(a: Pick<AccessResult, 'steps'>): number {
  return a.steps.filter((s) => s.dim === 'nested' && s.kind !== 'ad_write' && s.ad_set).length;
}

/** An entry after the A/D bits a step sets (A bit 5 and D bit 6 in x86 and NPT entries, 8
 * and 9 in EPT entries); null when the step sets none or its write is blocked. */
export function entryAfterAd(s: Pick<Step, 'dim' | 'entry' | 'ad_set' | 'result'> & { gpa?: string | null }, mode: string): string | null {
  if (!s.ad_set || s.result === 'blocked') return null;
  // agile's shadow entries are x86 entries; its nested ones EPT entries
  const ept = s.dim === 'nested' && (mode === 'ept' || (mode === 'agile' && !isShadowStep(s, mode)));
  let v = hexToBig(s.entry);
  if (s.ad_set.includes('A')) v |= 1n << (ept ? 8n : 5n);
  if (s.ad_set.includes('D')) v |= 1n << (ept ? 9n : 6n);
  return hex(v);
}

export type ExitKind = 'fill' | 'violation' | 'pt_write' | 'cr3' | 'other';
export const EXIT_KINDS: ExitKind[] = ['fill', 'violation', 'pt_write', 'cr3', 'other'];

/** The exits of an access by kind, read from its steps: a table fill (a shadow hidden page
 * fault or a flat-table miss the VMM fills), a fault exit (EPT violation or
 * misconfiguration, #NPF, a reflected #PF, a flat fault), a guest page-table write, a
 * mov cr3, or another (VMCALL, a failed VMFUNC). The kinds add up to `exits`. */
export function exitKinds(a: Pick<AccessResult, 'steps' | 'exits' | 'outcome'>, mode: string): Record<ExitKind, number> {
  const k: Record<ExitKind, number> = { fill: 0, violation: 0, pt_write: 0, cr3: 0, other: 0 };
  for (const s of a.steps) {
    // a flat miss or an on-demand nested fill: the exit has no step of its own (a shadow
    // fill, agile's too, follows its hidden page fault's vmexit step)
    if (s.kind === 'vmm_fill' && mode !== 'shadow' && !isShadowStep(s, mode)) k.fill++;
    if (s.kind !== 'vmexit') continue;
    if (s.result === 'hidden_page_fault') k.fill++;
    else if (s.result === 'pt_write') k.pt_write++;
    else if (s.result === 'cr3_write') k.cr3++;
    else if (s.result === 'reflected_page_fault') { k.fill--; k.violation++; }   // the same exit, ending in a #PF for the guest
  }
  const rest = a.exits - EXIT_KINDS.reduce((n, x) => n + k[x], 0);
  if (rest > 0) k[/violation|misconfig|npt_fault|flat_fault|unmapped/.test(a.outcome) ? 'violation' : 'other'] += rest;
  return k;
}

/** Exits by kind in words ("5 table fills"), only the kinds that occur; "" for none. */
export function exitKindsWords(k: Record<ExitKind, number>, t: T = tEn): string {
  return EXIT_KINDS.filter((x) => k[x] > 0).map((x) => t(`exitKind.${x}`, { count: k[x] })).join(', ');
}

/** Where a fault was found, in words: "guest PT entry (level 1)", "nested level-1 entry,
 * translating the final gpa"; null for exits that read no table (VMCALL, VMFUNC). */
export function faultWhere(fault: Fault, result: Pick<Result, 'mode' | 'guest_paging'>, t: T = tEn): string | null {
  const f = fault as { dim: string; level: number; stage: number; reason: string };
  if (['hypercall', 'index_out_of_range', 'invalid_eptp', 'function_disabled', 'vmfunc_disabled'].includes(f.reason)) return null;
  const paging = result.guest_paging;
  if (f.dim === 'guest') return t('where.guest', { level: levelName(paging, f.level), n: f.level });
  const stage = f.stage === 0 ? t('step.stageFinal') : t('step.stageEntry', { level: levelName(paging, f.stage) });
  if (result.mode === 'flat') return t('where.flat', { stage });
  if (result.mode === 'shadow' || (result.mode === 'agile' && f.dim === 'nested' && f.stage === 0 && !('guest_physical_address' in f) )) return t('where.shadow');
  return t('where.nested', { table: t(`step.table.nested`), n: f.level, stage });
}

/** The fault's fields as label/value pairs plus decoded bit lists, whatever its kind; the
 * dimension, level and stage become one sentence saying where the walk stopped. */
export function faultDetails(fault: Fault | null, t: T = tEn, result?: Pick<Result, 'mode' | 'guest_paging'>): { pairs: [string, string][]; bits: { title: string; bits: BitWord[] } | null } {
  if (!fault) return { pairs: [], bits: null };
  const f = fault as Record<string, unknown>;
  const pairs: [string, string][] = [];
  const where = result ? faultWhere(fault, result, t) : null;
  if (where) pairs.push([t('fault.where'), where]);
  for (const [k, v] of Object.entries(f)) {
    if (result && (k === 'dim' || k === 'level' || k === 'stage')) continue;
    const value = k === 'dim' ? t(`dim.${v}`) : k === 'reason' || k === 'detail' ? reasonWords(String(v), t) : String(v);
    pairs.push([t(`fault.${k}`, { defaultValue: k.replace(/_/g, ' ') }), value]);
  }
  let b: { title: string; bits: BitWord[] } | null = null;
  if (typeof f.qualification === 'string') b = { title: t('bits.eptTitle'), bits: eptQualification(f.qualification, t) };
  else if (typeof f.exitinfo1 === 'string') b = { title: t('bits.nptTitle'), bits: nptExitInfo1(f.exitinfo1, t) };
  else if (typeof f.error_code === 'string' && f.vector === 14) b = { title: t('bits.pfTitle'), bits: pfErrorCode(f.error_code, t) };
  return { pairs, bits: b };
}

/** Accesses that have something to walk (memory accesses), as opposed to vmfunc/mov_cr3/... events. */
export function accessLabel(a: AccessResult, i: number, t: T = tEn): string {
  const op = t(`op.${a.op}`, { defaultValue: a.op });
  const what = a.gva ? (a.user ? t('app.accessUser', { op, gva: a.gva }) : `${op} ${a.gva}`) : op;
  return t('app.accessLabel', { i, what, outcome: outcomeSentence(a, t) });
}
