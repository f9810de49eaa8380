/* The teacher's dashboard of a class (ClassPanel shows it with the teacher token): one row
 * per student, one column per exercise of each lesson and one for the lesson marked done;
 * each cell says solved or not, how many checks, hint used, answer shown, in symbols for
 * the eye and in words for a screen reader. Records come from the class server
 * (dashboard.mjs): the list first, then its event stream, so that new attempts appear
 * without a reload; when the stream skipped records (more arrived while the page was away
 * than it catches up on), the page says so, offers the CSV, and lists them. Selecting a name lists that student's attempts, each with a link that
 * opens its variant in the Lessons tab. The grid is a plain table: one element a cell,
 * with no state of its own, and a record redraws only its student's row (200 students over
 * 40 exercises: Dashboard.test.tsx times it). */
import { lazy, memo, Suspense, useCallback, useEffect, useMemo, useRef, useState, type ReactElement, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import { Board, cellKey, type Cell, type LessonColumns, type Row, type Student } from './board';
import { variantLink } from '../progress/seed';
import { followProgress, type LiveState } from './progressStream';
import { getJson, listRecords, PAGE } from './progressList';
import { Said, type Saying } from './Said';
import './dashboard.css';

/** The answer sheet of the class (lessons/ClassSheet.tsx), with the lessons and the engine:
 * loaded when the teacher asks for it. */
const ClassSheet = lazy(() => import('../lessons/ClassSheet'));
/** Column widths (rem), as dashboard.css sets them: the grid is laid out from these
 * alone (table-layout: fixed), never from 9,000 cells' contents. */
const NAME_REM = 10;
const CELL_REM = 3;

/** The lessons the page knows, in their order, titled in `lang` (the English title where a
 * lesson has no translation). Loaded on demand: the lessons' text stays out of this tab's
 * bundle until a teacher opens a class. */
async function lessonColumns(lang: string): Promise<LessonColumns[]> {
  const { LESSONS, LESSON_ORDER } = await import('../lessons/content');
  return LESSON_ORDER.map((id, i) => {
    const en = LESSONS.en[id];
    const own = (LESSONS as Record<string, typeof LESSONS.en>)[lang]?.[id] ?? en;
    return { id, title: `${i + 1}. ${own.meta.title}`, exercises: en.parts.filter((p) => p.type === 'exercise').length };
  });
}

type T = (key: string, options?: Record<string, unknown>) => string;
/** The words of each cell state, made once per language and state (a class has few). */
function cellWords(t: T) {
  const cache = new Map<string, string>();
  const none = t('dashboard.cell.none');
  return {
    none,
    done: t('dashboard.cell.done'),
    notDone: t('dashboard.cell.notDone'),
    of(c: Cell): string {
      const partial = !c.solved && c.score ? c.score : null;
      const k = `${c.solved ? 's' : 'w'}${c.n}${c.hint ? 'h' : ''}${c.shown ? 'a' : ''}${partial ? `p${partial.right}/${partial.of}` : ''}`;
      let w = cache.get(k);
      if (w === undefined) {
        w = [t(`dashboard.cell.${c.solved ? 'solved' : 'wrong'}`, { count: c.n }),
          partial ? t('dashboard.cell.score', { right: partial.right, of: partial.of }) : '', c.hint ? t('dashboard.cell.hint') : '', c.shown ? t('dashboard.cell.shown') : ''].filter(Boolean).join(', ');
        cache.set(k, w);
      }
      return w;
    },
  };
}
type Words = ReturnType<typeof cellWords>;

/** The symbols of a cell: ✓ solved or ✗ not yet, the number of checks, ? hint used,
 * ! answer shown, and for a walk grid not yet solved its best cells right of all, 23/26
 * (the legend says so in words). They are the cell's text; its state in
 * words is the cell's label, which a screen reader reads (and where one reads the text
 * instead, the symbols are text too, never colour alone). One element a cell and no long
 * text to lay out: a class of 200 students over 40 exercises is 9,000 cells, and the
 * same words as text in every cell tripled the time Chromium took to lay the grid out. */
const symbols = (c: Cell) => `${c.solved ? '✓' : '✗'}${c.n}${c.hint ? '?' : ''}${c.shown ? '!' : ''}`;
/** A walk grid's best try, under the symbols: a 3rem column holds "23/26" only in small type. */
const partial = (c: Cell) => (!c.solved && c.score ? <span className="part"> {c.score.right}/{c.score.of}</span> : null);

/** One student's row. Redrawn only when its row object changes (a record of theirs came),
 * the columns change or it is selected. */
const RowView = memo(function RowView({ row, lessons, words, selected, onPick }: { row: Row; lessons: LessonColumns[]; words: Words; selected: boolean; onPick: (id: string) => void }) {
  const cells: ReactElement[] = [];
  for (const l of lessons) {
    for (let i = 0; i < l.exercises; i++) {
      const c = row.cells.get(cellKey(l.id, i));
      cells.push(c
        ? <td key={`${l.id}#${i}`} className={c.solved ? 'ok' : c.shown ? 'shown' : 'no'} aria-label={words.of(c)}>{symbols(c)}{partial(c)}</td>
        : <td key={`${l.id}#${i}`} className="none" aria-label={words.none}>·</td>);
    }
    const done = row.done.get(l.id) === true;
    cells.push(done ? <td key={`${l.id}#done`} className="done lesson-end" aria-label={words.done}>✓</td> : <td key={`${l.id}#done`} className="none lesson-end" aria-label={words.notDone}>·</td>);
  }
  return (
    <tr className={selected ? 'picked' : undefined} data-student={row.id}>
      <th scope="row"><button type="button" className="linkish" aria-expanded={selected} aria-controls="dashboard-attempts" onClick={() => onPick(row.id)}>{row.name}</button></th>
      {cells}
    </tr>
  );
});

/** The attempts of one student: exercise, variant (seed), answer, verdict, help, time, link. */
/** The teacher's hand on one student: rename (a name taken by someone else is refused) or
 * remove from the class with all their records (asked first). */
function StudentActions({ row, code, token, onRenamed, onRemoved }: { row: Row; code: string; token: string; onRenamed: (s: Student) => void; onRemoved: (id: string) => void }) {
  const { t } = useTranslation('results');
  const [name, setName] = useState(row.name);
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => { setName(row.name); setProblem(null); }, [row.id, row.name]);
  const url = `/api/classes/${encodeURIComponent(code)}/students/${encodeURIComponent(row.id)}`;
  const call = async (method: 'PATCH' | 'DELETE') => {
    setBusy(true); setProblem(null);
    try {
      const r = await fetch(url, { method, headers: { Authorization: `Bearer ${token}`, ...(method === 'PATCH' ? { 'Content-Type': 'application/json' } : {}) }, body: method === 'PATCH' ? JSON.stringify({ name }) : undefined });
      const body = await r.json().catch(() => ({}));
      if (r.status === 409) { setProblem(t('dashboard.student.taken', { name: name.trim() })); return; }
      if (!r.ok) { setProblem(t('dashboard.student.failed', { reason: body.message ?? `HTTP ${r.status}` })); return; }
      if (method === 'PATCH') onRenamed({ id: body.id, name: body.name, joined_at: body.joined_at }); else onRemoved(row.id);
    } catch (e) { setProblem(t('dashboard.student.failed', { reason: (e as Error).message })); } finally { setBusy(false); }
  };
  return (
    <form className="dashboard-student" data-testid="dashboard-student" onSubmit={(e) => { e.preventDefault(); if (name.trim() && name.trim() !== row.name) void call('PATCH'); }}>
      <label>{t('dashboard.student.name')} <input value={name} maxLength={60} onChange={(e) => setName(e.target.value)} disabled={busy} /></label>
      {' '}<button type="submit" disabled={busy || !name.trim() || name.trim() === row.name}>{t('dashboard.student.rename')}</button>
      {' '}<button type="button" disabled={busy} onClick={() => { if (window.confirm(t('dashboard.student.removeConfirm', { name: row.name }))) void call('DELETE'); }}>{t('dashboard.student.remove')}</button>
      {problem && <p className="error" role="alert">{problem}</p>}
    </form>
  );
}

