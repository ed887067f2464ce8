import { describe, expect, it } from 'vitest';
import { SHORT_POLLS_AFTER_FIRST, pollDelayMs } from '../../../src/calls/poll-schedule.js';

const base = { intervalMs: 1_000, backoff: 1.5, maxIntervalMs: 15_000 };
const delays = (n: number, o: Parameters<typeof pollDelayMs>[1]) =>
  Array.from({ length: n }, (_, i) => pollDelayMs(i + 1, o));

describe('poll schedule', () => {
  it('by default starts at the interval and backs off by the factor up to the ceiling', () => {
    expect(delays(9, base)).toEqual([1000, 1500, 2250, 3375, 5063, 7595, 11393, 15000, 15000]);
  });

  it('with a learned first delay: that delay, a few short polls, then the same backoff', () => {
    const got = delays(2 + SHORT_POLLS_AFTER_FIRST + 2, { ...base, firstPollDelayMs: 5_400 });
    expect(got).toEqual([
      5400,
      ...Array.from({ length: SHORT_POLLS_AFTER_FIRST }, () => 1000),
      1000,
      1500,
      2250,
    ]);
  });

  it('never waits a negative or fractional time', () => {
    expect(pollDelayMs(1, { ...base, firstPollDelayMs: -5 })).toBe(0);
    expect(pollDelayMs(1, { ...base, firstPollDelayMs: 12.6 })).toBe(13);
  });
});
