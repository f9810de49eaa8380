// An answer as the page shows it: a choice's id (guest_page_fault) in the words of the
// page's English exercise texts ("guest page fault (#PF)"); any other answer as typed.
// For the progress CSV, which gives both (the id in its own column).
import { readFileSync } from 'node:fs';

let choices = null;
const load = () => (choices ??= JSON.parse(readFileSync(new URL('../../src/locales/en/exercises.json', import.meta.url), 'utf8')).choice ?? {});

export function answerWords(answer) {
  if (typeof answer !== 'string' || !answer) return answer ?? '';
  const w = load()[answer];
  return typeof w === 'string' ? w : answer;
}
