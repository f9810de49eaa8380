/* The line above a lesson's exercises for a student in a class: normally "you are in
 * class ... as ...", but "closed at ..." or "deleted by your teacher" as soon as the page
 * knows (a record refused, or the class read again: at the start and every minute while
 * the page is open), saying that their answers stay in this browser. */
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { ApiError } from '../progress/api';
import { onStudentChange, type InClass } from '../progress/student';
import { getClass, getCourse } from './api';
import { setStanding, standingOf, type Standing } from './standing';
import { when } from './StudentCourse';

export const RECHECK_MS = 60_000;

/** What the server says now about the class, recorded as its standing (a class found
 * deleted, or closed for good by its teacher or its closing time). */
export async function recheck(code: string): Promise<void> {
  try {
    // the class itself (every server has this route): 404 is a class deleted
    const cls = await getClass(code);
    let closedAt = cls.closed_at ?? null;
    if (!closedAt) {
      // a closing time passed (servers with the course routes)
      const c = await getCourse(code).catch(() => null);
      const s = c?.settings;
      if (s && s.late !== 'accept' && s.closes_at && Date.parse(s.closes_at) <= Date.parse(c.now)) closedAt = s.closes_at;
    }
    const now: Standing | null = standingOf(code);
    if (closedAt && !now) setStanding(code, { kind: 'closed', closed_at: closedAt, lesson: null, seen: new Date().toISOString() });
  } catch (e) {
    if (e instanceof ApiError && e.status === 404 && standingOf(code)?.kind !== 'deleted') setStanding(code, { kind: 'deleted', seen: new Date().toISOString() });
  }
}

export function ClassLine({ klass }: { klass: InClass }) {
  const { t } = useTranslation();
  const { t: tr, i18n } = useTranslation('results');
  const [standing, set] = useState(() => standingOf(klass.code));
  useEffect(() => {
    set(standingOf(klass.code));
    const off = onStudentChange(() => set(standingOf(klass.code)));
    void recheck(klass.code);
    const timer = setInterval(() => { void recheck(klass.code); }, RECHECK_MS);
    return () => { off(); clearInterval(timer); };
  }, [klass.code]);
  if (standing?.kind === 'deleted') return <p className="notice in-class" role="alert" data-testid="in-class">{tr('course.deleted', { code: klass.code, at: when(standing.seen, i18n.language) })}</p>;
  if (standing?.kind === 'closed') {
    return <p className="notice in-class" role="alert" data-testid="in-class">{tr(standing.lesson ? 'course.lessonClosed' : 'course.closed', { code: klass.code, lesson: standing.lesson, since: standing.closed_at ? tr('course.since', { at: when(standing.closed_at, i18n.language) }) : '' })} {tr('course.keptHere')}</p>;
  }
  return <p className="muted in-class" data-testid="in-class">{t('inClass', { code: klass.code, name: klass.name })}</p>;
}
