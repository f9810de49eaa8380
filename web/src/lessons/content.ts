/* The lessons as the app sees them: Markdown files from lessons/<lang>/ with front matter,
 * split into prose, embedded views (```vmemlab) and exercises (```exercise). Bundled at
 * build time, so a lesson opens without a request. */
import { load as loadYaml } from 'js-yaml';
import type { Scenario } from '../../../wasm-core/js/types';
import type { ExerciseSpec } from './exercises';
import { LANGS, type Lang } from './langs';

export { LANGS, type Lang };

export interface LessonMeta {
  id: string;
  title: string;
  order: number;
  prerequisites: string[];
  language: Lang;
  scenarios: string[];
}

export type Part =
  | { type: 'prose'; text: string }
  | { type: 'view'; scenario: string; view: string; access: number; step: number | null }
  | { type: 'exercise'; spec: ExerciseSpec; index: number };

export interface Lesson {
  meta: LessonMeta;
  parts: Part[];
}

const files = import.meta.glob('../../../lessons/*/*.md', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;
const scenarioFiles = import.meta.glob('../../../lessons/scenarios/*.json', { import: 'default', eager: true }) as Record<string, Scenario>;

export const LESSON_SCENARIOS: Record<string, Scenario> = Object.fromEntries(
  Object.entries(scenarioFiles).map(([path, s]) => [path.split('/').pop()!.replace(/\.json$/, ''), s]),
);

function fields(block: string): Record<string, string> {
  return Object.fromEntries(
    block.trim().split('\n').filter((l) => l.includes(':')).map((l) => {
      const i = l.indexOf(':');
      return [l.slice(0, i).trim(), l.slice(i + 1).trim()];
    }),
  );
}

function list(v: string | undefined): string[] | undefined {
  if (!v) return undefined;
  return v.replace(/^\[|\]$/g, '').split(',').map((x) => x.trim()).filter(Boolean);
}

export function parseLesson(text: string): Lesson {
  const m = /^---\n([\s\S]*?)\n---\n/.exec(text);
  if (!m) throw new Error('a lesson starts with front matter between --- lines');
  const meta = loadYaml(m[1]) as LessonMeta;
  const body = text.slice(m[0].length);
  const parts: Part[] = [];
  const fence = /```(vmemlab|exercise)\n([\s\S]*?)```/g;
  let last = 0;
  let exercises = 0;
  for (const f of body.matchAll(fence)) {
    if (body.slice(last, f.index).trim()) parts.push({ type: 'prose', text: body.slice(last, f.index) });
    const kv = fields(f[2]);
    if (f[1] === 'vmemlab') {
      parts.push({ type: 'view', scenario: kv.scenario, view: kv.view ?? 'walk', access: Number(kv.access ?? 0),
        step: kv.step === undefined ? null : Number(kv.step) });
    } else {
      parts.push({ type: 'exercise', index: exercises++,
        spec: { kind: kv.kind as ExerciseSpec['kind'], mode: kv.mode, workloads: list(kv.workloads) } });
    }
    last = f.index! + f[0].length;
  }
  if (body.slice(last).trim()) parts.push({ type: 'prose', text: body.slice(last) });
  return { meta, parts };
}

/** lessons[lang][id]; built once. Files named NN-id.md are the lessons; the others
 * (teacher-guide.md) are guides: prose pages outside the sequence, with no progress. */
export const LESSONS: Record<Lang, Record<string, Lesson>> = { en: {}, ja: {}, zh: {} };
export const GUIDES: Record<Lang, Record<string, Lesson>> = { en: {}, ja: {}, zh: {} };
for (const [path, text] of Object.entries(files)) {
  const [lang, file] = path.split('/').slice(-2) as [Lang, string];
  if (!LANGS.includes(lang)) continue;
  const lesson = parseLesson(text);
  (/^\d+-/.test(file) ? LESSONS : GUIDES)[lang][lesson.meta.id] = lesson;
}
export const TEACHER_GUIDE = 'teacher-guide';

export const LESSON_ORDER: string[] = Object.values(LESSONS.en)
  .sort((a, b) => a.meta.order - b.meta.order)
  .map((l) => l.meta.id);

/** The lesson (or guide) in the chosen language, or the English one with `fallback` set. */
export function lessonFor(id: string, lang: Lang): { lesson: Lesson | null; fallback: boolean } {
  const pages = LESSONS.en[id] ? LESSONS : GUIDES;
  const translated = pages[lang]?.[id];
  if (translated) return { lesson: translated, fallback: false };
  return { lesson: pages.en[id] ?? null, fallback: lang !== 'en' };
}
