/* Every exercise a lesson actually embeds (in any language), over 1,000 seeds: the
 * generated scenarios run in the mode the lesson names, and the engine's answer agrees with
 * an answer worked out here from the manuals' rules and the lessons' formulas, never from
 * the engine; a wrong answer is refused. A kind that a lesson uses and this file cannot
 * check fails the test: add its independent answer here. */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Scenario, Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import { LANGS, LESSONS } from './content';
import { check, generate, say, type Exercise, type ExerciseSpec, type GridInput } from './exercises';
import { sequenceAnswer, whichWinsEstimate } from '../test/exerciseModels';

let engine: Vmsim;
beforeAll(async () => {
  engine = await testEngine();
});

const SEEDS = Array.from({ length: 1000 }, (_, i) => i * 104729 + 3);
const hex = (n: bigint | number) => '0x' + BigInt(n).toString(16);
const pageLevels: Record<string, number> = { '4K': 0, '2M': 1, '1G': 2 };   // levels a large page skips

/** The answer, worked out from the generated scenario, and an answer that must be refused. */
type Oracle = (ex: Exercise) => { right: string; wrong: string };

/** The sequence kinds: the model's answer; a count one off, or the other outcome, is refused. */
const OTHER_OUTCOME: Record<string, [string, string]> = { 'flat-walk': ['ok', 'flat_fault'], 'vmfunc-switch': ['switched', 'ud'] };
const sequence: Oracle = (ex) => {
  const right = sequenceAnswer(ex);
  if (right === undefined) throw new Error(`no model for ${ex.spec.kind}`);
  if (typeof right === 'number') return { right: String(right), wrong: String(right + 1) };
  const [a, b] = OTHER_OUTCOME[ex.spec.kind];
  return { right, wrong: right === a ? b : a };
};

