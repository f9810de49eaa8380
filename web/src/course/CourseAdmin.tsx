/* The teacher's course, under the class's dashboard: load the roster (pasted, or the CSV
 * Canvas or Moodle exports), say how exercises are scored and when the class closes, see
 * every student's scores, merge two rows of one student, and download the gradebook in
 * the vmemlab, Canvas or Moodle layout (the teacher guide gives each LMS's import steps). */
import { useCallback, useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { ApiError } from '../progress/api';
import { Said, type Saying } from '../results/Said';
import { downloadGrades, loadRoster, merge, saveSettings, scores, type GradeRow, type GradedLesson, type Settings } from './api';
import './course.css';

const num = (x: number, lang: string) => x.toLocaleString(lang, { maximumFractionDigits: 2 });
/** An ISO time as a datetime-local input's value (the teacher's own clock), and back. */
const toLocal = (iso: string | null) => (iso ? new Date(new Date(iso).getTime() - new Date(iso).getTimezoneOffset() * 60_000).toISOString().slice(0, 16) : '');
const fromLocal = (v: string) => (v ? new Date(v).toISOString() : null);

export function CourseAdmin({ code, token }: { code: string; token: string }) {
  const { t, i18n } = useTranslation('results');
  const lang = i18n.language;
  const [lessons, setLessons] = useState<GradedLesson[]>([]);
  const [rows, setRows] = useState<GradeRow[]>([]);
  const [s, setS] = useState<Settings | null>(null);
  const [roster, setRoster] = useState('');
  const [from, setFrom] = useState('');
  const [into, setInto] = useState('');
  const [say, setSay] = useState<{ ok: boolean; say: Saying } | null>(null);
  // false: this server has no course routes (an older one): the section is left out
  const [here, setHere] = useState<boolean | null>(null);

  const reload = useCallback(async () => {
    try {
      const r = await scores(code, token);
      if (!Array.isArray(r?.students) || !Array.isArray(r.lessons)) { setHere(false); return; }
      setHere(true);
      setLessons(r.lessons); setRows(r.students); setS((old) => old ?? r.settings);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) { setHere(false); return; }
      setSay({ ok: false, say: { key: 'course.failed', raw: (e as Error).message } });
    }
  }, [code, token]);
  useEffect(() => { void reload(); const timer = setInterval(() => { void reload(); }, 30_000); return () => clearInterval(timer); }, [reload]);

  const act = async (f: () => Promise<Saying>) => {
    try { setSay({ ok: true, say: await f() }); await reload(); } catch (e) { setSay({ ok: false, say: { key: 'course.failed', raw: (e as Error).message } }); }
  };
  const sendRoster = (text: string) => act(async () => {
    const r = await loadRoster(code, token, text);
    setRoster('');
    return { key: 'course.rosterLoaded', values: { added: r.added, updated: r.updated, count: r.students } };
  });
  const save = () => s && act(async () => {
    const c = await saveSettings(code, token, s);
    setS(c.settings);
    return { key: 'course.saved' };
  });
  const joined = rows.filter((r) => r.student_id);
  const set = <K extends keyof Settings>(k: K, v: Settings[K]) => setS((o) => (o ? { ...o, [k]: v } : o));
  const pct = (k: 'hint_cost' | 'shown_cost' | 'late_cost') => (
    <input type="number" min={0} max={100} step={5} value={Math.round((s?.[k] ?? 0) * 100)} onChange={(e) => set(k, Math.min(100, Math.max(0, Number(e.target.value) || 0)) / 100)} data-testid={`course-${k}`} />
  );

  if (!here) return say ? <p className="error" role="alert"><Said t={t} say={say.say} /></p> : null;
  return (
    <section className="course-admin" aria-label={t('course.heading')} data-testid="course-admin">
      <h4>{t('course.heading')}</h4>
      <details>
        <summary>{t('course.rosterHeading')}</summary>
        <p className="muted">{t('course.rosterHow')}</p>
        <textarea value={roster} onChange={(e) => setRoster(e.target.value)} rows={5} cols={60} data-testid="roster-text" placeholder={'S001, Aiko Tanaka\nS002, Bea Martin'} maxLength={512 * 1024} />
        <p>
          <button type="button" disabled={!roster.trim()} onClick={() => void sendRoster(roster)} data-testid="roster-load">{t('course.rosterLoad')}</button>{' '}
          <label>{t('course.rosterFile')} <input type="file" accept=".csv,.txt,text/csv,text/plain" data-testid="roster-file"
            onChange={(e) => { const f = e.target.files?.[0]; if (f) void f.text().then(sendRoster); e.target.value = ''; }} /></label>
        </p>
      </details>
      {s && (
        <details>
          <summary>{t('course.gradingHeading')}</summary>
          <p><label>{t('course.counts')} <select value={s.counts} onChange={(e) => set('counts', e.target.value as Settings['counts'])} data-testid="course-counts">
            {(['best', 'first', 'last'] as const).map((c) => <option key={c} value={c}>{t(`course.count.${c}`)}</option>)}
          </select></label></p>
          <p><label>{t('course.hintCost')} {pct('hint_cost')} %</label> <label>{t('course.shownCost')} {pct('shown_cost')} %</label></p>
          <p><label>{t('course.closesLabel')} <input type="datetime-local" value={toLocal(s.closes_at)} onChange={(e) => set('closes_at', fromLocal(e.target.value))} data-testid="course-closes" /></label>{' '}
            <button type="button" onClick={() => set('closes_at', null)}>{t('course.noClosing')}</button></p>
          <p><label>{t('course.lateLabel')} <select value={s.late} onChange={(e) => set('late', e.target.value as Settings['late'])} data-testid="course-late">
            <option value="refuse">{t('course.lateRefuse')}</option><option value="accept">{t('course.lateAccept')}</option>
          </select></label>{s.late === 'accept' && <> <label>{t('course.lateCost')} {pct('late_cost')} %</label></>}</p>
          <p><button type="button" onClick={() => void save()} data-testid="course-save">{t('course.save')}</button></p>
        </details>
      )}
      <div className="table-wrap">
        <table className="course-scores" data-testid="course-scores">
          <caption>{t('course.scoresCaption')}</caption>
          <thead><tr><th scope="col">{t('course.name')}</th><th scope="col">{t('course.id')}</th>
            {lessons.map((l) => <th scope="col" key={l.id} title={l.title[lang] ?? l.title.en}>{l.title[lang] ?? l.title.en} <span className="muted">/{num(l.possible, lang)}</span></th>)}
            <th scope="col">{t('course.total')}</th></tr></thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.entry ?? r.student_id!} data-student={r.student_id ?? ''}>
                <th scope="row">{r.name}{!r.student_id && <span className="muted"> {t('course.notJoined')}</span>}{!r.entry && <span className="muted"> {t('course.notOnRoster')}</span>}</th>
                <td>{r.sis_id ?? r.email ?? ''}</td>
                {lessons.map((l) => {
                  const c = r.scores?.lessons[l.id];
                  return <td key={l.id} className="num">{c ? `${num(c.score, lang)}${c.late ? ` ${t('course.late')}` : ''}` : '–'}</td>;
                })}
                <td className="num">{r.scores ? num(r.scores.total, lang) : '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {joined.length > 1 && (
        <form className="merge" onSubmit={(e) => { e.preventDefault(); if (from && into && from !== into) void act(async () => { const r = await merge(code, token, into, from); setFrom(''); return { key: 'course.merged', values: { count: r.records } }; }); }}>
          <label>{t('course.mergeFrom')} <select value={from} onChange={(e) => setFrom(e.target.value)} data-testid="merge-from" required>
            <option value="" />{joined.map((r) => <option key={r.student_id!} value={r.student_id!}>{r.name}</option>)}</select></label>{' '}
          <label>{t('course.mergeInto')} <select value={into} onChange={(e) => setInto(e.target.value)} data-testid="merge-into" required>
            <option value="" />{joined.filter((r) => r.student_id !== from).map((r) => <option key={r.student_id!} value={r.student_id!}>{r.name}</option>)}</select></label>{' '}
          <button type="submit" disabled={!from || !into || from === into} data-testid="merge-go">{t('course.merge')}</button>
        </form>
      )}
      <p className="grades-download">{t('course.download')}{' '}
        {(['plain', 'canvas', 'moodle'] as const).map((f) => (
          <button type="button" key={f} data-testid={`grades-${f}`} onClick={() => void downloadGrades(code, token, f, lang).catch((e) => setSay({ ok: false, say: { key: 'course.failed', raw: (e as Error).message } }))}>{t(`course.format.${f}`)}</button>
        ))}
      </p>
      {say && <p className={say.ok ? 'okmsg' : 'error'} role={say.ok ? 'status' : 'alert'} data-testid="course-said"><Said t={t} say={say.say} /></p>}
    </section>
  );
}
