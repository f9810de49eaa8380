/* One ratio, one rounding: the VMFUNC panel, the Results tab and lesson 6 in every language
 * say the gate's speed-up over a VMCALL as 699 / 196 rounded to one decimal. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ratio1, VMFUNC_SPEEDUP } from './figures';

const root = join(__dirname, '..', '..', '..');

describe('derived figures', () => {
  it('rounds to the nearest tenth', () => {
    expect(ratio1(699, 196)).toBe(3.6);   // 3.566...
    expect(ratio1(1.195, 0.337)).toBe(3.5);   // 3.546...
    expect(ratio1(7, 2)).toBe(3.5);
  });
  it('lesson 6 quotes the same VMFUNC speed-up as the views, in every language', () => {
    const want = (699 / 196).toFixed(1);
    expect(VMFUNC_SPEEDUP.toFixed(1)).toBe(want);
    for (const lang of ['en', 'ja', 'zh']) {
      const text = readFileSync(join(root, 'lessons', lang, '06-vmfunc.md'), 'utf8');
      const quoted = [...text.matchAll(/(\d+\.\d)\s?(?:x|×|倍)/g)].map((m) => m[1]);
      expect(quoted.length, lang).toBeGreaterThan(0);
      expect(quoted, lang).toEqual(quoted.map(() => want));
    }
  });
});