const ORACLES: Record<string, Oracle> = {
  // Lesson 8, agile paging: n - S shadow entries, then S guest entries each behind an
  // m-level nested walk and the final nested walk; all shadow reads n. A page-table write
  // exits exactly when its table lies above the switch (level > S): the VMM walked it.
  'agile-walk': (ex) => {
    const s = ex.scenarios[0];
    const n = s.guest.paging === '5level' ? 5 : 4, m = s.nested!.levels ?? 4, sw = s.agile!.switch_level ?? 0;
    if (ex.variant === 'refs') {
      const right = sw === 0 ? n : (n - sw) + sw * (m + 1) + m;
      return { right: String(right), wrong: String(right + 1) };
    }
    const level = (s.accesses[1] as { pte_write: { level: number } }).pte_write.level;
    return level > sw ? { right: 'exit', wrong: 'noExit' } : { right: 'noExit', wrong: 'exit' };
  },
  // Page replacement: keep the offset, take the frame from the last mapping in the chain.
  'compute-hpa': (ex) => {
    const s = ex.scenarios[0];
    const gva = BigInt((s.accesses[0] as { gva: string }).gva);
    const frame = s.mode === 'native' ? BigInt(s.guest.mappings![0].gpa) : BigInt(s.nested!.mappings.at(-1)!.hpa);
    const right = hex(frame + (gva & 0xfffn));
    return { right, wrong: hex(BigInt(right) ^ 0x1000n) };
  },
  // The 2-D walk of lesson 3: (g + 1)(n + 1) - 1 for g guest and n nested levels walked, per read;
  // a flat table is one level (lesson 5), native has none (lesson 1).
  'count-refs': (ex) => {
    const s = ex.scenarios[0];
    const g = (s.guest.paging === '5level' ? 5 : 4) - pageLevels[s.guest.mappings![0].page ?? '4K'];
    const n = s.mode === 'native' ? 0 : s.mode === 'flat' ? 1
      : (s.nested!.levels ?? 4) - pageLevels[s.nested!.mappings.at(-1)!.page ?? '4K'];
    const right = s.accesses.length * ((g + 1) * (n + 1) - 1);   // with no TLB, every read walks
    return { right: String(right), wrong: String(right + 1) };
  },
  // Lesson 3: a guest page missing is the guest's own fault; an EPT entry with W but not R
  // is a misconfiguration; an entry that forbids the access is a violation (#NPF on AMD).
  'predict-exit': (ex) => {
    const s = ex.scenarios[0];
    const acc = s.accesses[0] as { gva: string; op: string };
    const mapped = s.guest.mappings!.some((m) => BigInt(m.gva) === (BigInt(acc.gva) & ~0xfffn));
    const clear = Number(s.nested!.overrides?.[0]?.clear ?? 0);
    const nestedFault = s.mode === 'ept' ? 'ept_violation' : 'npt_fault';
    let right: string;
    if (!mapped) right = 'guest_page_fault';
    else if (clear === 0) right = 'ok';
    else if (s.mode === 'ept' && clear === 0x1) right = 'ept_misconfig';
    else if (clear === 0x2) right = acc.op === 'write' ? nestedFault : 'ok';
    else right = nestedFault;
    return { right, wrong: right === 'ok' ? nestedFault : 'ok' };
  },
  // The exit information, bit by bit (Intel SDM: EPT-violation qualification with A/D off;
  // AMD APM: #NPF EXITINFO1). The MMU sets the accessed bit of the guest's PT entry on this
  // first walk, so a walk through a guest table whose nested entry lacks W is a write.
  'predict-bits': (ex) => {
    const s = ex.scenarios[0];
    const o = s.nested!.overrides![0];
    const clear = Number(o.clear);
    const op = (s.accesses[0] as { op: string }).op;
    const opBit = op === 'read' ? 1 : op === 'write' ? 2 : 4;
    let right: bigint;
    if (s.mode === 'ept') {
      const allowed = 7 & ~clear;                                  // R W X left in the leaf
      if (o.guest_table) {
        // reading the table needs R; setting its accessed bit needs W (the access is then RD|WR)
        const tried = !(allowed & 1) ? 1 : !(allowed & 2) ? 3 : 0;
        right = tried ? BigInt(tried | (allowed << 3) | 0x80) : 0n;            // bit 8 clear
      } else {
        right = allowed & opBit ? 0n : BigInt(opBit | (allowed << 3) | 0x80 | 0x100);
      }
    } else {
      // nested accesses are user accesses (U, bit 2); guest-table accesses are writes (W, bit 1)
      const present = clear === 0x1 ? 0n : 1n;
      if (o.guest_table) right = (1n << 33n) | 0x6n | present;
      else {
        const w = op === 'write' ? 2n : 0n, id = op === 'fetch' ? 0x10n : 0n;
        const denied = clear === 0x1 || clear === 0x4 || (clear === 0x2 && op === 'write');
        right = denied ? (1n << 32n) | 0x4n | w | id | present : 0n;
      }
    }
    return { right: hex(right), wrong: right === 0n ? '0x81' : '0x0' };
  },
  // Lesson 5: x GiB of guest RAM / 8 KiB pages (4 KiB on x86) x 8-byte entries = x MiB (2x).
  'flat-table-size': (ex) => {
    const ram = BigInt((ex.scenarios[0] as unknown as { flat: { guest_ram: string } }).flat.guest_ram);
    const frame = ex.scenarios[0].guest.paging === 'sunway' ? 8192n : 4096n;
    const mib = (ram / frame) * 8n / (1n << 20n);
    return { right: String(mib), wrong: String(mib * 1024n) };
  },
  // Lessons 2, 4 and 7: the estimate the hint teaches (src/test/exerciseModels.ts): TLB
  // misses times the references a miss costs in each mode, plus 1,700 cycles for each of
  // shadow paging's exits (page-table writes and their refills, mov cr3 outside the
  // CR3-target values); the host with 4 KiB nested pages is refused.
  'which-wins': (ex) => {
    const right = whichWinsEstimate(ex.scenarios).mode;
    const small = ex.scenarios.find((x) => x.mode !== 'shadow' && !x.nested!.mappings.some((m) => m.page === '2M'))!.mode;
    return { right, wrong: small };
  },
  // Lessons 3 and 8, the walk filled in by hand: lesson 3's grid row by row (for each guest
  // level from the top, the nested levels top down translating that level's entry, then the
  // entry), the data's gpa last; under agile paging (lesson 8) the shadow levels above the
  // switch first. The guest's tables sit at gpa 0x100000 + 0x1000 a level from the top, an
  // entry at its table + 8 x index, and the nested tables map gpa to 0x80000000 + gpa.
  'walk-grid': (ex) => {
    const s = ex.scenarios[0] as Scenario & { agile?: { switch_level: number } };
    const n = s.guest.paging === '5level' ? 5 : 4;
    const m = s.nested!.levels ?? 4;
    const sw = s.agile?.switch_level ?? n;
    const gva = BigInt((s.accesses[0] as { gva: string }).gva);
    const entry = (l: number) => 0x100000n + BigInt(n - l) * 0x1000n + ((gva >> (12n + 9n * BigInt(l - 1))) & 511n) * 8n;
    const data = BigInt(s.guest.mappings![0].gpa!) + (gva & 0xfffn);
    const cells: { t: string; gpa: bigint }[] = [];
    for (let l = n; l > sw; l--) cells.push({ t: `s${l}`, gpa: -1n });
    for (let l = sw; l >= 1; l--) {
      for (let k = m; k >= 1; k--) cells.push({ t: `n${k}`, gpa: entry(l) });
      cells.push({ t: `g${l}`, gpa: entry(l) });
    }
    for (let k = m; k >= 1; k--) cells.push({ t: `n${k}`, gpa: data });
    const [a, b] = (ex.input as GridInput).addresses;
    const tables = cells.map((c) => c.t).join(' ');
    const gpa = cells[a.ref - 1].gpa, hpa = 0x80000000n + cells[b.ref - 1].gpa;
    return { right: `${tables} | ${hex(gpa)} ${hex(hpa)}`, wrong: `${tables} | ${hex(gpa + 8n)} ${hex(hpa)}` };
  },
  // The sequence kinds: hand-written models of the machine each runs (src/test/exerciseModels.ts).
  'shadow-exits': sequence,
  'flat-walk': sequence,
  'vmfunc-switch': sequence,
  'cache-hits': sequence,
};

