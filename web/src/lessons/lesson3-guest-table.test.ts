/* Lesson 3's worked example of an EPT violation on a guest page-table access (the SDM's
 * rule: the processor's write of a guest entry's accessed flag, and with EPT A/D on every
 * access to a guest paging-structure entry, is a write, and the violation it causes sets
 * qualification bits 0 and 1), run on the engine: the numbers the lesson prints in each
 * language are the engine's, the predict-bits exercise asks the same thing, and its hint
 * teaches the rule with the SDM's section in every language. */
import { beforeAll, describe, expect, it } from 'vitest';
import i18n from '../i18n';
import type { Scenario, Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import { LANGS, LESSONS } from './content';
import { check, generate, say } from './exercises';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });

/** The lesson's machine: gva 0x400000 -> gpa 0x200000, the EPT leaf of the guest's page
 * table (the one that holds that PTE) with `clear` taken away, a read of 0x400010. */
const example = (clear: string, ad = false): Scenario => ({
  name: 'lesson3-guest-table', mode: 'ept',
  guest: { paging: '4level', mappings: [{ gva: '0x400000', gpa: '0x200000' }] },
  nested: { ...(ad ? { ad: true } : {}), mappings: [{ gpa: '0x0', hpa: '0x80000000', pages: 1024 }],
    overrides: [{ guest_table: { gva: '0x400000', level: 1 }, level: 1, clear }] },
  accesses: [{ gva: '0x400010', op: 'read' }],
} as Scenario);

describe('lesson 3: the guest page-table page the EPT maps without W', () => {
  it('a read exits with qualification 0xab at the PTE\'s gpa 0x103000 (W and X cleared: 0x8b); with EPT A/D on, the same bits', () => {
    for (const [clear, want] of [['0x2', '0xab'], ['0x6', '0x8b']]) {
      for (const ad of [false, true]) {
        const a = engine.run(example(clear, ad)).accesses[0];
        const f = a.fault as unknown as Record<string, string>;
        expect(a.outcome, `clear ${clear}, ad ${ad}`).toBe('ept_violation');
        expect(f.qualification, `clear ${clear}, ad ${ad}`).toBe(want);
        expect(BigInt(f.guest_physical_address), `clear ${clear}, ad ${ad}`).toBe(0x103000n);
        expect(BigInt(f.qualification) & 3n, 'bits 0 and 1 together').toBe(3n);
        expect(BigInt(f.qualification) & 0x100n, 'bit 8 clear: a guest paging-structure access').toBe(0n);
      }
    }
  });

  it('the lesson prints those numbers and cites the SDM\'s section, in every language', () => {
    for (const lang of LANGS) {
      const text = LESSONS[lang]['ept-and-npt'].parts.filter((p) => p.type === 'prose').map((p) => (p as { text: string }).text).join('\n');
      for (const s of ['0xab', '0x8b', '0x103000', '0x400010', '28.2.3.2', 'EPTP']) expect(text, `${lang}: ${s}`).toContain(s);
    }
  });

  it('the predict-bits exercise asks it, accepts 0xab and refuses 0xaa; its method teaches bits 0 and 1 with the SDM section', () => {
    let asked = 0;
    for (let seed = 1; seed <= 24; seed++) {
      const ex = generate({ kind: 'predict-bits', mode: 'ept' }, seed);
      const s = ex.scenarios[0];
      const o = s.nested!.overrides![0] as { guest_table?: object; clear: string };
      const op = (s.accesses[0] as { op: string }).op;
      if (!o.guest_table || o.clear !== '0x2' || op !== 'read') continue;
      asked++;
      expect(check(engine, ex, '0xab').correct, `seed ${seed}`).toBe(true);
      expect(check(engine, ex, '0xaa').correct, `seed ${seed}`).toBe(false);
    }
    expect(asked).toBeGreaterThan(0);
    const hint = generate({ kind: 'predict-bits', mode: 'ept' }, 1).hint;
    for (const lang of LANGS) {
      const text = say(hint, i18n.getFixedT(lang, 'exercises'));
      expect(text, lang).toContain('28.2.3.2');
      expect(text, lang).toMatch(/0 (and|と|和) 1|0 和位 1/);
    }
  });
});
