/* Chart labels that fit: a long group name wraps into lines that keep all its words. */
import { describe, expect, it } from 'vitest';
import { wrapLabel } from './charts';

describe('wrapLabel', () => {
  it('breaks after spaces and keeps every word', () => {
    const label = 'yours: min (fenced timer, older hw-lab: not comparable)';
    const lines = wrapLabel(label, 176);
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.join(' ')).toBe(label);
    for (const l of lines) expect(l.length * 6.5, l).toBeLessThanOrEqual(176);
  });
  it('leaves a short label on one line', () => {
    expect(wrapLabel('VMCALL', 176)).toEqual(['VMCALL']);
  });
  it('breaks Japanese and Chinese between characters, and cuts a word wider than the room', () => {
    const ja = 'あなたの値：最小（フェンス付きタイマー、古い hw-lab：比較できません）';
    const lines = wrapLabel(ja, 176);
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.join('').replace(/\s/g, '')).toBe(ja.replace(/\s/g, ''));
    expect(wrapLabel('x'.repeat(60), 176).join('')).toBe('x'.repeat(60));
    expect(wrapLabel('x'.repeat(60), 176).length).toBeGreaterThan(1);
  });
});
