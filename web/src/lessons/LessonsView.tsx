/* Lessons: an index with progress, and a lesson page whose prose, live walk views and
 * exercises come from lessons/<lang>/*.md; the teacher guide (lessons/<lang>/teacher-guide.md)
 * is linked from the index and shown the same way. The lesson, the language and each
 * exercise's seed live in the URL so that a link reproduces what a learner saw.
 * Each exercise as the learner left it (answer, tries, verdict, hint) and each lesson marked
 * done are kept in the browser (progress/db.ts), so a reload shows them again. A learner who
 * joined a class (the Results tab's class panel) gets their own variant of each exercise
 * (progress/seed.ts: from the class, their name, the lesson and the exercise) and their
 * attempts and done marks go to the class server (progress/sync.ts), which grades each
 * attempt again itself. */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useTranslation } from 'react-i18next';
import 'katex/dist/katex.min.css';
import './lessons.css';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { SteppedWalk } from '../views/SteppedWalk';
import { LANG_NAMES, saveLang } from '../i18n';
import { GUIDES, LANGS, LESSONS, LESSON_ORDER, LESSON_SCENARIOS, TEACHER_GUIDE, lessonFor, type Lang, type Part } from './content';
import { answered, check, generate, say, type Exercise, type Msg, type Verdict } from './exercises';
import { exerciseKey, loadDone, loadExercise, newRecordId, outgoing, saveDone, saveExercise, type ExerciseState, type ProgressRecord } from '../progress/db';
import { seedFor, variantOf } from '../progress/seed';
import { ClassLine } from '../course/ClassLine';
import { currentClass, onStudentChange, type InClass } from '../progress/student';
import { kick, startSync } from '../progress/sync';
import { Markdown } from './Markdown';
import { GridAnswer, PrintGrid } from './GridAnswer';
import { AnswerSheet } from './AnswerSheet';
import { SHEET_MAX, seedRows } from './answerSheet';
import { scenarioDescription } from '../model/examples';
import type { View } from '../model/url';

const PROGRESS_KEY = 'vmemlab-progress';

function loadProgress(): Set<string> {
  try {
    return new Set(JSON.parse(localStorage.getItem(PROGRESS_KEY) ?? '[]') as string[]);
  } catch {
    return new Set();
  }
}

function saveProgress(done: Set<string>) {
  try { localStorage.setItem(PROGRESS_KEY, JSON.stringify([...done])); } catch { /* storage may be off */ }
}

export interface LessonsProps {
  engine: Vmsim;
  lesson: string | null;
  seed: number;
  /** Each exercise's own seed, by its position on the page (null or missing: seed + position). */
  seeds?: (number | null)[];
  /** The teacher's answer sheet of the lesson for this many seeds from `seed` (answerSheet.ts). */
  sheet?: number | null;
  lang: Lang;
  onNavigate: (patch: { lesson?: string | null; seed?: number; seeds?: (number | null)[]; sheet?: number | null; lang?: Lang; view?: View }) => void;
  onOpenWalk?: (scenario: string, access: number) => void;
}

/** The highest seed the class server keeps (a 32-bit integer column). */
const SEED_MAX = 2 ** 31 - 1;

