/* The teacher dashboard's model: the class's students and their progress records (as
 * GET /api/classes/{code}/progress and its event stream give them, dashboard.mjs) folded
 * into one row per student with one cell per exercise and a done mark per lesson. A row is
 * replaced, never changed, when a record of its student arrives, so that the grid redraws
 * that row alone. Each record id is taken once: the event stream may send one again. */

export type Verdict = 'correct' | 'wrong' | 'empty';

/** A progress record as the server answers it (dashboard.mjs recordOf). */
export interface ProgressRecord {
  id: string;
  type: 'attempt' | 'done';
  lesson: string;
  exercise: number | null;
  kind: string | null;
  seed: number | null;
  answer: string | null;
  /** attempts: correct, wrong or empty, as the server graded it; done marks: done or undone */
  verdict: string;
  tries: number | null;
  /** the student pressed Hint */
  hint: boolean;
  shown: boolean;
  /** the page had opened the hint itself after a wrong try, Hint not pressed (absent from older servers) */
  hint_opened?: boolean;
  /** a walk-grid attempt's cells right of all (its partial credit); null or absent for other kinds */
  score?: { right: number; of: number } | null;
  /** the student's clock */
  at: string;
  /** the server's clock */
  received_at: string;
  student: { id: string; name: string | null };
}

export interface Student { id: string; name: string; joined_at?: string }

/** What a student did with one exercise (every variant of it together). */
export interface Cell {
  /** checks of an answer (each sends an attempt; the showing of the answer, an attempt
   * with no answer, is not one) */
  n: number;
  /** one attempt at least was correct */
  solved: boolean;
  /** the verdict of the latest attempt */
  last: Verdict;
  hint: boolean;
  shown: boolean;
  /** a walk-grid exercise: the most cells right of all in one checked attempt */
  score?: { right: number; of: number };
}

export interface Row {
  id: string;
  name: string;
  /** by cellKey(lesson, exercise) */
  cells: ReadonlyMap<string, Cell>;
  /** by lesson: marked done (true) or unmarked again (false) */
  done: ReadonlyMap<string, boolean>;
  /** attempts in the order they arrived */
  attempts: readonly ProgressRecord[];
}

export const cellKey = (lesson: string, exercise: number) => `${lesson}#${exercise}`;

/** A lesson as the grid's columns show it: its exercises (0..exercises-1) and a done column. */
export interface LessonColumns { id: string; title: string; exercises: number }

const VERDICTS = new Set<string>(['correct', 'wrong', 'empty']);

export class Board {
  private rows = new Map<string, Row>();
  private seen = new Set<string>();
  /** the newest done mark per student and lesson: its (at, received_at, id), to compare */
  private doneAt = new Map<string, string>();
  /** lesson -> the exercise positions records named (for lessons the page does not know) */
  readonly named = new Map<string, Set<number>>();
  /** counts changes of `named`: the columns are worked out again only then */
  namedVersion = 0;
  /** record ids taken */
  get records() { return this.seen.size; }

  private row(id: string, name: string | null): Row {
    return this.rows.get(id) ?? { id, name: name ?? `#${id.slice(0, 6)}`, cells: new Map(), done: new Map(), attempts: [] };
  }

  /** Adds students (from the list or a `student` event); true when one was new. */
  addStudents(list: readonly Student[]): boolean {
    let changed = false;
    for (const s of list) {
      const r = this.rows.get(s.id);
      if (r && r.name === s.name) continue;
      this.rows.set(s.id, { ...this.row(s.id, s.name), name: s.name });
      changed = true;
    }
    return changed;
  }

  /** Folds records in; true when one was new. Each student's row is copied once per call. */
  add(records: readonly ProgressRecord[]): boolean {
    const copied = new Map<string, { cells: Map<string, Cell>; done: Map<string, boolean>; attempts: ProgressRecord[]; name: string }>();
    for (const rec of records) {
      if (this.seen.has(rec.id)) continue;
      this.seen.add(rec.id);
      const sid = rec.student.id;
      let w = copied.get(sid);
      if (!w) {
        const r = this.row(sid, rec.student.name);
        w = { cells: new Map(r.cells), done: new Map(r.done), attempts: [...r.attempts], name: rec.student.name ?? r.name };
        copied.set(sid, w);
      }
      if (rec.type === 'done') {
        const order = `${rec.at}\n${rec.received_at}\n${rec.id}`;
        const k = `${sid}\n${rec.lesson}`;
        const prev = this.doneAt.get(k);
        if (prev === undefined || order > prev) { this.doneAt.set(k, order); w.done.set(rec.lesson, rec.verdict === 'done'); }
        if (!this.named.has(rec.lesson)) { this.named.set(rec.lesson, new Set()); this.namedVersion++; }
        continue;
      }
      if (rec.exercise === null) continue;
      const key = cellKey(rec.lesson, rec.exercise);
      const c = w.cells.get(key);
      const verdict = (VERDICTS.has(rec.verdict) ? rec.verdict : 'wrong') as Verdict;
      // The page sends the showing of the answer as an attempt with no answer: not a check.
      const reveal = rec.shown && !rec.answer;
      const s = !reveal && rec.score && rec.score.of > 0 ? rec.score : undefined;
      const score = s && (!c?.score || s.right / s.of > c.score.right / c.score.of) ? { right: s.right, of: s.of } : c?.score;
      w.cells.set(key, {
        n: (c?.n ?? 0) + (reveal ? 0 : 1), solved: (c?.solved ?? false) || verdict === 'correct', last: reveal && c ? c.last : verdict,
        hint: (c?.hint ?? false) || rec.hint, shown: (c?.shown ?? false) || rec.shown, ...(score ? { score } : {}),
      });
      w.attempts.push(rec);
      let set = this.named.get(rec.lesson);
      if (!set) this.named.set(rec.lesson, (set = new Set()));
      if (!set.has(rec.exercise)) { set.add(rec.exercise); this.namedVersion++; }
    }
    for (const [sid, w] of copied) this.rows.set(sid, { id: sid, name: w.name, cells: w.cells, done: w.done, attempts: w.attempts });
    return copied.size > 0;
  }

  get(id: string): Row | undefined { return this.rows.get(id); }

  /** Drops students removed from the class (their records go with them); true when one was here. */
  remove(ids: readonly string[]): boolean {
    let changed = false;
    for (const id of ids) changed = this.rows.delete(id) || changed;
    return changed;
  }

  /** The rows by name (in the page's language's order), then id. */
  list(collator: Intl.Collator): Row[] {
    return [...this.rows.values()].sort((a, b) => collator.compare(a.name, b.name) || (a.id < b.id ? -1 : 1));
  }

  /**
   * The grid's lessons: those the page knows, in their order, each with at least as many
   * exercises as records named; then any lesson only records named (a newer page's),
   * under its id.
   */
  columns(known: readonly LessonColumns[]): LessonColumns[] {
    const width = (id: string, n: number) => Math.max(n, ...[...(this.named.get(id) ?? [])].map((i) => i + 1));
    const out = known.map((l) => ({ ...l, exercises: width(l.id, l.exercises) }));
    const ids = new Set(known.map((l) => l.id));
    for (const id of [...this.named.keys()].sort()) if (!ids.has(id)) out.push({ id, title: id, exercises: width(id, 0) });
    return out;
  }
}
