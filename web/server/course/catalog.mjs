// The lessons a course is graded on, read from lessons/<lang>/NN-id.md at start: each
// lesson's id, its title in every language and its exercises in the order the page
// numbers them (the ```exercise fences, by kind). The gradebook's columns come from here.
// The grader (gen/grade.mjs, content.ts) reads the same files its own way; the course
// tests check that both see the same exercises.
import { readdirSync, readFileSync } from 'node:fs';
import { load as loadYaml } from 'js-yaml';

const LESSONS_DIR = new URL('../../../lessons/', import.meta.url);
export const LANGS = ['en', 'ja', 'zh'];
const LESSON_FILE = /^\d\d-[a-z0-9-]+\.md$/;

function readLesson(text) {
  const m = /^---\n([\s\S]*?)\n---\n/.exec(text);
  if (!m) throw new Error('a lesson starts with front matter between --- lines');
  const meta = loadYaml(m[1]);
  const kinds = [...text.slice(m[0].length).matchAll(/```exercise\n([\s\S]*?)```/g)]
    .map((f) => /^\s*kind:\s*([a-z-]+)\s*$/m.exec(f[1])?.[1] ?? '');
  return { id: String(meta.id), title: String(meta.title), order: Number(meta.order), kinds };
}

/** [{ id, order, title: {en, ja, zh}, kinds: [kind of exercise 0, 1, ...] }] in lesson order. */
export function loadCatalog(dir = LESSONS_DIR) {
  const byId = new Map();
  for (const lang of LANGS) {
    const folder = new URL(`${lang}/`, dir);
    for (const f of readdirSync(folder).filter((n) => LESSON_FILE.test(n)).sort()) {
      const l = readLesson(readFileSync(new URL(f, folder), 'utf8'));
      if (lang === 'en') byId.set(l.id, { id: l.id, order: l.order, title: { en: l.title }, kinds: l.kinds });
      else if (byId.has(l.id)) byId.get(l.id).title[lang] = l.title;
    }
  }
  const list = [...byId.values()].sort((a, b) => a.order - b.order);
  for (const l of list) for (const lang of LANGS) l.title[lang] ??= l.title.en;
  return list;
}

let cached = null;
/** The catalog, read once per process. */
export const catalog = () => (cached ??= loadCatalog());