export function LessonsView({ engine, lesson, seed, seeds = [], sheet = null, lang, onNavigate, onOpenWalk }: LessonsProps) {
  const { t } = useTranslation();
  const { t: tx } = useTranslation('exercises');
  // opened from the teacher's attempts list: whose variant this is, and what they answered
  const [variant] = useState(() => (typeof location === 'undefined' ? null : variantOf(location.search)));
  const [done, setDone] = useState(loadProgress);
  const [klass, setKlass] = useState<InClass | null>(currentClass);
  const toggled = useRef(false);
  useEffect(() => onStudentChange(() => setKlass(currentClass())), []);
  // What is still queued for the class goes out (after a reload too).
  useEffect(() => { void startSync(); }, []);
  // The done marks kept in IndexedDB win over localStorage's copy (which may be gone).
  useEffect(() => {
    let live = true;
    loadDone().then((marks) => {
      if (!live || toggled.current || !marks.length) return;
      setDone((d) => {
        const next = new Set(d);
        for (const m of marks) { if (m.done) next.add(m.lesson); else next.delete(m.lesson); }
        saveProgress(next);
        return next;
      });
    }, () => { /* not kept: localStorage's copy stands */ });
    return () => { live = false; };
  }, []);
  const toggle = (id: string) => {
    toggled.current = true;
    const next = new Set(done);
    const on = !next.has(id);
    if (on) next.add(id); else next.delete(id);
    setDone(next);
    saveProgress(next);
    const at = new Date().toISOString();
    const out = klass ? outgoing(klass.code, { id: newRecordId(), type: 'done', lesson: id, done: on, at }) : undefined;
    saveDone({ lesson: id, done: on, at }, out).then(() => { if (out) void kick(); }, () => { /* kept in localStorage only */ });
  };
  const langPicker = (
    <label className="lang-picker">
      {t('language')}{' '}
      <select value={lang} aria-label={t('language')}
        onChange={(e) => { const l = e.target.value as Lang; saveLang(l); onNavigate({ lang: l }); }}>
        {LANGS.map((l) => <option key={l} value={l}>{LANG_NAMES[l]}</option>)}
      </select>
    </label>
  );

  if (!lesson || !(LESSONS.en[lesson] || GUIDES.en[lesson])) {
    const guide = lessonFor(TEACHER_GUIDE, lang).lesson;
    return (
      <section className="lessons-index" aria-label={t('index')}>
        <header className="lessons-head"><h2>{t('index')}</h2>{langPicker}</header>
        <p className="progress" data-testid="progress">{t('progress', { done: LESSON_ORDER.filter((id) => done.has(id)).length, total: LESSON_ORDER.length })}</p>
        <ol>
          {LESSON_ORDER.map((id) => {
            const { lesson: l, fallback } = lessonFor(id, lang);
            return (
              <li key={id}>
                <button className="linklike" onClick={() => onNavigate({ lesson: id })}>{l!.meta.title}</button>
                {fallback && <span className="muted"> (English)</span>}
                {done.has(id) && <span className="badge done"> ✓ {t('done')}</span>}
              </li>
            );
          })}
        </ol>
        {guide && <p className="guide-link"><button className="linklike" onClick={() => onNavigate({ lesson: TEACHER_GUIDE })}>{guide.meta.title}</button>
          {' · '}<button className="linklike" data-testid="sheet-link" onClick={() => onNavigate({ lesson: LESSON_ORDER[0], seed: 1, sheet: 30 })}>{t('sheet.open')}</button></p>}
      </section>
    );
  }

  if (sheet && LESSONS.en[lesson]) {
    return (
      <article className="lesson">
        <header className="lessons-head">
          <button className="linklike" onClick={() => onNavigate({ sheet: null })}>← {lessonFor(lesson, lang).lesson!.meta.title}</button>
          {langPicker}
        </header>
        <AnswerSheet engine={engine} lesson={lesson} rows={seedRows(lesson, seed, sheet)} lang={lang} by="seed"
          controls={<SheetControls lesson={lesson} first={seed} count={sheet} lang={lang} onNavigate={onNavigate} />} />
      </article>
    );
  }

  const { lesson: l, fallback } = lessonFor(lesson, lang);
  const prereq = l!.meta.prerequisites ?? [];
  const isGuide = !LESSONS.en[lesson];
  return (
    <article className="lesson" lang={fallback ? 'en' : lang}>
      <header className="lessons-head">
        <button className="linklike" onClick={() => onNavigate({ lesson: null })}>← {t('index')}</button>
        {langPicker}
      </header>
      {fallback && <p className="notice" role="note">{t('notTranslated', { lang: LANG_NAMES[lang] })}</p>}
      {prereq.length > 0 && (
        <p className="muted">{t('prerequisites')}:{' '}
          {prereq.map((p, i) => (
            <span key={p}>{i > 0 && ', '}<button className="linklike" onClick={() => onNavigate({ lesson: p })}>{lessonFor(p, lang).lesson?.meta.title ?? p}</button></span>
          ))}
        </p>
      )}
      {klass && !isGuide && <ClassLine klass={klass} />}
      {variant && <p className="notice" role="note" data-testid="variant-of">{t('variantOf', { who: variant.who, n: variant.exercise + 1 })}{variant.answer ? <> {t('variantAnswer')} <strong>{tx(`choice.${variant.answer}`, { defaultValue: variant.answer })}</strong></> : ` ${t('variantNoAnswer')}`}</p>}
      {l!.parts.map((part, i) => {
        // Each exercise has its own seed: "Another one" changes that one and no other. In a
        // class the first one is the student's own (the same for them on any machine).
        const own = part.type !== 'exercise' ? seed
          : seeds[part.index] ?? (klass ? seedFor(klass.code, klass.name, lesson, part.index) : seed + part.index);
        const onSeed = (s: number) => {
          if (part.type !== 'exercise') return;
          const next = [...seeds];
          while (next.length <= part.index) next.push(null);
          next[part.index] = s;
          onNavigate({ seeds: next });
        };
        return <LessonPart key={`${lesson}-${i}-${own}-${klass?.code ?? ''}`} part={part} engine={engine} seed={own} lang={fallback ? 'en' : lang}
          lesson={lesson} klass={klass}
          onSeed={onSeed} onOpenWalk={onOpenWalk} onView={(v) => onNavigate({ view: v })} onLesson={(id) => onNavigate({ lesson: id })} />;
      })}
      {!isGuide && (
        <p>
          <label><input type="checkbox" checked={done.has(lesson)} onChange={() => toggle(lesson)} /> {t('markDone')}</label>
        </p>
      )}
    </article>
  );
}

