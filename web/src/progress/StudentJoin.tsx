/* Joining a class as a student, on the Results tab's class panel: a name (unique in the
 * class; only the teacher sees it) and the class server answers with a receipt this
 * browser keeps (student.ts). From then on the lessons give this student their own variant
 * of each exercise and send their attempts and done marks to the class (sync.ts). Shows
 * how many records still wait to go out, and lets the student leave, which deletes all they
 * sent to this class. */
import { useEffect, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { Said, type Saying } from '../results/Said';
import { saveStudentName, studentName } from '../results/store';
import { ApiError, joinClass, leaveClass } from './api';
import { onOutboxChange, unqueue, waiting } from './db';
import { currentClass, forgetStudent, onStudentChange, saveStudent, setCurrentClass, studentOf } from './student';
import { kick, sendHeld, startSync } from './sync';
import { RosterJoin } from '../course/RosterJoin';
import { StudentCourse, when } from '../course/StudentCourse';
import { standingOf } from '../course/standing';
import type { Student } from './student';

const NAME_MAX = 60;

export function StudentJoin({ code }: { code: string }) {
  const { t, i18n } = useTranslation('results');
  const [student, setStudent] = useState(() => studentOf(code));
  const [name, setName] = useState(() => studentOf(code)?.name ?? studentName());
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<Saying | null>(null);
  const [note, setNote] = useState<Saying | null>(null);
  const [pending, setPending] = useState(0);
  const [standing, setStandingState] = useState(() => standingOf(code));
  const [confirmLeave, setConfirmLeave] = useState(false);

  useEffect(() => {
    setStudent(studentOf(code));
    // A class this browser joined before is the one the lessons count for while it is open.
    if (studentOf(code)) { setCurrentClass(code); void startSync(); }
    setStandingState(standingOf(code));
    return onStudentChange(() => { setStudent(studentOf(code)); setStandingState(standingOf(code)); });
  }, [code]);
  useEffect(() => {
    let live = true;
    const count = () => { waiting(code).then((o) => { if (live) setPending(o.length); }, () => { /* not kept */ }); };
    count();
    const off = onOutboxChange(count);
    return () => { live = false; off(); };
  }, [code]);

  const join = async () => {
    const nm = name.normalize('NFC').trim();
    if (!nm || busy) return;
    setBusy(true);
    try {
      // With the receipt of an earlier join under this name, the server gives back that student.
      const prior = studentOf(code);
      const s = await joinClass(code, nm, prior && prior.name === nm ? prior.receipt : undefined);
      saveStudent(code, s);
      setCurrentClass(code);
      saveStudentName(s.name); // result uploads carry the same name
      setErr(null); setNote(null);
      void kick();
    } catch (e) {
      // 409 is a name taken, or (need: open_class) a class its teacher has closed
      const taken = e instanceof ApiError && e.status === 409 && e.need !== 'open_class';
      setErr(taken ? { key: 'student.taken', values: { name: nm } } : { key: 'student.joinFailed', raw: (e as Error).message });
    } finally { setBusy(false); }
  };

  // Joined another way (a roster name or ID, a device code): the same as joining by name.
  const joined = (s: Student) => {
    saveStudent(code, s);
    setCurrentClass(code);
    saveStudentName(s.name);
    setErr(null); setNote(null);
    void kick();
  };

  const leave = async () => {
    if (!student || busy) return;
    setConfirmLeave(false);
    setBusy(true);
    try {
      const r = await leaveClass(code, student.receipt).catch((e) => {
        if (e instanceof ApiError && (e.status === 403 || e.status === 404)) return { records: 0 }; // already gone
        throw e;
      });
      forgetStudent(code);
      if (currentClass()?.code === code.toUpperCase()) setCurrentClass(null);
      await unqueue((await waiting(code)).map((o) => o.id));
      setErr(null);
      setNote({ key: 'student.left', values: { code, count: r.records } });
    } catch (e) {
      setErr({ key: 'student.leaveFailed', raw: (e as Error).message });
    } finally { setBusy(false); }
  };

  return (
    <div className="student-join" data-testid="student-join">
      {standing?.kind === 'deleted' && <p className="error" role="alert" data-testid="class-gone">{t('course.deleted', { code, at: when(standing.seen, i18n.language) })}</p>}
      {standing?.kind === 'closed' && (
        <p className="error" role="alert" data-testid="class-closed-now">
          {t(standing.lesson ? 'course.lessonClosed' : 'course.closed', { code, lesson: standing.lesson, since: standing.closed_at ? t('course.since', { at: when(standing.closed_at, i18n.language) }) : '' })}{' '}
          {pending > 0 && <>{t('course.notSent', { count: pending })} <button type="button" onClick={() => void sendHeld(code)} data-testid="send-held">{t('course.sendNow')}</button></>}
        </p>
      )}
      {student ? (
        <>
          <p data-testid="student-joined">
            <Trans t={t} i18nKey="student.joined" values={{ name: student.name }} components={{ strong: <strong /> }} />{' '}
            {!confirmLeave && <button type="button" onClick={() => setConfirmLeave(true)} disabled={busy} data-testid="student-leave">{t('student.leave')}</button>}
          </p>
          {confirmLeave && (
            <p role="alert" data-testid="student-leave-confirm">
              {t('course.leaveConfirm', { code })}{' '}
              <button type="button" className="danger" onClick={() => void leave()} disabled={busy} data-testid="student-leave-yes">{t('course.leaveYes')}</button>{' '}
              <button type="button" onClick={() => setConfirmLeave(false)} autoFocus>{t('life.cancel')}</button>
            </p>
          )}
          {standing?.kind !== 'deleted' && <StudentCourse code={code} student={student} />}
        </>
      ) : (
        <RosterJoin code={code} onJoined={joined}>
        <form onSubmit={(e) => { e.preventDefault(); void join(); }}>
          <label>{t('student.name')} <input value={name} maxLength={NAME_MAX} required data-testid="student-join-name" placeholder={t('student.namePlaceholder')}
            onChange={(e) => setName(e.target.value)} /></label>{' '}
          <button type="submit" disabled={busy} aria-busy={busy}>{t('student.join')}</button>
          <span className="muted"> {t('student.why')}</span>
        </form>
        </RosterJoin>
      )}
      {pending > 0 && !standing && <p className="muted" role="status" data-testid="student-waiting">{t('student.waiting', { count: pending })}</p>}
      {err && <p className="error" role="alert" data-testid="student-error"><Said t={t} say={err} /></p>}
      {note && <p className="okmsg" role="status"><Said t={t} say={note} /></p>}
    </div>
  );
}
