/* A teacher's answer sheet, as OSTEP's homework simulators print with -c: for a lesson,
 * one line per student of a class (their own seeds, progress/seed.ts) or per seed of the
 * page (a lesson opened at ?seed=N asks exercise k at seed N + k), each exercise's seed
 * and the engine's answer. Pure: the rows and the words of an answer; AnswerSheet.tsx
 * runs the engine and draws them. */
import { LESSONS } from './content';
import type { ExerciseSpec } from './exercises';
import { seedFor, variantLink } from '../progress/seed';

/** The most lines one sheet holds (a class of 500, or 500 seeds). */
export const SHEET_MAX = 500;

export interface SheetRow {
  /** the student's name, or the seed the lesson page is opened at */
  label: string;
  /** each exercise's seed, in the lesson's order */
  seeds: number[];
  /** the address that opens each exercise's variant */
  links: string[];
}

/** The lesson's exercises, in the order the page numbers them. */
export function lessonSpecs(lesson: string): ExerciseSpec[] {
  const l = LESSONS.en[lesson];
  if (!l) throw new Error(`there is no lesson "${lesson}"`);
  return l.parts.flatMap((p) => (p.type === 'exercise' ? [p.spec] : []));
}

/** Lines for `count` seeds from `first` (a page opened at ?seed=N). */
export function seedRows(lesson: string, first: number, count: number): SheetRow[] {
  const n = lessonSpecs(lesson).length;
  return Array.from({ length: Math.max(0, Math.min(count, SHEET_MAX)) }, (_, i) => {
    const seed = first + i;
    const seeds = Array.from({ length: n }, (_, k) => seed + k);
    const link = `/?view=lessons&lesson=${encodeURIComponent(lesson)}&seed=${seed}`;
    return { label: String(seed), seeds, links: seeds.map(() => link) };
  });
}

/** Lines for the students of class `code`, by name, with the seeds they get. */
export function classRows(lesson: string, code: string, names: string[]): SheetRow[] {
  const n = lessonSpecs(lesson).length;
  return names.slice(0, SHEET_MAX).map((name) => {
    const seeds = Array.from({ length: n }, (_, k) => seedFor(code, name, lesson, k));
    return { label: name, seeds, links: seeds.map((s, k) => variantLink(lesson, k, s)) };
  });
}
