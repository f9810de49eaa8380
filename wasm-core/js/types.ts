/* The scenario and result formats of wasm-core/docs/model.md, as TypeScript types.
 * 64-bit quantities are hex strings ("0x1f") so that JavaScript loses no bits. */

export type Hex = string;
export type Mode = 'native' | 'ept' | 'npt' | 'flat' | 'shadow' | 'agile';
export type GuestPaging = '4level' | '5level' | 'pae' | '32bit' | 'sunway';
export type PageSize = '4K' | '2M' | '1G' | '4M' | '8K';
export type Op = 'read' | 'write' | 'fetch';
/** What an access entry of the result can be: a memory access or one of the control events. */
export type AccessOp = Op | 'vmfunc' | 'vmcall' | 'mov_cr3' | 'invlpg' | 'pte_write';

export interface GuestMapping {
  gva: Hex; gpa: Hex; page?: PageSize; pages?: number;
  writable?: boolean; user?: boolean; nx?: boolean; global?: boolean;
}
/** A guest page table as it is in guest memory: entry index (decimal) -> value; the rest zero. */
export interface GuestTable { gpa: Hex; entries: Record<string, Hex> }
export interface GuestOverride { gva: Hex; level: number; set?: Hex; clear?: Hex }
export interface NestedMapping {
  gpa: Hex; hpa: Hex; page?: Exclude<PageSize, '4M'>; pages?: number; perm?: string;
  memtype?: number; ipat?: boolean; user?: boolean;
}
export interface NestedOverride {
  gpa?: Hex; guest_table?: { gva: Hex; level: number }; level: number; set?: Hex; clear?: Hex;
}
export type Access =
  | { gva: Hex; op: Op; user?: boolean }
  | { vmfunc: number; function?: number }
  | { vmcall: true }
  | { mov_cr3: number }
  | { invlpg: Hex }
  | { pte_write: { gva: Hex; level: number; set?: Hex; clear?: Hex } };

export interface MemorySlot { gpa: Hex; hpa: Hex; pages?: number }
export interface CacheConfig {
  preset?: 'none' | 'x86-server' | 'sunway-1621';
  tlb?: { entries: number; ways?: number }; pwc?: { entries: number }; ntlb?: { entries: number };
  flush_on_eptp_switch?: boolean;
  /** The result lists what each cache holds after each access (model.md 5). */
  contents?: boolean;
}

/** One valid line of a cache after an access (model.md 5, `caches.contents`). */
export interface CacheLine {
  set: number; rank: number; level: number | null; from: Hex; size: number; to: Hex; gpa: Hex | null;
  space: number; eptp_index: number | null; dirty: boolean | null; served: boolean; filled: boolean;
}
export interface CacheHolding { entries: number; ways: number; valid: number; lines: CacheLine[] }
export interface CacheContents { tlb: CacheHolding | null; guest_pwc: CacheHolding | null; nested_pwc: CacheHolding | null; ntlb: CacheHolding | null }

export interface Scenario {
  $schema?: string;
  name: string;
  description?: string;
  mode: Mode;
  machine?: { maxphyaddr?: number };
  guest: {
    paging: GuestPaging; table_base?: Hex;
    cr0_wp?: boolean; efer_nxe?: boolean; cr4_pse?: boolean; cr4_smep?: boolean; cr4_smap?: boolean;
    address_spaces?: number; pcid?: boolean;
    /** Mappings the engine builds tables for, or (instead) the tables as they are. */
    mappings?: GuestMapping[]; overrides?: GuestOverride[];
    cr3?: Hex; tables?: GuestTable[];
  };
  nested?: {
    levels?: 4 | 5; table_base?: Hex; ad?: boolean; memory_type?: 0 | 6; execute_only?: boolean;
    host_nxe?: boolean; host_smep?: boolean; mappings: NestedMapping[]; overrides?: NestedOverride[];
    on_demand?: boolean; vmfunc?: boolean; eptp_list?: { mappings: NestedMapping[]; overrides?: NestedOverride[] }[];
  };
  flat?: { table_base?: Hex; guest_ram: Hex; prefill?: boolean; mappings: MemorySlot[] };
  shadow?: { table_base?: Hex; mappings: MemorySlot[]; cr3_targets?: number; prefill?: boolean };
  /** Mode agile (model.md 1, "Agile paging"). */
  agile?: { table_base?: Hex; switch_level?: number; prefill?: boolean; subtrees?: { gva: Hex; level: number }[];
    nested_after_writes?: number; shadow_after_quiet?: number };
  caches?: CacheConfig;
  accesses: Access[];
}

