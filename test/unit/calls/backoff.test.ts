// The one back-off formula: its ceilings, its jitter, its floor and the Retry-After wait.
import { describe, expect, it } from 'vitest';
import {
  NO_JITTER,
  RETRY_AFTER_JITTER_MS,
  backoffCeilingMs,
  backoffDelayMs,
  retryAfterDelayMs,
  retryDelayMs,
} from '../../../src/calls/backoff.js';

describe('back-off', () => {
  it('doubles from 1 s up to a minute', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 60].map((a) => backoffCeilingMs(a))).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
  });

  it('draws a full jitter below the ceiling, never under the floor', () => {
    expect(backoffDelayMs(3, () => 0.25)).toBe(1_000);
    expect(backoffDelayMs(3, () => 0)).toBe(100);
    expect(backoffDelayMs(3, NO_JITTER)).toBe(4_000);
  });

  it('takes another base, cap and floor', () => {
    const b = { baseMs: 500, capMs: 30_000, floorMs: 0 };
    expect([1, 2, 7, 8].map((a) => backoffDelayMs(a, NO_JITTER, b))).toEqual([
      500, 1_000, 30_000, 30_000,
    ]);
  });

  it('waits a Retry-After plus up to 250 ms, and prefers it to the back-off', () => {
    expect(RETRY_AFTER_JITTER_MS).toBe(250);
    expect(retryAfterDelayMs(2_000, () => 1)).toBe(2_250);
    expect(retryDelayMs(5, 2_000, () => 0)).toBe(2_000);
    expect(retryDelayMs(5, undefined, () => 1)).toBe(16_000);
  });
});
