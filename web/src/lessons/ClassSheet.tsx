/* The answer sheet of a class, opened from the teacher's dashboard (loaded lazily there,
 * with the engine): a lesson picker and one line per student of the class. */
import { useEffect, useMemo, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { getEngine } from '../engine';
import { AnswerSheet } from './AnswerSheet';
import { classRows } from './answerSheet';
import { LANGS, LESSON_ORDER, lessonFor, type Lang } from './content';

export default function ClassSheet({ code, names }: { code: string; names: string[] }) {
  const { t, i18n } = useTranslation();
  const lang = (LANGS as string[]).includes(i18n.language) ? (i18n.language as Lang) : 'en';
  const [lesson, setLesson] = useState(LESSON_ORDER[0]);
  const [engine, setEngine] = useState<Vmsim | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => { getEngine().then(setEngine, (e: Error) => setFailed(e.message)); }, []);
  const rows = useMemo(() => classRows(lesson, code, names), [lesson, code, names]);
  if (failed) return <p className="error" role="alert">{failed}</p>;
  if (!engine) return <p className="muted" role="status">{t('sheet.working')}</p>;
  const picker = (
    <label>{t('sheet.lesson')}{' '}
      <select value={lesson} onChange={(e) => setLesson(e.target.value)}>
        {LESSON_ORDER.map((id, i) => <option key={id} value={id}>{i + 1}. {lessonFor(id, lang).lesson?.meta.title ?? id}</option>)}
      </select>{' '}
    </label>
  );
  return <AnswerSheet engine={engine} lesson={lesson} rows={rows} lang={lang} by="student" controls={picker} />;
}