/* which-wins runs three streams of 1,000-4,000 accesses per check (0.5 s here): every seed
 * is checked for what the lesson promises, the engine on 3 seeds per answer and program. */
const ENGINE_SAMPLE: Record<string, number> = { 'which-wins': 3 };

function lessonSpecs(): { spec: ExerciseSpec; where: string[] }[] {
  const seen = new Map<string, { spec: ExerciseSpec; where: string[] }>();
  for (const lang of LANGS) {
    for (const [id, l] of Object.entries(LESSONS[lang])) {
      for (const p of l.parts) {
        if (p.type !== 'exercise') continue;
        const key = JSON.stringify(p.spec);
        if (!seen.has(key)) seen.set(key, { spec: p.spec, where: [] });
        seen.get(key)!.where.push(`${lang}/${id}`);
      }
    }
  }
  return [...seen.values()];
}

describe('the exercises the lessons embed', () => {
  const specs = lessonSpecs();

  it('are all of kinds this file checks independently', () => {
    expect(specs.length).toBeGreaterThanOrEqual(10);
    for (const { spec, where } of specs) expect(Object.keys(ORACLES), `kind ${spec.kind} in ${where[0]}`).toContain(spec.kind);
  });

  for (const { spec, where } of specs) {
    const engineSeeds = ENGINE_SAMPLE[spec.kind] === undefined ? 'all checked by the engine' : `the engine on ${ENGINE_SAMPLE[spec.kind]} per workload`;
    it(`${JSON.stringify(spec)} (${where.filter((w) => w.startsWith('en/')).join(', ')}): 1,000 seeds, ${engineSeeds}`, () => {
      const oracle = ORACLES[spec.kind];
      const sampled = new Map<string, number>();
      let checked = 0;
      for (const seed of SEEDS) {
        const ex = generate(spec, seed);
        const what = `seed ${seed}: ${say(ex.prompt)}`;
        // the lesson says which mode it teaches; the exercise must run in it
        if (spec.mode) for (const s of ex.scenarios) expect(s.mode, what).toBe(spec.mode);
        if (spec.workloads) {
          const story = (ex.prompt.values?.story as { key: string }).key;   // whichWins.story.<workload>
          expect(spec.workloads.map((w) => `whichWins.story.${w}`), what).toContain(story);
          expect(ex.scenarios.map((s) => s.mode), what).toEqual(['shadow', 'ept', 'npt']);
          for (const s of ex.scenarios) expect(s.accesses).toBe(ex.scenarios[0].accesses);   // one stream, three modes
        }
        const { right, wrong } = oracle(ex);
        const limit = ENGINE_SAMPLE[spec.kind];
        if (limit !== undefined) {
          const bucket = right + (ex.prompt.values?.story as { key: string }).key;
          if ((sampled.get(bucket) ?? 0) >= limit) continue;
          sampled.set(bucket, (sampled.get(bucket) ?? 0) + 1);
        }
        const v = check(engine, ex, right);
        expect(v.correct, `${what}: the engine says ${v.expected}, worked out ${right}`).toBe(true);
        expect(check(engine, ex, wrong).correct, `${what}: ${wrong} accepted`).toBe(false);
        checked++;
      }
      expect(checked).toBeGreaterThan(0);
    }, 300_000);
  }
});