function Attempts({ row, lessons, onClose, children }: { row: Row; lessons: LessonColumns[]; onClose: () => void; children?: ReactNode }) {
  const { t, i18n } = useTranslation('results');
  const { t: tx } = useTranslation('exercises');
  // an answer as the student saw it: a choice in words (its id kept as the cell's title)
  const words = (a: string) => tx(`choice.${a}`, { defaultValue: a });
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => { heading.current?.focus(); }, [row.id]);
  const titles = new Map(lessons.map((l) => [l.id, l.title]));
  const list = [...row.attempts].sort((a, b) => (a.received_at < b.received_at ? -1 : a.received_at > b.received_at ? 1 : a.id < b.id ? -1 : 1));
  const time = new Intl.DateTimeFormat(i18n.language, { dateStyle: 'short', timeStyle: 'medium' });
  return (
    <section id="dashboard-attempts" className="dashboard-attempts" data-testid="dashboard-attempts" aria-labelledby="dashboard-attempts-h">
      <h4 id="dashboard-attempts-h" tabIndex={-1} ref={heading}>{t('dashboard.attempts.heading', { name: row.name })}</h4>
      <button type="button" onClick={onClose}>{t('dashboard.attempts.close')}</button>
      {children}
      {list.length === 0 ? <p className="muted">{t('dashboard.attempts.none')}</p> : (
        <div className="table-wrap">
          <table className="uploads">
            <thead><tr>{(['exercise', 'seed', 'answer', 'verdict', 'help', 'time', 'open'] as const).map((k) => <th scope="col" key={k}>{t(`dashboard.attempts.col.${k}`)}</th>)}</tr></thead>
            <tbody>
              {list.map((a) => (
                <tr key={a.id} data-attempt={a.id}>
                  <td>{t('dashboard.attempts.exercise', { lesson: titles.get(a.lesson) ?? a.lesson, n: (a.exercise ?? 0) + 1 })}</td>
                  <td className="num">{a.seed ?? '–'}</td>
                  <td>{a.answer ? (words(a.answer) !== a.answer ? <span title={a.answer} data-choice={a.answer}>{words(a.answer)}</span> : <code>{a.answer}</code>) : <span className="muted">{t('dashboard.attempts.noAnswer')}</span>}</td>
                  <td className={a.verdict === 'correct' ? 'ok' : 'no'}>{t(`dashboard.attempts.verdict.${a.verdict === 'correct' || a.verdict === 'empty' ? a.verdict : 'wrong'}`)}</td>
                  <td>{[a.hint ? t('dashboard.cell.hint') : '', a.hint_opened && !a.hint ? t('dashboard.cell.hintOpened') : '', a.shown ? t('dashboard.cell.shown') : ''].filter(Boolean).join(', ') || '–'}</td>
                  <td><time dateTime={a.at}>{Number.isNaN(Date.parse(a.at)) ? a.at : time.format(new Date(a.at))}</time></td>
                  <td>{a.seed !== null && a.exercise !== null ? <a href={variantLink(a.lesson, a.exercise, a.seed, { who: row.name, answer: a.answer ?? '' })} target="_blank" rel="noopener">{t('dashboard.attempts.open')}</a> : null}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** lessons: the grid's lessons instead of the page's own (tests). */
export const Dashboard = memo(function Dashboard({ code, token, lessons: given }: { code: string; token: string; lessons?: LessonColumns[] }) {
  const { t, i18n } = useTranslation('results');
  const lang = i18n.language;
  const board = useRef(new Board());
  const [version, setVersion] = useState(0);
  const [known, setKnown] = useState<LessonColumns[] | null>(given ?? null);
  const [phase, setPhase] = useState<'loading' | 'ready' | 'failed'>('loading');
  const [loaded, setLoaded] = useState(0);
  const [live, setLive] = useState<LiveState | null>(null);
  const [err, setErr] = useState<Saying | null>(null);
  const [picked, setPicked] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0); // "try again" starts the load over
  const [sheet, setSheet] = useState(false);
  /** The stream skipped records: loading them from the list, loaded (how many were new), or that failed. */
  const [skipped, setSkipped] = useState<{ phase: 'loading' } | { phase: 'done'; count: number } | { phase: 'failed'; error: string } | null>(null);

  useEffect(() => {
    if (given) { setKnown(given); return undefined; }
    let current = true;
    lessonColumns(lang).then((l) => { if (current) setKnown(l); }, () => { if (current) setKnown([]); });
    return () => { current = false; };
  }, [lang, given]);

  // The students, then the records a page at a time, then the event stream from the
  // list's end. Another class or token starts over; leaving the page stops the stream.
  useEffect(() => {
    const ac = new AbortController();
    board.current = new Board();
    setVersion((v) => v + 1); setPhase('loading'); setLoaded(0); setLive(null); setErr(null); setPicked(null); setSkipped(null);
    const base = `/api/classes/${encodeURIComponent(code)}`;
    (async () => {
      try {
        let cursor: string | null = null;
        do {
          const p: { students: Student[]; next_cursor: string | null } = await getJson(`${base}/progress/students?limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, token, ac.signal);
          board.current.addStudents(p.students);
          cursor = p.next_cursor;
        } while (cursor);
        const end = await listRecords(code, token, null, (records) => { board.current.add(records); setLoaded(board.current.records); }, ac.signal);
        if (ac.signal.aborted) return;
        setVersion((v) => v + 1); setPhase('ready');
        // The stream skipped the records after `from`: listed from there, one listing after
        // another if it happens again meanwhile (the board takes each record once).
        let relisting = Promise.resolve();
        const overflow = (from: string | null) => {
          setSkipped({ phase: 'loading' });
          relisting = relisting.then(async () => {
            let count = 0;
            try {
              await listRecords(code, token, from, (records) => {
                const had = board.current.records;
                if (board.current.add(records)) { count += board.current.records - had; setVersion((v) => v + 1); }
              }, ac.signal);
              if (!ac.signal.aborted) setSkipped({ phase: 'done', count });
            } catch (e) {
              if (!ac.signal.aborted) setSkipped({ phase: 'failed', error: (e as Error).message });
            }
          });
        };
        await followProgress(code, token, end, {
          records: (r) => { if (board.current.add(r)) setVersion((v) => v + 1); },
          students: (s) => { if (board.current.addStudents(s)) setVersion((v) => v + 1); },
          removed: (ids) => { if (board.current.remove(ids)) setVersion((v) => v + 1); },
          state: setLive,
          overflow,
        }, ac.signal);
      } catch (e) {
        if (ac.signal.aborted) return;
        const status = (e as { status?: number }).status;
        setPhase('failed');
        setErr(status === 404 ? { key: 'dashboard.loadMissing' } : status === 401 || status === 403 ? { key: 'dashboard.loadRefused' } : { key: 'dashboard.loadFailed', raw: (e as Error).message });
      }
    })();
    return () => ac.abort();
  }, [code, token, attempt]);

  const collator = useMemo(() => new Intl.Collator(lang), [lang]);
  const words = useMemo(() => cellWords(t as T), [t, lang]);
  const rows = useMemo(() => board.current.list(collator), [version, collator]);
  const current = board.current; const namedVersion = current.namedVersion;
  // worked out again when a record names a new exercise or lesson, not for every record
  const lessons = useMemo(() => (known ? current.columns(known) : null), [known, current, namedVersion]);
  const onPick = useCallback((id: string) => setPicked((p) => (p === id ? null : id)), []);
  const pickedRow = picked ? board.current.get(picked) : undefined;

  const exportCsv = async () => {
    try {
      const r = await fetch(`/api/classes/${encodeURIComponent(code)}/progress.csv`, { headers: { Authorization: `Bearer ${token}` } });
      if (!r.ok) throw new Error((await r.json().catch(() => null))?.message ?? `HTTP ${r.status}`);
      const a = document.createElement('a');
      a.href = URL.createObjectURL(await r.blob()); a.download = `vmemlab-${code}-progress.csv`; a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    } catch (e) { setErr({ key: 'dashboard.exportFailed', raw: (e as Error).message }); }
  };

  const liveText = live === null ? null
    : live.kind === 'retrying' ? t('dashboard.state.retrying', { seconds: live.seconds })
      : live.kind === 'stopped' ? t(`dashboard.state.${live.reason}`) : t(`dashboard.state.${live.kind}`);

  return (
    <section className="dashboard" data-testid="dashboard" aria-labelledby="dashboard-h">
      <h4 id="dashboard-h">{t('dashboard.heading')}</h4>
      <p className="muted">{t('dashboard.intro')}</p>
      <div className="dashboard-bar">
        {liveText && <p className={`live-state ${live!.kind}`} role="status" data-testid="dashboard-live" data-state={live!.kind}><span className="dot" aria-hidden="true" />{liveText}</p>}
        {phase === 'ready' && <button type="button" onClick={() => void exportCsv()}>{t('dashboard.export')}</button>}
        {phase === 'ready' && <button type="button" aria-expanded={sheet} data-testid="dashboard-sheet" onClick={() => setSheet((x) => !x)}>{t('dashboard.sheet')}</button>}
      </div>
      {sheet && phase === 'ready' && (
        <Suspense fallback={<p className="muted">{t('dashboard.loading')}</p>}>
          <ClassSheet code={code} names={rows.map((r) => r.name)} />
        </Suspense>
      )}
      {skipped && phase === 'ready' && (
        <p className={`dashboard-overflow${skipped.phase === 'failed' ? ' error' : ''}`} role={skipped.phase === 'failed' ? 'alert' : 'status'} data-testid="dashboard-overflow" data-state={skipped.phase}>
          {skipped.phase === 'loading' ? t('dashboard.overflow.loading')
            : skipped.phase === 'done' ? t('dashboard.overflow.done', { count: skipped.count })
              : <Said t={t as T} say={{ key: 'dashboard.overflow.failed', raw: skipped.error }} />}
          {' '}<button type="button" onClick={() => void exportCsv()}>{t('dashboard.overflow.csv')}</button>
          {skipped.phase === 'failed' && <> <button type="button" onClick={() => setAttempt((n) => n + 1)}>{t('dashboard.retry')}</button></>}
        </p>
      )}
      {phase === 'loading' && <p className="muted" role="status" data-testid="dashboard-loading">{loaded ? t('dashboard.loadingCount', { count: loaded }) : t('dashboard.loading')}</p>}
      {err && <p className={phase === 'failed' && err.key === 'dashboard.loadMissing' ? 'muted' : 'error'} role="alert" data-testid="dashboard-error"><Said t={t as T} say={err} />{phase === 'failed' && err.key === 'dashboard.loadFailed' && <> <button type="button" onClick={() => setAttempt((n) => n + 1)}>{t('dashboard.retry')}</button></>}</p>}
      {phase === 'ready' && lessons && (rows.length === 0 ? <p className="muted" data-testid="dashboard-empty">{t('dashboard.empty')}</p> : (
        <>
          <p className="muted dashboard-legend">{t('dashboard.legend')}</p>
          <div className="table-wrap dashboard-wrap" role="region" aria-label={t('dashboard.gridLabel')} tabIndex={0}>
            <table className="dashboard-grid" data-testid="dashboard-grid" style={{ width: `${NAME_REM + CELL_REM * lessons.reduce((sum, l) => sum + l.exercises + 1, 0)}rem` }}>
              <colgroup><col className="name" /></colgroup>
              {lessons.map((l) => <colgroup key={l.id}>{Array.from({ length: l.exercises + 1 }, (_, i) => <col key={i} />)}</colgroup>)}
              <thead>
                <tr>
                  <th scope="col" rowSpan={2}>{t('dashboard.col.student')}</th>
                  {lessons.map((l) => <th scope="colgroup" key={l.id} colSpan={l.exercises + 1} className="lesson-end">{l.title}</th>)}
                </tr>
                <tr>
                  {lessons.flatMap((l) => [
                    ...Array.from({ length: l.exercises }, (_, i) => <th scope="col" key={`${l.id}#${i}`}><span aria-hidden="true">{i + 1}</span><span className="sr-only">{t('dashboard.col.exercise', { lesson: l.title, n: i + 1 })}</span></th>),
                    <th scope="col" key={`${l.id}#done`} className="lesson-end"><span aria-hidden="true">{t('dashboard.col.done')}</span><span className="sr-only">{t('dashboard.col.lessonDone', { lesson: l.title })}</span></th>,
                  ])}
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => <RowView key={r.id} row={r} lessons={lessons} words={words} selected={r.id === picked} onPick={onPick} />)}
              </tbody>
            </table>
          </div>
        </>
      ))}
      {pickedRow && lessons && (
        <Attempts row={pickedRow} lessons={lessons} onClose={() => setPicked(null)}>
          <StudentActions row={pickedRow} code={code} token={token}
            onRenamed={(st) => { if (board.current.addStudents([st])) setVersion((v) => v + 1); }}
            onRemoved={(id) => { board.current.remove([id]); setPicked(null); setVersion((v) => v + 1); }} />
        </Attempts>
      )}
    </section>
  );
});