/** The sheet's lesson, first seed and number of seeds, each a change of the address. */
function SheetControls({ lesson, first, count, lang, onNavigate }: { lesson: string; first: number; count: number; lang: Lang;
  onNavigate: LessonsProps['onNavigate'] }) {
  const { t } = useTranslation();
  const num = (v: string, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.floor(Number(v)) || lo));
  return (
    <>
      <label>{t('sheet.lesson')}{' '}
        <select value={lesson} onChange={(e) => onNavigate({ lesson: e.target.value, sheet: count })}>
          {LESSON_ORDER.map((id, i) => <option key={id} value={id}>{i + 1}. {lessonFor(id, lang).lesson?.meta.title ?? id}</option>)}
        </select>
      </label>{' '}
      <label>{t('sheet.first')}{' '}
        <input type="number" min={1} value={first} onChange={(e) => onNavigate({ seed: num(e.target.value, 1, 2 ** 31 - 1), sheet: count })} />
      </label>{' '}
      <label>{t('sheet.count')}{' '}
        <input type="number" min={1} max={SHEET_MAX} value={count} onChange={(e) => onNavigate({ sheet: num(e.target.value, 1, SHEET_MAX) })} />
      </label>{' '}
    </>
  );
}

function LessonPart({ part, engine, seed, lang, lesson, klass, onSeed, onOpenWalk, onView, onLesson }: { part: Part; engine: Vmsim; seed: number; lang: string;
  lesson: string; klass: InClass | null;
  onSeed: (s: number) => void; onOpenWalk?: (scenario: string, access: number) => void; onView?: (v: View) => void;
  onLesson?: (id: string) => void }) {
  if (part.type === 'prose') return <Markdown text={part.text} lang={lang} onView={onView} onLesson={onLesson} />;
  if (part.type === 'view') return <EmbeddedWalk engine={engine} scenario={part.scenario} access={part.access} step={part.step} onOpenWalk={onOpenWalk} />;
  return <ExerciseCard engine={engine} part={part} seed={seed} onSeed={onSeed} lesson={lesson} klass={klass} />;
}

