import { describe, expect, it } from 'vitest';
import { englishRuns } from './english';

describe('englishRuns', () => {
  it('finds English prose', () => {
    expect(englishRuns('ステップ 3 · Read the guest entry')).toEqual(['Read the guest entry']);
    expect(englishRuns('The walk ended after 24 steps')).toEqual(['The walk ended after']);
  });
  it('lets technical names and numbers through', () => {
    expect(englishRuns('ゲストの PML4 エントリ 0x1000 を読む: EPT VMCALL 24 KiB')).toEqual([]);
    expect(englishRuns('gva 0x400000 → gpa 0x200000 → hpa 0x80200000')).toEqual([]);
  });
});

describe('englishRuns between CJK text', () => {
  it('does not join words across Japanese or Chinese', () => {
    expect(englishRuns('EPT violation とその exit qualification')).toEqual([]);
    expect(englishRuns('读取 the guest entry 表项')).toEqual(['the guest entry']);
  });
});
