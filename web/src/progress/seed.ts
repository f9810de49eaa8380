/* The seed of a student's variant of an exercise in a class: the same (class, name,
 * lesson, exercise) always gives the same seed, so a reload, another browser or the
 * teacher's view shows the same variant, and two students of one class get different
 * ones. Pure (no DOM, no storage): the class server's grading imports it too. */

/** 1 to 1,000,000: FNV-1a (32-bit) over the UTF-8 of `${CODE}\n${name}\n${lesson}\n${exercise}`.
 * The code is upper-cased and the name NFC-normalised and trimmed, as the server keeps them. */
export function seedFor(code: string, name: string, lesson: string, exercise: number): number {
  const text = `${code.trim().toUpperCase()}\n${name.normalize('NFC').trim()}\n${lesson}\n${exercise}`;
  let h = 0x811c9dc5;
  for (const b of new TextEncoder().encode(text)) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return (h % 1_000_000) + 1;
}

/** The address (path and query) that opens exercise `exercise` (its position, from 0) of a
 * lesson at `seed`, the other exercises at their usual seeds: how a teacher opens the
 * variant a student had (`/?view=lessons&lesson=ept-and-npt&seeds=,,412310` is the third
 * exercise at seed 412310). */
export function variantLink(lesson: string, exercise: number, seed: number, of?: { who: string; answer: string }): string {
  const base = `/?view=lessons&lesson=${encodeURIComponent(lesson)}&seeds=${','.repeat(exercise)}${seed}`;
  // whose variant it is and what they answered, for the teacher's page to say (never sent anywhere)
  return of ? `${base}&who=${encodeURIComponent(of.who)}&ex=${exercise}&answer=${encodeURIComponent(of.answer)}` : base;
}

/** Whose variant a teacher opened from the attempts list: the student, the exercise and
 * their answer, from the page's address; null when it names none. */
export function variantOf(search: string): { who: string; exercise: number; answer: string } | null {
  const q = new URLSearchParams(search);
  const who = q.get('who'); const ex = Number(q.get('ex'));
  if (!who || !Number.isInteger(ex) || ex < 0) return null;
  return { who: who.slice(0, 60), exercise: ex, answer: (q.get('answer') ?? '').slice(0, 200) };
}
