/* Lessons are content with contracts: front matter the app relies on, scenarios that
 * pass the schema and run in the engine, embedded views that point at real accesses,
 * exercises of known kinds, and glossary terms in every language. */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import matter from 'gray-matter';
import Ajv from 'ajv';

const root = join(__dirname, '..', '..');
const lessonsDir = join(root, 'lessons');
const vmsim = process.env.VMSIM ?? join(root, 'wasm-core', 'build', 'vmsim');
const ajv = new Ajv({ allErrors: true });
const validate = ajv.compile(JSON.parse(readFileSync(join(root, 'wasm-core', 'schema', 'scenario.schema.json'), 'utf8')));
const EXERCISE_KINDS = ['compute-hpa', 'count-refs', 'predict-exit', 'predict-bits', 'which-wins', 'flat-table-size',
  'shadow-exits', 'flat-walk', 'vmfunc-switch', 'cache-hits'];

function lessons(lang: string) {
  const dir = join(lessonsDir, lang);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => ({ file: f, ...matter(readFileSync(join(dir, f), 'utf8')) }));
}

function blocks(body: string, info: string): Record<string, string>[] {
  const re = new RegExp('```' + info + '\\n([\\s\\S]*?)```', 'g');
  return [...body.matchAll(re)].map((m) =>
    Object.fromEntries(
      m[1].trim().split('\n').map((line) => {
        const i = line.indexOf(':');
        return [line.slice(0, i).trim(), line.slice(i + 1).trim()];
      }),
    ),
  );
}

function run(name: string) {
  const p = spawnSync(vmsim, ['run', join(lessonsDir, 'scenarios', `${name}.json`)], { encoding: 'utf8' });
  expect(p.status, p.stderr).toBe(0);
  return JSON.parse(p.stdout);
}

describe('lessons', () => {
  const en = lessons('en');

  it('seven English lessons, ordered 1..7, with unique ids and known prerequisites', () => {
    expect(en.map((l) => l.data.order).sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const ids = new Set(en.map((l) => l.data.id));
    expect(ids.size).toBe(7);
    for (const l of en) {
      expect(l.data.language).toBe('en');
      expect(typeof l.data.title).toBe('string');
      for (const p of l.data.prerequisites) expect(ids.has(p), `${l.file}: prerequisite ${p}`).toBe(true);
    }
  });

  it('every scenario passes the schema and runs in the engine', () => {
    const names = readdirSync(join(lessonsDir, 'scenarios')).filter((f) => f.endsWith('.json'));
    expect(names.length).toBeGreaterThan(0);
    for (const f of names) {
      const s = JSON.parse(readFileSync(join(lessonsDir, 'scenarios', f), 'utf8'));
      expect(validate(s), `${f}: ${ajv.errorsText(validate.errors)}`).toBe(true);
      run(f.replace(/\.json$/, ''));
    }
  });

  it('embedded views name a listed scenario and an access that exists', () => {
    for (const l of en) {
      for (const b of blocks(l.content, 'vmemlab')) {
        expect(l.data.scenarios, `${l.file}`).toContain(b.scenario);
        expect(existsSync(join(lessonsDir, 'scenarios', `${b.scenario}.json`))).toBe(true);
        const result = run(b.scenario);
        expect(Number(b.access)).toBeLessThan(result.accesses.length);
        expect(['walk', 'memory', 'compare']).toContain(b.view);
      }
    }
  });

  it('every lesson has exercises of known kinds', () => {
    for (const l of en) {
      const ex = blocks(l.content, 'exercise');
      expect(ex.length, l.file).toBeGreaterThan(0);
      for (const e of ex) expect(EXERCISE_KINDS, `${l.file}`).toContain(e.kind);
    }
  });

  it('numbers in the lessons agree with the engine', () => {
    // lesson 3: 24 references for 4 + 4 levels; lesson 5: 9 for a flat walk, 1 GiB -> 1 MiB
    expect(run('ept-4k').accesses[0].memory_refs).toBe(24);
    const flat = run('flat-sunway');
    expect(flat.accesses[0].memory_refs).toBe(9);
    expect(flat.flat_table_bytes).toBe(1 << 20);
    // lesson 2: the shadow walk story
    expect(run('shadow-basics').accesses.map((a: { memory_refs: number }) => a.memory_refs).slice(0, 3)).toEqual([5, 4, 8]);
  });

  it('lessons 1, 3 and 5 exist in Japanese and Chinese with the same ids, scenarios and views', () => {
    for (const lang of ['ja', 'zh']) {
      const tr = lessons(lang);
      expect(tr.map((l) => l.data.order).sort()).toEqual([1, 3, 5]);
      for (const l of tr) {
        const original = en.find((e) => e.data.id === l.data.id)!;
        expect(original, `${lang}/${l.file}`).toBeTruthy();
        expect(l.data.language).toBe(lang);
        expect(l.data.scenarios).toEqual(original.data.scenarios);
        expect(blocks(l.content, 'vmemlab')).toEqual(blocks(original.content, 'vmemlab'));
        expect(blocks(l.content, 'exercise')).toEqual(blocks(original.content, 'exercise'));
        expect(l.data.title).not.toEqual(original.data.title);   // translated, not copied
        // Every figure of the English text (24 references, 1 GiB -> 1 MiB, 196 ns, ...) is in
        // the translation too: a translation cannot quietly say another number.
        const nums = (t: string) => new Set(t.match(/0x[0-9a-f]+|\d+(?:[.,]\d+)*/gi) ?? []);
        const have = nums(l.content);
        expect([...nums(original.content)].filter((n) => !have.has(n)), `${lang}/${l.file}: numbers`).toEqual([]);
      }
    }
  });

  it('every glossary link in every language resolves to a defined term', () => {
    const g = JSON.parse(readFileSync(join(lessonsDir, 'glossary.json'), 'utf8'));
    let links = 0;
    for (const lang of ['en', 'ja', 'zh']) {
      for (const l of lessons(lang)) {
        for (const m of l.content.matchAll(/\]\(glossary:([a-z0-9_]+)\)/g)) {
          links++;
          expect(g.terms[m[1]], `${lang}/${l.file}: glossary:${m[1]}`).toBeTruthy();
        }
      }
    }
    expect(links).toBeGreaterThan(10);
  });

  it('every link into another tab of the app names a tab that exists', () => {
    const views = ['walk', 'memory', 'compare', 'playground', 'results', 'live', 'lessons'];
    let links = 0;
    for (const lang of ['en', 'ja', 'zh']) {
      for (const l of lessons(lang)) {
        for (const m of l.content.matchAll(/\]\(app:([^)]*)\)/g)) {
          links++;
          expect(views, `${lang}/${l.file}: app:${m[1]}`).toContain(m[1]);
        }
      }
    }
    expect(links).toBeGreaterThanOrEqual(5);
  });

  it('the glossary defines every term in English, Japanese and Chinese', () => {
    const g = JSON.parse(readFileSync(join(lessonsDir, 'glossary.json'), 'utf8'));
    for (const term of ['gva', 'gpa', 'hva', 'hpa', 'gfn', 'pfn', 'eptp', 'ncr3', 'pte', 'walk', 'exit', 'vmfunc', ...Object.keys(g.terms)]) {
      for (const lang of ['en', 'ja', 'zh']) expect(g.terms[term]?.[lang], `${term}.${lang}`).toBeTruthy();
    }
  });
});