function EmbeddedWalk({ engine, scenario, access, step, onOpenWalk }: { engine: Vmsim; scenario: string; access: number; step: number | null;
  onOpenWalk?: (scenario: string, access: number) => void }) {
  const { t } = useTranslation();
  const result = useMemo(() => {
    try { return engine.run(LESSON_SCENARIOS[scenario]); } catch { return null; }
  }, [engine, scenario]);
  const acc = result?.accesses[access];
  if (!result || !acc) return <p className="error">{t('embedFailed', { scenario })}</p>;
  return (
    <figure className="embedded-walk" data-scenario={scenario}>
      <SteppedWalk result={result} access={acc} initialStep={step} label={t('walkOf', { scenario })} />
      <figcaption>
        {scenarioDescription(LESSON_SCENARIOS[scenario], scenario, t, true)}{' '}
        {onOpenWalk && <button className="linklike" onClick={() => onOpenWalk(scenario, access)}>{t('openInWalk')}</button>}
      </figcaption>
    </figure>
  );
}

/* What the learner is told after Check: nothing typed, wrong (with the tries used), right,
 * or the engine's answer (asked for, or after three wrong tries). */
type Status = { kind: 'empty' } | { kind: 'unreadable' } | { kind: 'wrong'; tries: number; unit?: Msg } | { kind: 'correct' } | { kind: 'answer'; expected: string; after: 'asked' | 'tries' };
const MAX_TRIES = 3;

