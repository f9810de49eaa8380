// Closing times that hold: after a class's (or a lesson's) closing time the server takes
// no more progress records for it, unless the teacher accepts late work (then they are
// stored and the gradebook marks them late). One check, called by the progress route
// before anything is graded or stored; the time is the server's, never the page's.
import { CourseStore } from './store.mjs';
import { closingOf } from './scoring.mjs';

const stores = new WeakMap();
/** The course's queries over a store (one per store, so the settings cache is shared). */
export function courseOf(store) {
  let c = stores.get(store);
  if (!c) { c = new CourseStore(store); stores.set(store, c); }
  return c;
}

export class ClosedError extends Error {
  constructor(message, extra) { super(message); this.statusCode = 409; this.error = 'Conflict'; this.need = 'open_class'; this.extra = extra; }
}

/** "2026-11-27 18:00 UTC" */
export const utc = (iso) => `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;

/**
 * Throws a ClosedError (409) when a record's lesson has closed and late work is refused:
 * the answer names the closing time (closed_at) and the lesson when it was the lesson's own.
 * @param {import('../db.mjs').Store} store @param {{code: string}} cls
 * @param {{lesson: string}[]} records @param {number} now the server's clock (ms)
 */
export async function refuseAfterClosing(store, cls, records, now = Date.now()) {
  const s = await courseOf(store).settings(cls.code);
  if (s.late === 'accept' || (!s.closes_at && !Object.keys(s.lesson_closes).length)) return;
  for (const r of records) {
    const t = closingOf(s, r.lesson);
    if (t && Date.parse(t) <= now) {
      const own = !!s.lesson_closes[r.lesson];
      throw new ClosedError(`${own ? `lesson "${r.lesson}" of ` : ''}class ${cls.code} closed at ${utc(t)}: answers are no longer taken${own ? ' for this lesson' : ''}; your answers stay in your browser (ask your teacher if you need more time)`,
        { closed_at: t, lesson: own ? r.lesson : null });
    }
  }
}
