/* Lessons are content with contracts: front matter the app relies on, scenarios that
 * pass the schema and run in the engine, embedded views that point at real accesses,
 * exercises of known kinds, glossary terms and links in every language, translations that
 * keep every figure, a lab that names real hw-lab benchmarks, and figures that come from
 * the published-figures file or the engine. */
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
  'shadow-exits', 'flat-walk', 'vmfunc-switch', 'cache-hits', 'agile-walk', 'walk-grid'];

/** The lessons (NN-id.md) of a language; `guides` the other pages (teacher-guide.md). */
function pages(lang: string, which: 'lessons' | 'guides') {
  const dir = join(lessonsDir, lang);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md') && /^\d+-/.test(f) === (which === 'lessons'))
    .map((f) => ({ file: f, ...matter(readFileSync(join(dir, f), 'utf8')) }));
}
const lessons = (lang: string) => pages(lang, 'lessons');
const everything = (lang: string) => [...pages(lang, 'lessons'), ...pages(lang, 'guides')];
const LANGS = ['en', 'ja', 'zh'];

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

  it('eight English lessons, ordered 1..8, with unique ids and known prerequisites', () => {
    expect(en.map((l) => l.data.order).sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    const ids = new Set(en.map((l) => l.data.id));
    expect(ids.size).toBe(8);
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
    // lesson 2: the shadow walk story, event by event (references, exits), and its totals
    type Acc = { memory_refs: number; exits: number; outcome: string; hpa: string | null; fault: Record<string, unknown> | null };
    const shadow = run('shadow-basics');
    expect(shadow.accesses.map((a: Acc) => [a.memory_refs, a.exits])).toEqual(
      [[5, 1], [4, 0], [8, 1], [0, 1], [8, 1], [0, 1], [5, 1], [0, 0], [4, 1]]);
    expect(shadow.accesses[8].fault).toMatchObject({ vector: 14, error_code: '0x0', cr2: '0x402000' });
    expect([shadow.totals.memory_refs, shadow.totals.exits]).toEqual([34, 7]);
    // lesson 3: the three endings (20 refs and a guest #PF; 24 and qualification 0x1aa; 24 and exit 49)
    const faults = run('faults-and-exits').accesses;
    expect(faults.map((a: Acc) => [a.outcome, a.memory_refs, a.exits])).toEqual(
      [['guest_page_fault', 20, 0], ['ept_violation', 24, 1], ['ept_misconfig', 24, 1]]);
    expect(faults[1].fault).toMatchObject({ exit_reason: 48, qualification: '0x1aa', guest_physical_address: '0x200000' });
    expect(faults[2].fault).toMatchObject({ exit_reason: 49 });
    // lesson 4: 13, 0, 2, 1, 0, (invlpg), 4 references: 20 for six translations
    const caches = run('caching-the-walk');
    expect(caches.accesses.map((a: Acc) => a.memory_refs)).toEqual([13, 0, 2, 1, 0, 0, 4]);
    expect(caches.totals.memory_refs).toBe(20);
    // lesson 5: a write to the read-only page ends in the guest after 8 references, no exit
    expect([flat.accesses[1].outcome, flat.accesses[1].memory_refs, flat.accesses[1].exits]).toEqual(['guest_page_fault', 8, 0]);
    // lesson 6: the gate's round trip
    const gate = run('vmfunc-gate').accesses;
    expect(gate.map((a: Acc) => a.outcome)).toEqual(
      ['ok', 'ept_violation', 'ok', 'ok', 'ok', 'ept_violation', 'vmcall_exit', 'vmfunc_exit', 'vmfunc_exit']);
    expect(gate.map((a: Acc) => a.exits)).toEqual([0, 1, 0, 0, 0, 1, 1, 1, 1]);
    expect(gate[1].fault).toMatchObject({ exit_reason: 48, qualification: '0x181' });
    expect(gate[3].hpa).toBe('0x80300000');
    expect([gate[6], gate[7], gate[8]].map((a: Acc) => a.fault?.exit_reason)).toEqual([18, 59, 59]);
    // lesson 8: switched at level 2, 17 cold, 16 warm, a store below the switch, an exit above
    // it, 18 after the zap, and the guest's own #PF after 12 with no exit
    const agile = run('agile-switch').accesses;
    expect(agile.map((a: Acc) => [a.memory_refs, a.exits])).toEqual([[17, 1], [16, 0], [0, 0], [0, 1], [18, 1], [12, 0]]);
    expect(agile[5].outcome).toBe('guest_page_fault');
    // the table: 4, 12, 16, 20, 24 for no switch and switches at levels 1..4
    const sc = JSON.parse(readFileSync(join(lessonsDir, 'scenarios', 'agile-switch.json'), 'utf8'));
    const warm = [0, 1, 2, 3, 4].map((sw) => {
      const p = spawnSync(vmsim, ['run', '-'], { input: JSON.stringify({ ...sc, agile: { switch_level: sw } }), encoding: 'utf8' });
      return JSON.parse(p.stdout).accesses[1].memory_refs;
    });
    expect(warm).toEqual([4, 12, 16, 20, 24]);
    // the policy: 4 a walk, 3 + 12 at the move, 12 while nested, 3 + 4 back in shadow
    const policy = run('agile-policy').accesses;
    expect(policy.map((a: Acc) => a.memory_refs)).toEqual([5, 0, 8, 0, 15, 12, 0, 12, 12, 12, 7]);
  });

  // Every figure of the English text (24 references, 1 GiB -> 1 MiB, 196 ns, ...) is in the
  // translation too: a translation cannot quietly say another number.
  const nums = (t: string) => new Set(t.match(/0x[0-9a-f]+|\d+(?:[.,]\d+)*/gi) ?? []);
  const missingNumbers = (original: string, translated: string) => {
    const have = nums(translated);
    return [...nums(original)].filter((n) => !have.has(n));
  };

  it('all eight lessons exist in Japanese and Chinese with the same ids, scenarios, views and exercises', () => {
    for (const lang of ['ja', 'zh']) {
      const tr = lessons(lang);
      expect(tr.map((l) => l.data.order).sort(), lang).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      for (const l of tr) {
        const original = en.find((e) => e.data.id === l.data.id)!;
        expect(original, `${lang}/${l.file}`).toBeTruthy();
        expect(l.file).toBe(original.file);
        expect(l.data.language).toBe(lang);
        expect(l.data.order).toBe(original.data.order);
        expect(l.data.prerequisites).toEqual(original.data.prerequisites);
        expect(l.data.scenarios).toEqual(original.data.scenarios);
        expect(blocks(l.content, 'vmemlab')).toEqual(blocks(original.content, 'vmemlab'));
        expect(blocks(l.content, 'exercise')).toEqual(blocks(original.content, 'exercise'));
        expect(l.data.title).not.toEqual(original.data.title);   // translated, not copied
        expect(missingNumbers(original.content, l.content), `${lang}/${l.file}: numbers`).toEqual([]);
        // Every section is translated: as many second-level headings as the English page.
        const h2 = (text: string) => (text.match(/^## /gm) ?? []).length;
        expect(h2(l.content), `${lang}/${l.file}: sections`).toBe(h2(original.content));
      }
    }
  });

  it('the teacher guide exists in English, Japanese and Chinese and keeps every figure', () => {
    const guide = pages('en', 'guides');
    expect(guide.map((g) => g.file)).toEqual(['teacher-guide.md']);
    expect(guide[0].data.id).toBe('teacher-guide');
    for (const lang of ['ja', 'zh']) {
      const tr = pages(lang, 'guides');
      expect(tr.map((g) => g.file), lang).toEqual(['teacher-guide.md']);
      expect(tr[0].data.id).toBe('teacher-guide');
      expect(tr[0].data.language).toBe(lang);
      expect(tr[0].data.title).not.toEqual(guide[0].data.title);
      expect(missingNumbers(guide[0].content, tr[0].content), `${lang}/teacher-guide.md: numbers`).toEqual([]);
    }
  });

  it('every lesson is one sitting: a worked example, misconceptions, a summary, exercises, then the lab', () => {
    // The headings a lesson must have, in each language (the lab last).
    const heads: Record<string, { worked: RegExp; mis: RegExp; summary: RegExp; exercises: string; lab: string }> = {
      en: { worked: /^Worked example/, mis: /^Misconceptions/, summary: /^Summary$/, exercises: 'Exercises', lab: 'Lab' },
      ja: { worked: /^例題/, mis: /^よくある誤解/, summary: /^まとめ$/, exercises: '演習', lab: '実習' },
      zh: { worked: /^例题/, mis: /^常见误解/, summary: /^小结$/, exercises: '练习', lab: '实验' },
    };
    for (const lang of LANGS) {
      for (const l of lessons(lang)) {
        const h2 = [...l.content.matchAll(/^## (.+)$/gm)].map((m) => m[1].trim());
        const where = `${lang}/${l.file}: ${h2.join(' | ')}`;
        const h = heads[lang];
        expect(h2.some((x) => h.worked.test(x)), where).toBe(true);
        expect(h2.some((x) => h.mis.test(x)), where).toBe(true);
        expect(h2.some((x) => h.summary.test(x)), where).toBe(true);
        expect(h2.at(-2), where).toBe(h.exercises);
        expect(h2.at(-1), where).toBe(h.lab);
        // 15-25 minutes: prose a learner reads in about 8-14 minutes (English words; Japanese
        // and Chinese characters at their usual reading rates), the rest for walks and exercises.
        const prose = l.content.replace(/```[\s\S]*?```/g, '');
        const size = lang === 'en' ? prose.split(/\s+/).filter(Boolean).length : (prose.match(/[\u3040-\u30ff\u4e00-\u9fff]/g) ?? []).length;
        const [lo, hi] = lang === 'en' ? [900, 2600] : lang === 'ja' ? [1800, 7000] : [1200, 5200];
        expect(size, `${lang}/${l.file}: reading length`).toBeGreaterThanOrEqual(lo);
        expect(size, `${lang}/${l.file}: reading length`).toBeLessThanOrEqual(hi);
      }
    }
  });

  it('every lab runs real hw-lab benchmarks with flags hw-lab/run has, and uploads to the class', () => {
    const src = readdirSync(join(root, 'hw-lab', 'src')).filter((f) => f.endsWith('.c'))
      .map((f) => readFileSync(join(root, 'hw-lab', 'src', f), 'utf8')).join('\n');
    const main = readFileSync(join(root, 'hw-lab', 'src', 'main.c'), 'utf8');
    const benchmarks = new Set([...main.matchAll(/^\s*\{"(\w+)",/gm)].map((m) => m[1]));
    expect(benchmarks.has('memtouch')).toBe(true);
    const cli = readFileSync(join(root, 'hw-lab', 'lib', 'hwlab', 'cli.py'), 'utf8');
    const flags = new Set([...cli.matchAll(/add_argument\("(--[a-z-]+)"/g)].map((m) => m[1]));
    expect(flags.has('--only')).toBe(true);
    // memtouch names its base case by the machine's page size at run time (hw_size_tag: 4k, 8k on Sunway)
    const caseExists = (bench: string, kase: string) =>
      src.includes(`"${kase}"`) || (bench === 'ptrchase' && /^(4k|thp)_\d+MiB$/.test(kase))
      || (bench === 'memtouch' && /^(4k|8k)$/.test(kase) && src.includes('hw_size_tag(hw_pages()->base'));
    let commands = 0;
    for (const lang of LANGS) {
      for (const l of everything(lang)) {
        for (const m of l.content.matchAll(/hw-lab\/run([^\n`]*)/g)) {
          commands++;
          for (const f of m[1].matchAll(/(?:^|\s)(--[a-z-]+)/g)) expect(flags, `${lang}/${l.file}: ${m[0]}`).toContain(f[1]);
          for (const o of m[1].matchAll(/--only\s+([\w:]+)/g)) {
            const [bench, kase] = o[1].split(':');
            expect(benchmarks, `${lang}/${l.file}: --only ${o[1]}`).toContain(bench);
            if (kase) expect(caseExists(bench, kase), `${lang}/${l.file}: no case ${kase} in ${bench}`).toBe(true);
          }
        }
        if (!/^\d+-/.test(l.file)) continue;
        const lab = l.content.slice(l.content.lastIndexOf('\n## '));
        expect(lab, `${lang}/${l.file}: the lab runs hw-lab/run --only`).toMatch(/hw-lab\/run[^\n]*--only /);
        expect(lab, `${lang}/${l.file}: the lab uploads to the class`).toMatch(/--upload \S+ --class \S+/);
        expect(lab, `${lang}/${l.file}: the lab links the Results tab`).toContain('](app:results)');
        expect((lab.match(/[?？]/g) ?? []).length, `${lang}/${l.file}: questions for the class chart`).toBeGreaterThanOrEqual(2);
      }
    }
    expect(commands).toBeGreaterThanOrEqual(21);
  });

  it('every figure the English text quotes in seconds, ns, µs, cycles or % is published (or derived from one)', () => {
    const figures = JSON.parse(readFileSync(join(root, 'wasm-core', 'data', 'published-figures.json'), 'utf8'));
    const published = new Set<number>();
    const collect = (v: unknown): void => {
      if (typeof v === 'number') published.add(v);
      else if (typeof v === 'string') for (const m of v.matchAll(/\d+(?:\.\d+)?/g)) published.add(Number(m[0]));
      else if (v && typeof v === 'object') Object.values(v).forEach(collect);
    };
    collect(figures);
    // Figures the lessons derive from published ones, with the arithmetic.
    const ept = figures.ept_on_off.touch_1gib_every_4k_page_seconds;
    const perGiB = 262144;   // 4 KiB pages in 1 GiB
    const xeonHz = Number(/@ ([\d.]+)GHz/.exec(figures.ept_on_off.cpu)![1]) * 1e9;
    const kvmExit = figures.cpuid_exit_cycles.runs.kvm[0].min;
    const derived: number[] = [
      (ept.ept_off.real / perGiB) * 1e6, (ept.ept_on.real / perGiB) * 1e6,   // µs per page
      ept.ept_off.real - ept.ept_on.real,                                     // s EPT off costs more
      ((ept.ept_off.real - ept.ept_on.real) / perGiB) * 1e6,                  // µs more per page
      (kvmExit / xeonHz) * 1e6,                                               // one exit, in µs at 2.30 GHz
      figures.vmfunc_vs_vmcall.round_trip_ns.vmcall - figures.vmfunc_vs_vmcall.round_trip_ns.vmfunc_gate,
    ];
    // Figures measured here by replaying a recorded program (lessons/figures/*.json; the
    // replay test records it again and checks them), quoted rounded.
    const measured = (v: unknown): void => {
      if (typeof v === 'number') derived.push(v);
      else if (v && typeof v === 'object') Object.values(v).forEach(measured);
    };
    for (const f of readdirSync(join(lessonsDir, 'figures'))) measured(JSON.parse(readFileSync(join(lessonsDir, 'figures', f), 'utf8')));
    const agrees = (quoted: string) => {
      const x = Number(quoted.replace(/,/g, ''));
      const digits = (quoted.split('.')[1] ?? '').length;
      return published.has(x) || derived.some((d) => Math.abs(d - x) <= 0.5 * 10 ** -digits + 1e-12);
    };
    let quoted = 0;
    for (const l of [...en, ...pages('en', 'guides')]) {
      const prose = l.content.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
      for (const m of prose.matchAll(/(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s?(?:s|ns|µs|cycles|%)(?![\w])/g)) {
        quoted++;
        expect(agrees(m[1]), `${l.file}: "${m[0]}" is in no published figure`).toBe(true);
      }
    }
    expect(quoted).toBeGreaterThan(30);
  });

  it('every link in every lesson and guide resolves: glossary terms, app tabs, lessons, or the web', () => {
    const g = JSON.parse(readFileSync(join(lessonsDir, 'glossary.json'), 'utf8'));
    const views = ['walk', 'memory', 'compare', 'playground', 'results', 'live', 'lessons'];
    const ids = new Set([...en.map((l) => l.data.id), 'teacher-guide']);
    const count: Record<string, number> = { glossary: 0, app: 0, lesson: 0 };
    for (const lang of LANGS) {
      for (const l of everything(lang)) {
        for (const m of l.content.matchAll(/\]\(([^)\s]*)\)/g)) {
          const i = m[1].indexOf(':');
          const [scheme, rest] = i > 0 ? [m[1].slice(0, i), m[1].slice(i + 1)] : ['', m[1]];
          const where = `${lang}/${l.file}: (${m[1]})`;
          if (scheme === 'glossary') expect(g.terms[rest], where).toBeTruthy();
          else if (scheme === 'app') expect(views, where).toContain(rest);
          else if (scheme === 'lesson' || scheme === 'sheet') expect(ids.has(rest) && (scheme === 'lesson' || rest !== 'teacher-guide'), where).toBe(true);
          else expect(m[1], `${where}: a link is glossary:, app:, lesson:, sheet: (a lesson's answer sheet) or https://`).toMatch(/^https:\/\//);
          if (scheme in count) count[scheme]++;
        }
      }
    }
    expect(count.glossary).toBeGreaterThan(60);
    expect(count.app).toBeGreaterThanOrEqual(21);
    expect(count.lesson).toBeGreaterThanOrEqual(21);
  });

  it('the glossary defines every term in English, Japanese and Chinese', () => {
    const g = JSON.parse(readFileSync(join(lessonsDir, 'glossary.json'), 'utf8'));
    for (const term of ['gva', 'gpa', 'hva', 'hpa', 'gfn', 'pfn', 'eptp', 'ncr3', 'pte', 'walk', 'exit', 'vmfunc', ...Object.keys(g.terms)]) {
      for (const lang of ['en', 'ja', 'zh']) expect(g.terms[term]?.[lang], `${term}.${lang}`).toBeTruthy();
    }
  });
});
