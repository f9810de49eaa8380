/* The class's progress as lists, a page at a time (GET /api/classes/{code}/progress and
 * .../progress/students, dashboard.mjs): what the dashboard loads first, and again from
 * the position where the event stream skipped records (its `overflow` event). */
import type { ProgressRecord } from './board';

/** Records a page, as the server answers at most. */
export const PAGE = 500;

/** A teacher's GET: the JSON answer, or an Error with the server's message and `status`. */
export async function getJson<T>(url: string, token: string, signal?: AbortSignal): Promise<T> {
  const r = await fetch(url, { headers: { Authorization: `Bearer ${token}` }, signal });
  const text = await r.text();
  let body: unknown = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  if (!r.ok) throw Object.assign(new Error((body as { message?: string } | null)?.message ?? `HTTP ${r.status}`), { status: r.status });
  return body as T;
}

/**
 * The class's records after `cursor` (a list's end_cursor or an event's id; null: from the
 * first) up to the last, page by page, each page to `onPage` as it comes. Resolves with the
 * position after the last record listed (`cursor` when none was), which the event stream
 * takes as `after`.
 */
export async function listRecords(code: string, token: string, cursor: string | null, onPage: (records: ProgressRecord[]) => void,
  signal?: AbortSignal): Promise<string | null> {
  const base = `/api/classes/${encodeURIComponent(code)}/progress`;
  let end = cursor;
  for (let next = cursor; ;) {
    const p: { records: ProgressRecord[]; next_cursor: string | null; end_cursor: string | null } = await getJson(`${base}?limit=${PAGE}${next ? `&cursor=${encodeURIComponent(next)}` : ''}`, token, signal);
    onPage(p.records);
    end = p.end_cursor ?? end;
    next = p.next_cursor;
    if (!next) return end;
  }
}