function ExerciseCard({ engine, part, seed, onSeed, lesson, klass }: { engine: Vmsim; part: Extract<Part, { type: 'exercise' }>;
  seed: number; onSeed: (s: number) => void; lesson: string; klass: InClass | null }) {
  const { t } = useTranslation();
  const { t: tx } = useTranslation('exercises');
  const ex: Exercise | null = useMemo(() => {
    try { return generate(part.spec, seed); } catch { return null; }
  }, [part.spec, seed]);
  const [answer, setAnswer] = useState('');
  const [tries, setTries] = useState(0);
  const [status, setStatus] = useState<Status | null>(null);
  const [verdict, setVerdict] = useState<Verdict | null>(null);
  const [showHint, setShowHint] = useState(false);
  // The hint comes in two steps: a nudge, then the method (asked for, or after two wrong tries).
  const [showMethod, setShowMethod] = useState(false);
  const [showWalk, setShowWalk] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  // Checks of this variant so far (a record's `tries`); touched: the learner acted before
  // the kept state was read, which then is not put back over what they did.
  const checks = useRef(0);
  const touched = useRef(false);
  // The learner pressed Hint: what an attempt's `hint` says (the page opens the hint itself
  // after a wrong try or a blank check; that is no hint asked for).
  const asked = useRef(false);
  // The page opened the hint itself (after a wrong try or a blank check): an attempt's
  // `hint_opened` while Hint was not pressed, which the teacher sees apart and costs nothing.
  const opened = useRef(false);
  // The variant as the learner left it (a reload, or back from another lesson).
  useEffect(() => {
    let live = true;
    loadExercise(lesson, part.index, seed).then((st) => {
      if (!live || !st || touched.current || !ex) return;
      setAnswer(st.answer); setTries(st.wrong); setShowHint(st.hint); asked.current = st.hintAsked ?? false; checks.current = st.checks;
      opened.current = st.hintOpened ?? (st.hint && !asked.current);
      if (st.status === 'correct' || st.status === 'answer') {
        // the walk shown after checking comes from the engine again
        let v: Verdict | null = null;
        try { v = check(engine, ex, st.answer); setVerdict(v); } catch { /* the verdict alone is shown */ }
        setStatus(st.status === 'correct' ? { kind: 'correct' } : { kind: 'answer', expected: v?.expected ?? st.expected ?? '', after: st.after ?? 'asked' });
      } else if (st.status === 'wrong') setStatus({ kind: 'wrong', tries: st.wrong });
      else if (st.status === 'empty') setStatus({ kind: 'empty' });
    }, () => { /* nothing kept */ });
    return () => { live = false; };
  }, []); // eslint-disable-line react-hooks/exhaustive-deps -- once per variant: the card's key has the seed
  if (!ex) return <p className="error">{tx('unknownKind', { kind: part.spec.kind })}</p>;
  /** Keeps the card's state (what changed in `p`) and, in a class, queues the attempt. */
  const keep = (p: Partial<ExerciseState>, attempt?: { answer: string; shown: boolean; hint: boolean; opened: boolean }) => {
    touched.current = true;
    const st: ExerciseState = {
      key: exerciseKey(lesson, part.index, seed), lesson, exercise: part.index, seed, kind: part.spec.kind,
      answer, wrong: tries, checks: checks.current, hint: showHint, hintAsked: asked.current, hintOpened: opened.current,
      status: status?.kind === 'unreadable' ? 'empty' : status?.kind ?? null, after: status?.kind === 'answer' ? status.after : undefined, expected: status?.kind === 'answer' ? status.expected : undefined,
      at: new Date().toISOString(), ...p,
    };
    const record: ProgressRecord | null = attempt && klass && seed <= SEED_MAX ? {
      id: newRecordId(), type: 'attempt', lesson, exercise: part.index, kind: part.spec.kind, seed,
      answer: attempt.answer, tries: checks.current, hint: attempt.hint, shown: attempt.shown, hint_opened: attempt.opened && !attempt.hint, at: st.at,
    } : null;
    const out = record && klass ? outgoing(klass.code, record) : undefined;
    saveExercise(st, out).then(() => { if (out) void kick(); }, () => { /* not kept: this page still shows it */ });
  };
  const run = (a: string): Verdict | null => {
    setFailure(null);
    try { const v = check(engine, ex, a); setVerdict(v); return v; } catch (e) { setFailure((e as Error).message); return null; }
  };
  const submit = () => {
    if (!answered(ex, answer)) {
      // something typed that the checker cannot read is told apart from nothing typed
      opened.current = opened.current || !showHint;
      setStatus({ kind: answer.trim() ? 'unreadable' : 'empty' }); setShowHint(true); keep({ status: 'empty', hint: true }); return;
    }
    const v = run(answer);
    if (!v) return;
    checks.current += 1;
    const hintBefore = asked.current;
    const openedBefore = opened.current;
    if (v.correct) { setStatus({ kind: 'correct' }); keep({ status: 'correct' }, { answer, shown: false, hint: hintBefore, opened: openedBefore }); return; }
    const n = tries + 1;
    setTries(n);
    if (!showHint) opened.current = true;
    setShowHint(true);
    if (n >= 2) setShowMethod(true);
    const last = n >= MAX_TRIES;
    setStatus(last ? { kind: 'answer', expected: v.expected, after: 'tries' } : { kind: 'wrong', tries: n, unit: v.unitNote });
    keep(last ? { wrong: n, hint: true, status: 'answer', after: 'tries', expected: v.expected } : { wrong: n, hint: true, status: 'wrong' },
      { answer, shown: last, hint: hintBefore, opened: openedBefore });
  };
  // Asking for the answer is sent as an attempt with no answer (verdict "empty") and shown.
  const reveal = () => {
    const v = run('');
    if (!v) return;
    setStatus({ kind: 'answer', expected: v.expected, after: 'asked' });
    keep({ status: 'answer', after: 'asked', expected: v.expected }, { answer: '', shown: true, hint: asked.current, opened: opened.current });
  };
  const toggleHint = () => { if (!showHint) asked.current = true; setShowHint(!showHint); keep({ hint: !showHint }); };
  const type = (a: string) => { setAnswer(a); keep({ answer: a }); };
  // A choice is shown in words; the engine's answer too ("ept or npt" should two tie).
  const choiceWords = (c: string) => tx(`choice.${c}`, { defaultValue: c });
  const expectedWords = (e: string) => ex.input.type === 'grid' ? tx('walkGrid.shown') : ex.input.type !== 'choice' ? e
    : e.split(' or ').map(choiceWords).reduce((a, b) => tx('or', { a, b }));
  const settled = status?.kind === 'correct' || status?.kind === 'answer';
  const walkResult = settled ? verdict?.results[0] : undefined;
  const shown = walkResult?.accesses[Math.min(ex.walkAccess ?? 0, walkResult.accesses.length - 1)];
  const message = !status ? null
    : status.kind === 'empty' ? t('noAnswer')
    : status.kind === 'unreadable' ? t('unreadable', { answer: answer.trim(), form: t(`unreadableForm.${ex.input.type}`) })
    : status.kind === 'wrong' ? t('wrongTry', { count: status.tries, max: MAX_TRIES }) + (status.unit ? ' ' + say(status.unit, tx) : '')
      + (verdict?.score ? ' ' + tx('walkGrid.score', { right: verdict.score.right, of: verdict.score.of }) : '')
    : status.kind === 'correct' ? t('correct')
    : t(status.after === 'tries' ? 'answerAfterTries' : 'answerAsked', { expected: expectedWords(status.expected), max: MAX_TRIES });
  const tone = status?.kind === 'correct' ? 'ok' : status?.kind === 'answer' ? 'revealed' : 'error';
  return (
    <section className="exercise" aria-label={t('exercise')} data-kind={ex.spec.kind} data-variant={ex.variant} data-seed={seed}>
      <h3>{t('exercise')} <span className="muted">({t('seed')} {seed})</span></h3>
      <p className="exercise-prompt">{say(ex.prompt, tx)}</p>
      {/* On paper the form does not print: the choices as a list to tick and a line to write on
          (a walk grid: a blank for each reference and each address). */}
      <div className="print-answer" data-testid="print-answer">
        {ex.input.type === 'choice' && <ul className="print-choices">{ex.input.choices.map((c) => <li key={c}>{choiceWords(c)}</li>)}</ul>}
        {ex.input.type === 'grid' ? <PrintGrid input={ex.input} /> : <p className="print-line">{t('answer')}:</p>}
      </div>
      <form onSubmit={(e) => { e.preventDefault(); submit(); }}>
        {ex.input.type === 'grid' ? (
          // the engine's grid fills the cells once it is shown; the learner's own are marked after a check
          <GridAnswer input={ex.input} answer={status?.kind === 'answer' ? status.expected : answer} onChange={type} readOnly={settled}
            marks={status?.kind === 'wrong' || status?.kind === 'correct' ? verdict?.score?.cells : undefined} />
        ) : ex.input.type === 'choice' ? (
          <select aria-label={t('answer')} value={answer} onChange={(e) => type(e.target.value)} disabled={settled}>
            <option value="">—</option>
            {ex.input.choices.map((c) => <option key={c} value={c}>{choiceWords(c)}</option>)}
          </select>
        ) : (
          <input aria-label={t('answer')} value={answer} onChange={(e) => type(e.target.value)} readOnly={settled}
            inputMode={ex.input.type === 'number' ? 'numeric' : 'text'} placeholder={ex.input.type === 'hex' ? '0x…' : ''} />
        )}{' '}
        <button type="submit" disabled={settled}>{t('check')}</button>{' '}
        <button type="button" onClick={toggleHint} aria-expanded={showHint}>{t('hint')}</button>{' '}
        {!settled && <><button type="button" onClick={reveal}>{t('showAnswer')}</button>{' '}</>}
        <button type="button" onClick={() => onSeed(seed + 1)}>{t('newExercise')}</button>
      </form>
      {showHint && (
        <div className="hint" data-step={showMethod ? 'method' : 'nudge'}>
          <p>{say(ex.nudge, tx)}</p>
          {showMethod ? <p>{say(ex.hint, tx)}</p>
            : <p><button type="button" className="linklike" onClick={() => setShowMethod(true)}>{t('moreHint')}</button></p>}
        </div>
      )}
      {failure && <p role="alert" className="error">{tx('engineFailed')} <span lang="en">{failure}</span></p>}
      <p role="status" className={message ? `verdict ${tone}` : 'verdict'} data-state={status?.kind}>{message}</p>
      {message && shown ? <p><button className="linklike" onClick={() => setShowWalk((s) => !s)} aria-expanded={showWalk}>{t('showWalk')}</button></p> : null}
      {showWalk && walkResult && shown && <SteppedWalk result={walkResult} access={shown} label={t('walkOfExercise')} />}
    </section>
  );
}
