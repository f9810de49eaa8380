/* Lessons: an index with progress, and a lesson page whose prose, live walk views and
 * exercises come from lessons/<lang>/*.md; the teacher guide (lessons/<lang>/teacher-guide.md)
 * is linked from the index and shown the same way. The lesson, the language and each
 * exercise's seed live in the URL so that a link reproduces what a learner saw. */
import { useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import 'katex/dist/katex.min.css';
import './lessons.css';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { WalkView } from '../views/WalkView';
import { LANG_NAMES, saveLang } from '../i18n';
import { GUIDES, LANGS, LESSONS, LESSON_ORDER, LESSON_SCENARIOS, TEACHER_GUIDE, lessonFor, type Lang, type Part } from './content';
import { check, generate, say, type Exercise, type Verdict } from './exercises';
import { Markdown } from './Markdown';
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
  lang: Lang;
  onNavigate: (patch: { lesson?: string | null; seed?: number; lang?: Lang; view?: View }) => void;
  onOpenWalk?: (scenario: string, access: number) => void;
}

export function LessonsView({ engine, lesson, seed, lang, onNavigate, onOpenWalk }: LessonsProps) {
  const { t } = useTranslation();
  const [done, setDone] = useState(loadProgress);
  const toggle = (id: string) => {
    const next = new Set(done);
    if (next.has(id)) next.delete(id); else next.add(id);
    setDone(next);
    saveProgress(next);
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
        {guide && <p className="guide-link"><button className="linklike" onClick={() => onNavigate({ lesson: TEACHER_GUIDE })}>{guide.meta.title}</button></p>}
      </section>
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
      {l!.parts.map((part, i) => <LessonPart key={`${lesson}-${i}`} part={part} engine={engine} seed={seed} lang={fallback ? 'en' : lang}
        onSeed={(s) => onNavigate({ seed: s })} onOpenWalk={onOpenWalk} onView={(v) => onNavigate({ view: v })}
        onLesson={(id) => onNavigate({ lesson: id })} />)}
      {!isGuide && (
        <p>
          <label><input type="checkbox" checked={done.has(lesson)} onChange={() => toggle(lesson)} /> {t('markDone')}</label>
        </p>
      )}
    </article>
  );
}

function LessonPart({ part, engine, seed, lang, onSeed, onOpenWalk, onView, onLesson }: { part: Part; engine: Vmsim; seed: number; lang: string;
  onSeed: (s: number) => void; onOpenWalk?: (scenario: string, access: number) => void; onView?: (v: View) => void;
  onLesson?: (id: string) => void }) {
  if (part.type === 'prose') return <Markdown text={part.text} lang={lang} onView={onView} onLesson={onLesson} />;
  if (part.type === 'view') return <EmbeddedWalk engine={engine} scenario={part.scenario} access={part.access} onOpenWalk={onOpenWalk} />;
  return <ExerciseCard engine={engine} part={part} seed={seed + part.index} onSeed={(s) => onSeed(s - part.index)} />;
}

function EmbeddedWalk({ engine, scenario, access, onOpenWalk }: { engine: Vmsim; scenario: string; access: number;
  onOpenWalk?: (scenario: string, access: number) => void }) {
  const { t } = useTranslation();
  const result = useMemo(() => {
    try { return engine.run(LESSON_SCENARIOS[scenario]); } catch { return null; }
  }, [engine, scenario]);
  const acc = result?.accesses[access];
  const [step, setStep] = useState(acc?.steps.length ?? 0);
  if (!result || !acc) return <p className="error">{t('embedFailed', { scenario })}</p>;
  return (
    <figure className="embedded-walk" data-scenario={scenario}>
      <WalkView result={result} access={acc} step={step} onStep={setStep} />
      <figcaption>
        {scenarioDescription(LESSON_SCENARIOS[scenario], scenario, t, true)}{' '}
        {onOpenWalk && <button className="linklike" onClick={() => onOpenWalk(scenario, access)}>{t('openInWalk')}</button>}
      </figcaption>
    </figure>
  );
}

function ExerciseCard({ engine, part, seed, onSeed }: { engine: Vmsim; part: Extract<Part, { type: 'exercise' }>;
  seed: number; onSeed: (s: number) => void }) {
  const { t } = useTranslation();
  const { t: tx } = useTranslation('exercises');
  const ex: Exercise | null = useMemo(() => {
    try { return generate(part.spec, seed); } catch { return null; }
  }, [part.spec, seed]);
  const [answer, setAnswer] = useState('');
  const [verdict, setVerdict] = useState<Verdict | null>(null);
  const [showHint, setShowHint] = useState(false);
  const [showWalk, setShowWalk] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  if (!ex) return <p className="error">{tx('unknownKind', { kind: part.spec.kind })}</p>;
  const submit = () => {
    setFailure(null);
    try { setVerdict(check(engine, ex, answer)); } catch (e) { setVerdict(null); setFailure((e as Error).message); }
  };
  // A choice is shown in words; the engine's answer too ("ept or npt" when they tie).
  const choiceWords = (c: string) => tx(`choice.${c}`, { defaultValue: c });
  const expectedWords = (e: string) => ex.input.type !== 'choice' ? e
    : e.split(' or ').map(choiceWords).reduce((a, b) => tx('or', { a, b }));
  const walkResult = verdict?.results[0];
  // which-wins runs a long stream: show its last access; the others have one access
  const shown = walkResult?.accesses[ex.spec.kind === 'which-wins' ? walkResult.accesses.length - 1 : 0];
  return (
    <section className="exercise" aria-label={t('exercise')} data-kind={ex.spec.kind}>
      <h3>{t('exercise')} <span className="muted">({t('seed')} {seed})</span></h3>
      <p className="exercise-prompt">{say(ex.prompt, tx)}</p>
      <form onSubmit={(e) => { e.preventDefault(); submit(); }}>
        {ex.input.type === 'choice' ? (
          <select aria-label={t('answer')} value={answer} onChange={(e) => setAnswer(e.target.value)}>
            <option value="">—</option>
            {ex.input.choices.map((c) => <option key={c} value={c}>{choiceWords(c)}</option>)}
          </select>
        ) : (
          <input aria-label={t('answer')} value={answer} onChange={(e) => setAnswer(e.target.value)}
            inputMode={ex.input.type === 'number' ? 'numeric' : 'text'} placeholder={ex.input.type === 'hex' ? '0x…' : ''} />
        )}{' '}
        <button type="submit">{t('check')}</button>{' '}
        <button type="button" onClick={() => setShowHint((h) => !h)}>{t('hint')}</button>{' '}
        <button type="button" onClick={() => { setVerdict(null); setAnswer(''); setShowWalk(false); onSeed(seed + 1); }}>{t('newExercise')}</button>
      </form>
      {showHint && <p className="hint">{say(ex.hint, tx)}</p>}
      {failure && <p role="alert" className="error">{tx('engineFailed')} <span lang="en">{failure}</span></p>}
      {verdict && (
        <p role="status" className={verdict.correct ? 'ok' : 'error'}>
          {verdict.correct ? t('correct') : t('wrong', { expected: expectedWords(verdict.expected) })}{' '}
          {shown ? <button className="linklike" onClick={() => setShowWalk((s) => !s)}>{t('showWalk')}</button> : null}
        </p>
      )}
      {showWalk && walkResult && shown && <WalkView result={walkResult} access={shown} step={shown.steps.length} />}
    </section>
  );
}
