/* The answer sheet of a lesson (answerSheet.ts): one line per student or seed, each
 * exercise's seed (a link to that variant) and the engine's answer, worked out a few
 * cells at a time so that a class's sheet never freezes the page (a which-wins answer
 * runs three streams), and printable: the page's controls are left off the paper. */
import { useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { generate } from './exercises';
import { lessonSpecs, type SheetRow } from './answerSheet';
import { LESSON_ORDER, lessonFor, type Lang } from './content';

export function AnswerSheet({ engine, lesson, rows, lang, by, controls }: { engine: Vmsim; lesson: string; rows: SheetRow[]; lang: Lang;
  /** what a line is: a student of a class, or a seed of the page */
  by: 'student' | 'seed'; controls?: React.ReactNode }) {
  const { t } = useTranslation();
  const { t: tx } = useTranslation('exercises');
  const specs = useMemo(() => lessonSpecs(lesson), [lesson]);
  const [answers, setAnswers] = useState<ReadonlyMap<string, string>>(new Map());
  useEffect(() => {
    let live = true;
    const out = new Map<string, string>();
    const todo = rows.flatMap((r) => r.seeds.map((seed, k) => ({ seed, k })));
    let i = 0;
    setAnswers(new Map());
    const step = () => {
      if (!live) return;
      const until = performance.now() + 40;
      while (i < todo.length && performance.now() < until) {
        const { seed, k } = todo[i++];
        const key = `${k}:${seed}`;
        if (out.has(key)) continue;
        try {
          const ex = generate(specs[k], seed);
          const expected = ex.expected(ex.scenarios.map((s) => engine.run(s)));
          out.set(key, ex.input.type !== 'choice' ? expected
            : expected.split(' or ').map((c) => tx(`choice.${c}`, { defaultValue: c })).reduce((a, b) => tx('or', { a, b })));
        } catch (e) { out.set(key, `(${(e as Error).message})`); }
      }
      setAnswers(new Map(out));
      if (i < todo.length) setTimeout(step, 0);
    };
    step();
    return () => { live = false; };
  }, [engine, specs, rows, tx]);
  const title = lessonFor(lesson, lang).lesson?.meta.title ?? lesson;
  const done = rows.every((r) => r.seeds.every((s, k) => answers.has(`${k}:${s}`)));
  return (
    <section className="answer-sheet" data-testid="answer-sheet" data-lesson={lesson} aria-label={t('sheet.title', { lesson: title })}>
      <h2>{t('sheet.title', { lesson: `${LESSON_ORDER.indexOf(lesson) + 1}. ${title}` })}</h2>
      <p className="muted">{t(by === 'student' ? 'sheet.introClass' : 'sheet.introSeeds', { count: rows.length })}</p>
      <div className="sheet-controls">
        {controls}
        <button type="button" onClick={() => window.print()}>{t('sheet.print')}</button>
        {!done && <span className="muted" role="status"> {t('sheet.working')}</span>}
      </div>
      <table className="sheet-table" data-state={done ? 'done' : 'working'}>
        <thead>
          <tr>
            <th scope="col">{t(by === 'student' ? 'sheet.student' : 'sheet.seedOfPage')}</th>
            {specs.map((_, k) => <th scope="col" key={k}>{t('sheet.exercise', { n: k + 1 })}</th>)}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.label}>
              <th scope="row">{r.label}</th>
              {r.seeds.map((seed, k) => {
                const a = answers.get(`${k}:${seed}`);
                return (
                  <td key={k} data-seed={seed}>
                    <a href={r.links[k]} className="muted">{t('seed')} {seed}</a><br />
                    {a === undefined ? <span className="muted">…</span> : <strong className="sheet-answer">{a}</strong>}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
