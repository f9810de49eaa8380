/* The scenario and result formats of wasm-core/docs/model.md, as TypeScript types.
 * 64-bit quantities are hex strings ("0x1f") so that JavaScript loses no bits. */

export type Hex = string;
export type Mode = 'native' | 'ept' | 'npt';
export type GuestPaging = '4level' | '5level' | 'pae' | '32bit';
export type PageSize = '4K' | '2M' | '1G' | '4M';
export type Op = 'read' | 'write' | 'fetch';

export interface GuestMapping {
  gva: Hex; gpa: Hex; page?: PageSize; pages?: number;
  writable?: boolean; user?: boolean; nx?: boolean; global?: boolean;
}
export interface GuestOverride { gva: Hex; level: number; set?: Hex; clear?: Hex }
export interface NestedMapping {
  gpa: Hex; hpa: Hex; page?: Exclude<PageSize, '4M'>; pages?: number; perm?: string;
  memtype?: number; ipat?: boolean; user?: boolean;
}
export interface NestedOverride {
  gpa?: Hex; guest_table?: { gva: Hex; level: number }; level: number; set?: Hex; clear?: Hex;
}
export interface Access { gva: Hex; op: Op; user?: boolean }

export interface Scenario {
  $schema?: string;
  name: string;
  description?: string;
  mode: Mode;
  machine?: { maxphyaddr?: number };
  guest: {
    paging: GuestPaging; table_base?: Hex;
    cr0_wp?: boolean; efer_nxe?: boolean; cr4_pse?: boolean; cr4_smep?: boolean; cr4_smap?: boolean;
    mappings: GuestMapping[]; overrides?: GuestOverride[];
  };
  nested?: {
    levels?: 4 | 5; table_base?: Hex; ad?: boolean; memory_type?: 0 | 6; execute_only?: boolean;
    host_nxe?: boolean; host_smep?: boolean; mappings: NestedMapping[]; overrides?: NestedOverride[];
  };
  accesses: Access[];
}

export type Outcome = 'ok' | 'guest_page_fault' | 'ept_violation' | 'ept_misconfig' | 'npt_fault';
export type StepResult = 'table' | 'page' | 'not_present' | 'reserved' | 'misconfig' | 'written' | 'blocked';

export interface Step {
  n: number; ref: number | null; kind: 'read' | 'ad_write' | 'pdpte'; dim: 'guest' | 'nested';
  level: number; stage: number; gpa: Hex | null; table: Hex; index: number; entry_hpa: Hex; entry: Hex;
  flags: string[]; ad_set: '' | 'A' | 'D' | 'AD'; result: StepResult;
}

export type Fault =
  | { dim: 'guest'; level: number; stage: number; reason: string; vector: 14; error_code: Hex; cr2: Hex }
  | { dim: 'nested'; level: number; stage: number; reason: string; exit_reason: 48; qualification: Hex;
      guest_physical_address: Hex; guest_linear_address: Hex }
  | { dim: 'nested'; level: number; stage: number; reason: 'misconfig'; detail: string; exit_reason: 49;
      guest_physical_address: Hex }
  | { dim: 'nested'; level: number; stage: number; reason: string; exit_code: '0x400'; exitinfo1: Hex; exitinfo2: Hex };

export interface AccessResult {
  gva: Hex; op: Op; user: boolean; outcome: Outcome; exit: boolean;
  gpa: Hex | null; hpa: Hex | null; guest_page_size: number | null; nested_page_size: number | null;
  memory_refs: number; guest_refs: number; nested_refs: number; ad_writes: number;
  fault: Fault | null; steps: Step[];
}

export interface Result {
  format: 'vmsim-result/1'; name: string; mode: Mode; guest_paging: GuestPaging; nested_levels: number;
  cr3: Hex; eptp: Hex | null; ncr3: Hex | null; accesses: AccessResult[];
  totals: {
    accesses: number; memory_refs: number; guest_refs: number; nested_refs: number; ad_writes: number;
    exits: number; ok: number; guest_page_fault: number; ept_violation: number; ept_misconfig: number; npt_fault: number;
  };
}
