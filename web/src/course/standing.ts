/* What the class server last said about a class this browser is a student of, when it
 * refused the student's records: closed (a closing time passed, or the teacher closed it:
 * when, and the lesson when it was the lesson's own) or deleted (the teacher deleted it:
 * when the page found out). Kept in localStorage as `vmemlab-standing:{CODE}`, so that
 * the Lessons and Results tabs say it at once, in every tab, and the records of a closed
 * class wait in the browser, marked not sent, until the student asks to send them. */
import { STUDENT_EVENT } from '../progress/student';

export type Standing =
  | { kind: 'closed'; closed_at: string | null; lesson: string | null; seen: string }
  | { kind: 'deleted'; seen: string };

const key = (code: string) => `vmemlab-standing:${code.toUpperCase()}`;

export function standingOf(code: string): Standing | null {
  try {
    const v = JSON.parse(localStorage.getItem(key(code)) ?? 'null') as Standing | null;
    return v && (v.kind === 'closed' || v.kind === 'deleted') ? v : null;
  } catch { return null; }
}

export function setStanding(code: string, s: Standing | null) {
  try { if (s) localStorage.setItem(key(code), JSON.stringify(s)); else localStorage.removeItem(key(code)); } catch { /* storage may be off */ }
  if (typeof window !== 'undefined') window.dispatchEvent(new Event(STUDENT_EVENT));
}
