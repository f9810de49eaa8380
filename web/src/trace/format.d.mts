/** The header of a vmemlab trace (hw-lab/schema/trace.schema.json). */
export interface TraceHeader {
  format: 'vmemlab-trace';
  version: 1;
  program: string;
  args: string[];
  label?: string;
  created_utc: string;
  recorder: { tool: string; valgrind?: string | null; hw_lab: string; limit?: number; source?: string };
  probe: { arch?: string; cpu_model?: string; kernel?: string | null; os?: string | null; base_page_bytes?: number | null; in_vm?: boolean | null };
  page_size: 4096;
  accesses: number;
  pages: number;
  counts: { load: number; store: number; fetch: number; modify: number };
  partial: boolean;
  partial_reason?: string;
  program_exit: { code: number | null; signal: number | null };
  body: { compression: 'gzip'; bytes: number };
}

export type TraceErrorKind = 'not-trace' | 'version' | 'truncated' | 'corrupt' | 'oversized';
export class TraceFormatError extends Error {
  constructor(kind: TraceErrorKind, message: string);
  readonly kind: TraceErrorKind;
}

export const MAGIC: number[];
export const VERSION: 1;
export const PREFIX_BYTES: 16;
export const HEADER_MAX: 65536;
export const MAX_ACCESSES: number;

export function readHeader(bytes: Uint8Array, fileSize?: number): { header: TraceHeader; bodyOffset: number };
export function checkHeader(header: unknown): void;
export function checkBody(raw: Uint8Array, header: TraceHeader): {
  accesses: number; pages: number; counts: { load: number; store: number; fetch: number; modify: number };
};
