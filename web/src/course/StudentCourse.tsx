/* A joined student's course, under their name on the Results tab: when the class (or a
 * lesson) closes, what the server said if it refused their answers (closed, or the class
 * deleted; their answers stay in this browser, marked not sent), "Continue on another
 * device" (a one-time code, its link and QR code: no password), and their own scores. */
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { qrPath } from '../results/JoinPanel';
import { Said, type Saying } from '../results/Said';
import { onGraded } from '../progress/sync';
import type { Student } from '../progress/student';
import { getCourse, makeLink, myScores, type Course, type GradedLesson, type Scores } from './api';

/** A time as the learner's clock shows it, with the UTC it is. */
export const when = (iso: string, lang: string) => `${new Date(iso).toLocaleString(lang, { dateStyle: 'medium', timeStyle: 'short' })} (${iso.slice(0, 16).replace('T', ' ')} UTC)`;
const num = (x: number, lang: string) => x.toLocaleString(lang, { maximumFractionDigits: 2 });

export function StudentCourse({ code, student }: { code: string; student: Student }) {
  const { t, i18n } = useTranslation('results');
  const lang = i18n.language;
  const [course, setCourse] = useState<Course | null>(null);
  const [mine, setMine] = useState<{ lessons: GradedLesson[]; scores: Scores } | null>(null);
  const [link, setLink] = useState<{ code: string; url: string; expires_at: string } | null>(null);
  const [err, setErr] = useState<Saying | null>(null);

  useEffect(() => {
    let live = true;
    // A server without the course routes (an older one) answers something else: nothing shown.
    getCourse(code).then((c) => { if (live && c?.settings) setCourse(c); }, () => { /* no course */ });
    const read = () => myScores(code, student.receipt).then((s) => { if (live && Array.isArray(s?.lessons) && s.scores) setMine(s); }, () => { /* shown when it comes */ });
    void read();
    const off = onGraded((c) => { if (c.toUpperCase() === code.toUpperCase()) void read(); });
    return () => { live = false; off(); };
  }, [code, student.receipt]);

  const closes = course?.settings.closes_at;
  const open = async () => {
    try { setLink(await makeLink(code, student.receipt)); setErr(null); } catch (e) { setErr({ key: 'course.linkFailed', raw: (e as Error).message }); }
  };
  const qr = link ? qrPath(link.url) : null;
  return (
    <div className="student-course" data-testid="student-course">
      {closes && <p className="muted" data-testid="closes-at">{t(Date.parse(closes) > Date.now() ? 'course.closesAt' : 'course.closedAt', { at: when(closes, lang) })}</p>}
      {mine && (
        <table className="my-scores" data-testid="my-scores">
          <caption>{t('course.myScores')}</caption>
          <thead><tr><th scope="col">{t('course.lesson')}</th><th scope="col">{t('course.score')}</th></tr></thead>
          <tbody>
            {mine.lessons.map((l) => {
              const s = mine.scores.lessons[l.id];
              return <tr key={l.id}><th scope="row">{l.title[lang] ?? l.title.en}</th><td className="num">{t('course.outOf', { score: num(s?.score ?? 0, lang), possible: num(l.possible, lang) })}{s?.late ? ` ${t('course.late')}` : ''}</td></tr>;
            })}
            <tr><th scope="row">{t('course.total')}</th><td className="num" data-testid="my-total">{t('course.outOf', { score: num(mine.scores.total, lang), possible: num(mine.scores.possible, lang) })}</td></tr>
          </tbody>
        </table>
      )}
      <details className="device-link" onToggle={(e) => { if ((e.target as HTMLDetailsElement).open && !link) void open(); }}>
        <summary data-testid="device-link-open">{t('course.anotherDevice')}</summary>
        {link && qr && (
          <div data-testid="device-link">
            <p>{t('course.linkHow', { at: when(link.expires_at, lang) })}</p>
            <p><code className="device-code" data-testid="device-link-code">{link.code}</code> <a href={link.url}>{link.url}</a></p>
            <svg className="join-qr" role="img" aria-label={t('course.linkQr')} viewBox={`0 0 ${qr.side} ${qr.side}`} shapeRendering="crispEdges" width={160} height={160}>
              <rect width={qr.side} height={qr.side} fill="#fff" /><path d={qr.d} fill="#000" />
            </svg>
            <p><button type="button" onClick={() => void open()}>{t('course.newCode')}</button></p>
          </div>
        )}
      </details>
      {err && <p className="error" role="alert"><Said t={t} say={err} /></p>}
    </div>
  );
}
