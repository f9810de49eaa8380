/* The class server's course routes (web/server/course/routes.mjs), for the page: the
 * roster, joining as a roster student, a second device, merging, the grading settings and
 * closing times, scores and the gradebook files. */
import { ApiError, call as request } from '../progress/api';
import type { Student } from '../progress/student';

const call = async <T>(path: string, init: RequestInit = {}): Promise<T> => (await request<T>(path, init)).body;
const path = (code: string, rest: string) => `/api/classes/${encodeURIComponent(code)}${rest}`;
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const json = (token: string | null, body: unknown, method = 'POST'): RequestInit => ({
  method, headers: { 'Content-Type': 'application/json', ...(token ? bearer(token) : {}) }, body: JSON.stringify(body),
});

export interface Settings {
  counts: 'first' | 'best' | 'last'; hint_cost: number; shown_cost: number; late: 'refuse' | 'accept'; late_cost: number;
  closes_at: string | null; lesson_closes: Record<string, string>; points: Record<string, number[]>; lessons: string[] | null;
}
export interface GradedLesson { id: string; title: Record<string, string>; points: number[]; possible: number }
export interface Course { class: string; closed_at: string | null; now: string; lessons: GradedLesson[]; settings: Settings }
export interface Scores { lessons: Record<string, { score: number; possible: number; late: boolean; exercises: (number | null)[] }>; total: number; possible: number; late: string[] }
export interface GradeRow { entry: string | null; student_id: string | null; name: string; sis_id: string | null; email: string | null; section: string | null; scores: Scores | null }
export interface RosterName { entry: string; name: string; joined: boolean }

const asStudent = (b: { student_id: string; receipt: string; name: string }): Student => ({ id: b.student_id, receipt: b.receipt, name: b.name });

export const getClass = (code: string) => call<{ code: string; name: string; closed_at: string | null }>(path(code, ''));
export const getCourse = (code: string) => call<Course>(path(code, '/course'));
export const rosterNames = (code: string) => call<{ students: RosterName[] }>(path(code, '/roster/names')).then((r) => r.students);
export const joinRoster = async (code: string, by: { id: string } | { entry: string }) => asStudent(await call(path(code, '/roster/join'), json(null, by)));
export const makeLink = (code: string, receipt: string) => call<{ code: string; url: string; expires_at: string }>(path(code, '/students/me/link'), json(receipt, {}));
export const claimLink = async (code: string, link: string) => asStudent(await call(path(code, '/students/link'), json(null, { code: link })));
export const myScores = (code: string, receipt: string) => call<{ lessons: GradedLesson[]; scores: Scores; settings: Settings }>(path(code, '/students/me/scores'), { headers: bearer(receipt) });

export const saveSettings = (code: string, token: string, s: Partial<Settings>) => call<Course>(path(code, '/course'), json(token, s, 'PUT'));
export const loadRoster = (code: string, token: string, text: string) => call<{ added: number; updated: number; students: number }>(path(code, '/roster'), {
  method: 'POST', headers: { 'Content-Type': 'text/csv; charset=utf-8', ...bearer(token) }, body: text,
});
export const scores = (code: string, token: string) => call<{ lessons: GradedLesson[]; students: GradeRow[]; settings: Settings }>(path(code, '/scores'), { headers: bearer(token) });
export const merge = (code: string, token: string, into: string, from: string) => call<{ records: number }>(path(code, '/students/merge'), json(token, { into, from }));

/** Downloads a gradebook file (format plain, canvas or moodle) in the page's language. */
export async function downloadGrades(code: string, token: string, format: 'plain' | 'canvas' | 'moodle', lang: string) {
  const r = await fetch(path(code, `/grades?format=${format}&lang=${['en', 'ja', 'zh'].includes(lang) ? lang : 'en'}`), { headers: bearer(token) });
  if (!r.ok) throw new ApiError((await r.json().catch(() => null))?.message ?? `HTTP ${r.status}`, r.status);
  const a = document.createElement('a');
  a.href = URL.createObjectURL(await r.blob());
  a.download = `vmemlab-${code}-grades${format === 'plain' ? '' : `-${format}`}.csv`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
