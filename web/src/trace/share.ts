/* The class server's trace routes (web/server/traces.mjs): a trace shared with its replay
 * report, the class's list, one trace's file, removal with the receipt. */
import type { TraceHeader } from './format.mjs';
import type { ReplayReport } from './protocol';

/** The largest trace the class server keeps (web/server/traces.mjs, TRACE_MAX_BYTES). */
export const TRACE_UPLOAD_MAX = 64 * 2 ** 20;

export interface ClassTrace { id: string; created_at: string; label: string; header: TraceHeader; report: ReplayReport }

async function api<T>(path: string, init?: RequestInit): Promise<T> {
  const r = await fetch(path, init);
  const text = await r.text();
  let body: unknown = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  if (!r.ok) {
    const wait = Number(r.headers.get('Retry-After') ?? NaN);
    throw Object.assign(new Error((body as { message?: string } | null)?.message ?? `HTTP ${r.status}`), { status: r.status, ...(Number.isFinite(wait) && wait >= 0 ? { retryAfter: wait } : {}) });
  }
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

/** How many times an upload is sent again after a 503 with Retry-After (the server busy
 * checking other traces, or its database away for a moment), and the longest wait. Each
 * wait is Retry-After to twice that, at random, so a class that shared at once does not
 * come back at once. */
const SHARE_RETRIES = 5;
const RETRY_WAIT_MAX_S = 30;

/** A label the server takes (web/server/limits.mjs, textProblem for names): control,
 * bidirectional and line or paragraph separator characters as spaces (a file's name may
 * hold them), at most 80 whole characters. */
export function shareLabel(label: string): string {
  const plain = label.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]+/g, ' ').replace(/\s+/g, ' ').trim();
  let out = '';
  for (const ch of plain) { if (out.length + ch.length > 80) break; out += ch; }
  return out;
}

export async function shareTrace(code: string, blob: Blob, report: ReplayReport, label: string): Promise<{ id: string; receipt: string }> {
  const trace = base64(new Uint8Array(await blob.arrayBuffer()));
  const body = JSON.stringify({ label: shareLabel(label), report, trace });
  let r: { id: string; receipt: string };
  for (let attempt = 0; ; attempt++) {
    try {
      r = await api<{ id: string; receipt: string }>(`/api/classes/${encodeURIComponent(code)}/traces`, {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, body,
      });
      break;
    } catch (e) {
      const { status, retryAfter } = e as { status?: number; retryAfter?: number };
      if (status !== 503 || retryAfter === undefined || attempt >= SHARE_RETRIES) throw e;
      await new Promise((resolve) => setTimeout(resolve, 1000 * Math.min(retryAfter, RETRY_WAIT_MAX_S) * (1 + Math.random())));
    }
  }
  try { localStorage.setItem(receiptsKey(code), JSON.stringify([...traceReceipts(code), { id: r.id, receipt: r.receipt }])); } catch { /* private mode */ }
  return r;
}

/** Every trace of the class: the server sends a page at a time (at most 500), each with
 * the cursor of the next (null on the last). */
export async function listClassTraces(code: string): Promise<ClassTrace[]> {
  const all: ClassTrace[] = [];
  const seen = new Set<string>();
  let cursor: string | null = null;
  do {
    const q: string = cursor === null ? '' : `?cursor=${encodeURIComponent(cursor)}`;
    const page: { traces: ClassTrace[]; next_cursor?: string | null } = await api(`/api/classes/${encodeURIComponent(code)}/traces${q}`);
    all.push(...page.traces);
    cursor = page.next_cursor ?? null;
    if (cursor !== null && seen.has(cursor)) break; // a cursor seen before would never end
    if (cursor !== null) seen.add(cursor);
  } while (cursor !== null);
  return all;
}

export async function fetchClassTrace(code: string, id: string): Promise<Blob> {
  const r = await fetch(`/api/classes/${encodeURIComponent(code)}/traces/${encodeURIComponent(id)}/file`);
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  return r.blob();
}
