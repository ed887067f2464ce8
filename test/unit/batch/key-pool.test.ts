// Weighted spread of rows over keys, keys leaving the pool, and a key's windows for the ETA.
import { describe, expect, it } from 'vitest';
import {
  describeRemoved,
  newKeyPool,
  pickKey,
  refreshKeyPool,
  removeKey,
  windowsOfPoolKey,
} from '../../../src/batch/key-pool.js';
import {
  etaSeconds,
  recordCompletions,
  rowsPerSecond,
  type RateBuckets,
} from '../../../src/batch/rate.js';

describe('key pool', () => {
  it('spreads rows in proportion to the keys limits, interleaved', () => {
    const pool = newKeyPool([
      { id: 'a', perMinute: 100 },
      { id: 'b', perMinute: 300 },
    ]);
    const picks = Array.from({ length: 8 }, () => pickKey(pool));
    expect(picks.filter((k) => k === 'a').length).toBe(2);
    expect(picks.filter((k) => k === 'b').length).toBe(6);
    // Smooth: no long runs of one key.
    expect(picks.slice(0, 4).sort()).toEqual(['a', 'b', 'b', 'b']);
    expect(pool.started).toEqual({ a: 2, b: 6 });
  });

  it('sends every row to the remaining keys once one leaves, and nothing when none is left', () => {
    const pool = newKeyPool([
      { id: 'a', perMinute: 100 },
      { id: 'b', perMinute: 100 },
    ]);
    expect(removeKey(pool, 'a', 'invalid_credentials', 't')).toBe(true);
    expect(removeKey(pool, 'a', 'invalid_credentials', 't')).toBe(false);
    expect(new Set(Array.from({ length: 5 }, () => pickKey(pool)))).toEqual(new Set(['b']));
    removeKey(pool, 'b', 'ip_not_allowed', 't');
    expect(pickKey(pool)).toBeUndefined();
    expect(describeRemoved(pool)).toBe('a (invalid_credentials), b (ip_not_allowed)');
    const again = refreshKeyPool(pool, [{ id: 'a', perMinute: 100 }]);
    expect(pickKey(again)).toBe('a');
    expect(again.started.a).toBe(1);
  });
});

describe('rate', () => {
  it('counts the last minute only and gives an ETA', () => {
    const b: RateBuckets = [];
    const t0 = 1_000_000_000;
    recordCompletions(b, t0, 10);
    recordCompletions(b, t0 + 500, 10);
    expect(rowsPerSecond(b, t0 + 10_000, t0)).toBe(2);
    recordCompletions(b, t0 + 120_000, 60);
    expect(b.length).toBe(1);
    expect(rowsPerSecond(b, t0 + 120_000, t0)).toBe(1);
    expect(etaSeconds(30, 1)).toBe(30);
    expect(etaSeconds(30, 0)).toBeUndefined();
  });
});

describe("a pool key's windows", () => {
  it("run as many times faster as the worker's time scale; a scale below 1 carried by a batch of an earlier release means its inverse", () => {
    const key = { id: 'k', weight: 100, perHour: 1000 };
    expect(windowsOfPoolKey({ ...key, timeScale: 20 })).toMatchObject({
      minuteMs: 3_000,
      hourMs: 180_000,
    });
    // Earlier releases carried 0.05 for twenty times faster.
    expect(windowsOfPoolKey({ ...key, timeScale: 0.05 })).toEqual(
      windowsOfPoolKey({ ...key, timeScale: 20 }),
    );
    expect(windowsOfPoolKey(key)).toMatchObject({ minuteMs: 60_000, hourMs: 3_600_000 });
  });
});