export type Outcome = 'ok' | 'guest_page_fault' | 'ept_violation' | 'ept_misconfig' | 'npt_fault' | 'flat_fault'
  | 'vmfunc_exit' | 'invalid_opcode' | 'vmcall_exit' | 'shadow_unmapped';
export type StepResult = 'table' | 'page' | 'not_present' | 'reserved' | 'misconfig' | 'written' | 'blocked'
  | 'hidden_page_fault' | 'pt_write' | 'cr3_write' | 'reflected_page_fault';
export type StepKind = 'read' | 'ad_write' | 'pdpte' | 'vmm_fill' | 'eptp_list' | 'tlb_hit' | 'pwc_hit' | 'ntlb_hit'
  | 'vmexit' | 'vmm_read';

export interface Step {
  n: number; ref: number | null; kind: StepKind; dim: 'guest' | 'nested';
  level: number; stage: number; gpa: Hex | null; table: Hex; index: number; entry_hpa: Hex; entry: Hex;
  flags: string[]; ad_set: '' | 'A' | 'D' | 'AD'; result: StepResult;
  /** With caches on: hit (a cache answered) or miss (memory did); null otherwise. */
  cache: 'hit' | 'miss' | null;
}

export type Fault =
  | { dim: 'guest'; level: number; stage: number; reason: string; vector: 14; error_code: Hex; cr2: Hex }
  | { dim: 'nested'; level: number; stage: number; reason: string; exit_reason: 48; qualification: Hex;
      guest_physical_address: Hex; guest_linear_address: Hex }
  | { dim: 'nested'; level: number; stage: number; reason: 'misconfig'; detail: string; exit_reason: 49;
      guest_physical_address: Hex }
  | { dim: 'nested'; level: number; stage: number; reason: string; exit_code: '0x400'; exitinfo1: Hex; exitinfo2: Hex }
  | { dim: 'nested'; level: number; stage: number; reason: 'unmapped'; guest_physical_address: Hex }
  | { dim: 'guest' | 'nested'; level: number; stage: number; reason: string; vector?: 6; exit_reason?: 18 | 59 };

export interface AccessCache { tlb: 'hit' | 'miss' | null; pwc_hits: number; ntlb_hits: number }
export interface ShadowCounters {
  hidden_page_faults: number; pt_write_exits: number; cr3_write_exits: number; reflected_page_faults: number;
  shadow_pages: number; write_protected_pages: number;
  /** agile mode only */
  switch_level?: number; nested_subtrees?: number; to_nested?: number; to_shadow?: number;
}

export interface AccessResult {
  gva: Hex | null; op: AccessOp; user: boolean; eptp_index: number | null; outcome: Outcome; exit: boolean;
  gpa: Hex | null; hpa: Hex | null; guest_page_size: number | null; nested_page_size: number | null;
  memory_refs: number; guest_refs: number; nested_refs: number; ad_writes: number; exits: number;
  cache: AccessCache | null; fault: Fault | null; steps: Step[];
  /** With caches.contents, the first 256 accesses. */
  cache_contents?: CacheContents;
}

export interface Result {
  format: 'vmsim-result/1'; name: string; mode: Mode; guest_paging: GuestPaging; nested_levels: number;
  cr3: Hex; eptp: Hex | null; ncr3: Hex | null; flat_table_bytes: number | null; accesses: AccessResult[];
  totals: {
    accesses: number; memory_refs: number; guest_refs: number; nested_refs: number; ad_writes: number;
    exits: number; ok: number; guest_page_fault: number; ept_violation: number; ept_misconfig: number; npt_fault: number;
    flat_fault: number; vmfunc_exit: number; invalid_opcode: number; vmcall_exit: number; shadow_unmapped: number;
  };
  /** Shadow mode's counters (hidden page faults, pt_write and cr3_write exits, ...); null in other modes. */
  shadow: ShadowCounters | null;
}
