// A course's scores from its students' graded attempts: pure functions, no database.
// Each exercise is worth its points (1 unless the teacher says otherwise); the teacher
// picks which answer counts (the first, the best or the last checked one) and what the
// hint, a shown answer and lateness cost, each as a fraction of the exercise's points.
// A lesson's score is the sum of its exercises', the total the sum of the lessons'.

/** What a class is graded by until its teacher says otherwise. */
export const DEFAULT_SETTINGS = Object.freeze({
  counts: 'best',        // first | best | last checked answer of an exercise
  hint_cost: 0,          // fraction of the points lost when the hint was showing
  shown_cost: 1,         // ... when the answer had been shown for that variant
  late: 'refuse',        // after a closing time: refuse records, or accept them marked late
  late_cost: 0,          // fraction lost by a late answer (when late ones are accepted)
  closes_at: null,       // the class's closing time (ISO, UTC) or null
  lesson_closes: {},     // lesson id -> its own closing time
  points: {},            // lesson id -> points of exercise 0, 1, ... (1 where not given)
  lessons: null,         // the lessons the gradebook lists (null: every lesson with exercises)
});

/** Scores as the page shows them: two decimals at most. */
export const round2 = (x) => Math.round(x * 100) / 100;

/** A lesson's closing time: its own, else the class's (ISO, or null for none). */
export const closingOf = (settings, lesson) => settings.lesson_closes?.[lesson] ?? settings.closes_at ?? null;

/**
 * The graded lessons in order: [{ id, title, points: [per exercise], possible }].
 * @param {{id: string, title: Record<string,string>, kinds: string[]}[]} catalog
 */
export function gradedLessons(catalog, settings) {
  const chosen = settings.lessons ? new Set(settings.lessons) : null;
  return catalog
    .filter((l) => l.kinds.length > 0 && (!chosen || chosen.has(l.id)))
    .map((l) => {
      const points = l.kinds.map((_, i) => settings.points?.[l.id]?.[i] ?? 1);
      return { id: l.id, title: l.title, points, possible: round2(points.reduce((a, b) => a + b, 0)) };
    });
}

const byTime = (a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.received_at < b.received_at ? -1 : a.received_at > b.received_at ? 1 : 0);

/**
 * One exercise's score from its attempts ({seed, verdict, hint, shown, score?, at, received_at}),
 * any order: { score, late, counted } (counted: false when no answer was checked).
 * An attempt whose answer was shown before it (for its variant: the page sends a shown
 * answer as an attempt with shown: true) earns (1 - shown_cost); one made with the hint
 * showing (1 - hint_cost); one that arrived after the lesson's closing time is late.
 */
export function exerciseScore(attempts, points, settings, closesAt) {
  const list = [...attempts].sort(byTime);
  const shownAt = new Map();
  for (const r of list) if (r.shown && !shownAt.has(r.seed)) shownAt.set(r.seed, r.at);
  const values = [];
  for (const r of list) {
    if (r.verdict !== 'correct' && r.verdict !== 'wrong') continue; // blank, or the shown answer itself
    const late = closesAt !== null && r.received_at > closesAt;
    // a wrong walk-grid attempt earns its cells right of all; any other wrong answer nothing
    let v = r.verdict === 'correct' ? points
      : r.score && r.score.of > 0 ? points * Math.min(1, Math.max(0, r.score.right / r.score.of)) : 0;
    if (v > 0) {
      if (r.hint) v *= 1 - settings.hint_cost;
      const s = shownAt.get(r.seed);
      if (r.shown || (s !== undefined && r.at >= s)) v *= 1 - settings.shown_cost;
      if (late) v *= 1 - settings.late_cost;
    }
    values.push({ v: round2(v), late });
  }
  if (!values.length) return { score: 0, late: false, counted: false };
  let pick;
  if (settings.counts === 'first') pick = values[0];
  else if (settings.counts === 'last') pick = values[values.length - 1];
  else pick = values.reduce((best, x) => (x.v > best.v || (x.v === best.v && best.late && !x.late) ? x : best));
  return { score: pick.v, late: pick.late, counted: true };
}

/**
 * A student's scores: { lessons: { [id]: { score, possible, late, exercises: [score...] } },
 * total, possible, late: [lesson ids with a late answer counted] }.
 * @param attempts the student's attempt records ({lesson, exercise, seed, verdict, hint, shown, at, received_at})
 */
export function studentScores(attempts, lessons, settings) {
  const groups = new Map();
  for (const r of attempts) {
    const k = `${r.lesson}\n${r.exercise}`;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(r);
  }
  const out = { lessons: {}, total: 0, possible: 0, late: [] };
  for (const l of lessons) {
    const closes = closingOf(settings, l.id);
    const ex = l.points.map((p, i) => exerciseScore(groups.get(`${l.id}\n${i}`) ?? [], p, settings, closes));
    const score = round2(ex.reduce((a, e) => a + e.score, 0));
    const late = ex.some((e) => e.late);
    out.lessons[l.id] = { score, possible: l.possible, late, exercises: ex.map((e) => (e.counted ? e.score : null)) };
    out.total += score; out.possible += l.possible;
    if (late) out.late.push(l.id);
  }
  out.total = round2(out.total); out.possible = round2(out.possible);
  return out;
}
