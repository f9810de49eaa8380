import { describe, expect, it } from 'vitest';
import { timeLeft } from './eta';

describe('a replay\'s time left', () => {
  it('is the time so far times what is left of the bar over what is done', () => {
    expect(timeLeft(0.5, 10_000)).toEqual({ unit: 's', n: 10 });
    expect(timeLeft(0.25, 3_000)).toEqual({ unit: 's', n: 9 });
    expect(timeLeft(0.8, 4_000)).toEqual({ unit: 's', n: 1 });       // 1 s: never "0 s left"
    expect(timeLeft(0.99, 2_000)).toEqual({ unit: 's', n: 1 });
  });
  it('rounds to 5 s under a minute, to minutes under an hour, to 10 minutes above', () => {
    expect(timeLeft(0.5, 23_000)).toEqual({ unit: 's', n: 25 });
    expect(timeLeft(0.5, 57_000)).toEqual({ unit: 's', n: 55 });
    expect(timeLeft(0.5, 60_000)).toEqual({ unit: 'min', n: 1 });
    expect(timeLeft(0.1, 60_000)).toEqual({ unit: 'min', n: 9 });
    expect(timeLeft(0.05, 600_000)).toEqual({ unit: 'min', n: 190 });  // 3 h 10 min
  });
  it('says nothing too early, at the end, or from figures that are not ones', () => {
    expect(timeLeft(0.04, 60_000)).toBeNull();
    expect(timeLeft(0.5, 1_999)).toBeNull();
    expect(timeLeft(1, 60_000)).toBeNull();
    expect(timeLeft(Number.NaN, 60_000)).toBeNull();
    expect(timeLeft(0.5, Number.NaN)).toBeNull();
    expect(timeLeft(-1, 60_000)).toBeNull();
  });
});
