/* The pure parts: address split, URL state. */
import { describe, expect, it } from 'vitest';
import { splitGva, splitGpa } from './decode';
import { parseUrl, toSearch } from './url';

describe('address split', () => {
  it('cuts 4level, 5level, pae, 32bit and sunway addresses at the documented bits', () => {
    expect(splitGva('0x7fffffffffff', '4level').map((f) => f.value)).toEqual([255, 511, 511, 511, 0xfff]);
    expect(splitGva('0x1000000000000', '5level').map((f) => f.value)).toEqual([1, 0, 0, 0, 0, 0]);
    expect(splitGva('0xc0201003', 'pae').map((f) => f.value)).toEqual([3, 1, 1, 3]);
    expect(splitGva('0x00c01abc', '32bit').map((f) => f.value)).toEqual([3, 1, 0xabc]);
    expect(splitGva('0x402010', 'sunway').map((f) => [f.hi, f.lo, f.value])).toEqual([[52, 43, 0], [42, 33, 0], [32, 23, 0], [22, 13, 0x201], [12, 0, 0x10]]);
    expect(splitGpa('0x101000', 4).map((f) => f.value)).toEqual([0, 0, 0, 257, 0]);
  });
});

describe('URL state', () => {
  it('round-trips and falls back to defaults on junk', () => {
    const s = parseUrl('?example=ept-4k&access=0&step=7');
    expect(s).toMatchObject({ view: 'walk', example: 'ept-4k', access: 0, step: 7, scenario: null });
    expect(parseUrl(toSearch(s))).toEqual(s);
    expect(parseUrl('?view=nope&step=-3&access=x')).toMatchObject({ view: 'walk', step: 0, access: 0, example: 'ept-4k' });
    const inline = { ...s, scenario: '{"name":"é"}' };
    expect(parseUrl(toSearch(inline)).scenario).toBe('{"name":"é"}');
    expect(parseUrl('?s=%%%').scenario).toBeNull();
  });
});

describe('JSON error location', async () => {
  const { parseJson } = await import('./validate');
  it('points at the line and column where the text stops being JSON', () => {
    expect(parseJson('{\n  "a": 1,\n  "b": }').problem!.message).toMatch(/line 3, column 8/);
    expect(parseJson('{"a": [1, 2,]}').problem!.message).toMatch(/line 1, column 13/);
    expect(parseJson('').problem!.message).toMatch(/not valid JSON/);
    expect(parseJson('{"a": "x"}').problem).toBeNull();
  });
});
