// The one back-off formula: its ceilings, its jitter, its floor and the Retry-After wait.
import { describe, expect, it } from 'vitest';
import { msToNumber } from '@temporalio/common/lib/time.js';
import {
  BATCH_QUERY_BACKOFF,
  NO_JITTER,
  RETRY_AFTER_JITTER_MS,
  THROTTLE_UPDATE_BACKOFF,
  constantBackoff,
  backoffCeilingMs,
  backoffDelayMs,
  retryAfterDelayMs,
  retryDelayMs,
} from '../../../src/calls/backoff.js';
import {
  COMPACT_ROW_RETRY,
  SERVICE_READ_RETRY,
  STORE_STEP_RETRY,
} from '../../../src/calls/retry-policies.js';

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

describe('the retry policies', () => {
  it('waits the same between every attempt of a constant back-off, jitter or not', () => {
    for (const attempt of [1, 2, 5]) {
      expect(backoffDelayMs(attempt, NO_JITTER, BATCH_QUERY_BACKOFF)).toBe(300);
      expect(backoffDelayMs(attempt, () => 0, constantBackoff(200))).toBe(200);
    }
  });

  it("spaces a throttle update's attempts from 50 ms doubling to 1.6 s", () => {
    const waits = [1, 2, 3, 4, 5, 6, 7].map((a) =>
      backoffDelayMs(a, NO_JITTER, THROTTLE_UPDATE_BACKOFF),
    );
    expect(waits).toEqual([50, 100, 200, 400, 800, 1_600, 1_600]);
  });

  it("retries polls in Temporal as the service's back-off does: 1 s doubling to a minute", () => {
    expect(msToNumber(SERVICE_READ_RETRY.initialInterval)).toBe(1_000);
    expect(msToNumber(SERVICE_READ_RETRY.maximumInterval)).toBe(60_000);
    expect(SERVICE_READ_RETRY.backoffCoefficient).toBe(2);
  });

  it('retries store steps from 1 s to 30 s, a compact row at most 20 times', () => {
    expect(msToNumber(STORE_STEP_RETRY.initialInterval)).toBe(1_000);
    expect(msToNumber(STORE_STEP_RETRY.maximumInterval)).toBe(30_000);
    expect(STORE_STEP_RETRY.maximumAttempts).toBeUndefined();
    expect(COMPACT_ROW_RETRY).toEqual({ ...STORE_STEP_RETRY, maximumAttempts: 20 });
  });
});
