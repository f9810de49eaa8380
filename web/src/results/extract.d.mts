export type MetricKey = 'cpuid_published_min_cycles' | 'cpuid_exit_cycles' | 'memtouch_4k_first_ns' | 'memtouch_4k_second_ns'
  | 'memtouch_thp_first_ns' | 'memtouch_thp_region_ns' | 'ptrchase_4k_largest_ns' | 'ctxswitch_ns' | 'vmcall_ns';
export type GroupKey = 'cpu_model' | 'hypervisor' | 'tdp';
export const METRICS: Record<MetricKey, { label: string; unit: string; bySize: boolean }>;
export const GROUPS: Record<GroupKey, string>;
export interface Summary {
  cpu_model: string; arch: string; hypervisor: string; tdp: string; kvm_backend?: string | null; mode: string; mem_mib: number | null; created_utc: string;
  metrics: Record<MetricKey, number | null>;
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function summarize(result: any): Summary;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function toNs(result: any, m: any): number | null;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function tdpLabel(probe: any): string;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function kvmBackend(probe: any): string | null;
export const BARE_METAL: string;
export const TDP_IN_VM: string;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function memMiB(result: any): number | null;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function ptrchaseCurve(result: any): { pages: string; mib: number; ns: number }[];
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function publishedCpuidCycles(result: any): { min: number; mean: number } | null;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function fencedCpuidCycles(result: any): { min: number; median: number } | null;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function cpuidExitEstimates(items: { label: string; result: any }[]): { vm: string; host: string; cycles: number }[];
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function thpFirstPassPerGiB(result: any): number | null;
