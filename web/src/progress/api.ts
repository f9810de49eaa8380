/* The class server's student routes (web/server/progress.mjs), for the page. */
import type { ProgressRecord } from './db';
import type { Student } from './student';

/** A refusal or failure: status 0 when the server was not reached at all; retryAfter in
 * seconds when the server said when to try again (503, 429). */
export class ApiError extends Error {
  /** need: the server's word for what the request needs (open_class: the class is closed). */
  constructor(message: string, readonly status: number, readonly retryAfter: number | null = null, readonly need: string | null = null,
    /** the refusal's other fields (a closed class: closed_at, lesson) */
    readonly body: Record<string, unknown> | null = null) { super(message); }
}

/** A request to the class server: its status and JSON body, or an ApiError saying why not
 * (the course's routes use it too). */
export async function call<T>(path: string, init: RequestInit): Promise<{ status: number; body: T }> {
  let r: Response;
  try { r = await fetch(path, init); } catch (e) { throw new ApiError((e as Error).message || 'the class server could not be reached', 0); }
  const text = await r.text().catch(() => '');
  let body: unknown = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  if (!r.ok) {
    const ra = Number(r.headers.get('retry-after'));
    const b = body as { message?: string; need?: string } | null;
    throw new ApiError(b?.message ?? `HTTP ${r.status}`, r.status, Number.isFinite(ra) && ra > 0 ? ra : null, b?.need ?? null, b && typeof b === 'object' ? b as Record<string, unknown> : null);
  }
  return { status: r.status, body: body as T };
}
const classPath = (code: string) => `/api/classes/${encodeURIComponent(code)}`;

/** Joins `code` as `name`; with the receipt of an earlier join under that name, the server
 * answers that same student (joining again from this browser). 409: the name is taken. */
export async function joinClass(code: string, name: string, receipt?: string): Promise<Student & { class: string }> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (receipt) headers.Authorization = `Bearer ${receipt}`;
  const { body } = await call<{ student_id: string; receipt: string; name: string; class: string }>(`${classPath(code)}/students`, { method: 'POST', headers, body: JSON.stringify({ name }) });
  return { id: body.student_id, receipt: body.receipt, name: body.name, class: body.class };
}

export interface Graded { id: string; verdict: 'correct' | 'wrong' | 'empty' | 'done' | 'undone'; expected?: string }
/** Sends at most 50 records; the server grades each attempt itself and stores each id once. */
export async function sendProgress(code: string, receipt: string, records: ProgressRecord[]): Promise<{ stored: number; records: Graded[] }> {
  const { body } = await call<{ stored: number; records: Graded[] }>(`${classPath(code)}/progress`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${receipt}` }, body: JSON.stringify({ records }),
  });
  return body;
}

/** Removes the student and everything they sent from the class. */
export async function leaveClass(code: string, receipt: string): Promise<{ records: number }> {
  const { body } = await call<{ records: number }>(`${classPath(code)}/students/me`, { method: 'DELETE', headers: { Authorization: `Bearer ${receipt}` } });
  return body;
}
