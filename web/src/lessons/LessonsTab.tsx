/* The Lessons tab as the app shell loads it (lazily): i18next set up, the language from
 * the URL or the learner's saved choice, and the scenario handed to the walk view as
 * JSON when a learner opens an embedded walk there. */
import { useEffect } from 'react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import i18n, { savedLang } from '../i18n';
import { LessonsView } from './LessonsView';
import { LESSON_SCENARIOS, type Lang } from './content';
import type { View } from '../model/url';

export interface LessonsTabProps {
  engine: Vmsim;
  lesson: string | null;
  seed: number;
  seeds: (number | null)[];
  sheet?: number | null;
  lang: Lang | null;
  onNavigate: (patch: { lesson?: string | null; seed?: number; seeds?: (number | null)[]; sheet?: number | null; lang?: Lang; view?: View }) => void;
  onOpenWalk: (scenarioJson: string) => void;
}

export default function LessonsTab({ engine, lesson, seed, seeds, sheet, lang, onNavigate, onOpenWalk }: LessonsTabProps) {
  const current = lang ?? savedLang();
  useEffect(() => {
    if (i18n.language !== current) void i18n.changeLanguage(current);
  }, [current]);
  return (
    <LessonsView engine={engine} lesson={lesson} seed={seed} seeds={seeds} sheet={sheet} lang={current} onNavigate={onNavigate}
      onOpenWalk={(name) => onOpenWalk(JSON.stringify(LESSON_SCENARIOS[name], null, 2))} />
  );
}
