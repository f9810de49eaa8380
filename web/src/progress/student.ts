/* Who the learner is in a class: the student the class server made when they joined
 * (POST /api/classes/{code}/students), kept in localStorage as
 * `vmemlab-student:{CODE}` = {"id", "name", "receipt"}; the receipt is their token for
 * sending progress and for leaving. `vmemlab-joined` names the class their lessons count
 * for (the one they joined or opened last); without it the page is outside any class. */

export interface Student { id: string; name: string; receipt: string }
export interface InClass extends Student { code: string }

const studentKey = (code: string) => `vmemlab-student:${code.toUpperCase()}`;
const JOINED = 'vmemlab-joined';
/** Sent on this window when the learner joins or leaves (localStorage's own `storage`
 * event tells the other tabs). */
export const STUDENT_EVENT = 'vmemlab-student';

function read<T>(k: string): T | null {
  try { const v = localStorage.getItem(k); return v ? JSON.parse(v) as T : null; } catch { return null; }
}
function write(k: string, v: unknown) {
  try { if (v === null) localStorage.removeItem(k); else localStorage.setItem(k, JSON.stringify(v)); } catch { /* storage may be off */ }
  if (typeof window !== 'undefined') window.dispatchEvent(new Event(STUDENT_EVENT));
}

const RECEIPT_RE = /^[A-Za-z0-9_-]{10,100}$/;
/** The student this browser joined `code` as, or null. */
export function studentOf(code: string): Student | null {
  const s = read<Student>(studentKey(code));
  return s && typeof s.id === 'string' && typeof s.name === 'string' && typeof s.receipt === 'string' && RECEIPT_RE.test(s.receipt) ? s : null;
}
export const saveStudent = (code: string, s: Student) => write(studentKey(code), { id: s.id, name: s.name, receipt: s.receipt });
export const forgetStudent = (code: string) => write(studentKey(code), null);

/** The class the lessons count for, if the learner is a student of it. */
export function currentClass(): InClass | null {
  const code = read<string>(JOINED);
  if (typeof code !== 'string') return null;
  const s = studentOf(code);
  return s ? { ...s, code } : null;
}
export const setCurrentClass = (code: string | null) => write(JOINED, code === null ? null : code.toUpperCase());

/** Calls `f` whenever the learner joins or leaves a class, here or in another tab. */
export function onStudentChange(f: () => void): () => void {
  const storage = (e: StorageEvent) => { if (e.key === null || e.key === JOINED || e.key.startsWith('vmemlab-student:')) f(); };
  window.addEventListener(STUDENT_EVENT, f);
  window.addEventListener('storage', storage);
  return () => { window.removeEventListener(STUDENT_EVENT, f); window.removeEventListener('storage', storage); };
}
