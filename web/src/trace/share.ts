/* The class server's trace routes (web/server/traces.mjs): a trace shared with its replay
 * report, the class's list, one trace's file, removal with the receipt. */
import type { TraceHeader } from './format.mjs';
import type { ReplayReport } from './protocol';

/** The largest trace the class server keeps (web/server/traces.mjs, TRACE_MAX_BYTES). */
export const TRACE_UPLOAD_MAX = 4 * 2 ** 20;

export interface ClassTrace { id: string; created_at: string; label: string; header: TraceHeader; report: ReplayReport }

async function api<T>(path: string, init?: RequestInit): Promise<T> {
  const r = await fetch(path, init);
  const text = await r.text();
  let body: unknown = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  if (!r.ok) throw Object.assign(new Error((body as { message?: string } | null)?.message ?? `HTTP ${r.status}`), { status: r.status });
  return body as T;
}

function base64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

const receiptsKey = (code: string) => `vmemlab-trace-receipts:${code}`;
export function traceReceipts(code: string): { id: string; receipt: string }[] {
  try { return JSON.parse(localStorage.getItem(receiptsKey(code)) ?? '[]') as { id: string; receipt: string }[]; } catch { return []; }
}

export async function shareTrace(code: string, blob: Blob, report: ReplayReport, label: string): Promise<{ id: string; receipt: string }> {
  const trace = base64(new Uint8Array(await blob.arrayBuffer()));
  const r = await api<{ id: string; receipt: string }>(`/api/classes/${encodeURIComponent(code)}/traces`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ label: label.slice(0, 80), report, trace }),
  });
  try { localStorage.setItem(receiptsKey(code), JSON.stringify([...traceReceipts(code), { id: r.id, receipt: r.receipt }])); } catch { /* private mode */ }
  return r;
}

export async function listClassTraces(code: string): Promise<ClassTrace[]> {
  return (await api<{ traces: ClassTrace[] }>(`/api/classes/${encodeURIComponent(code)}/traces`)).traces;
}

export async function fetchClassTrace(code: string, id: string): Promise<Blob> {
  const r = await fetch(`/api/classes/${encodeURIComponent(code)}/traces/${encodeURIComponent(id)}/file`);
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  return r.blob();
}
