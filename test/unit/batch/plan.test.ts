// The plan and the ETA under both windows of each key: hours where the hour window binds, the
// hour window already spent by a burst, keys sharing the rows, and no ETA while paused.
import { describe, expect, it } from 'vitest';
import {
  etaSeconds,
  keyWindows,
  measuredShare,
  planBatch,
  recordSent,
  sendMs,
  type SentLog,
} from '../../../src/batch/plan.js';

const MIN = 60_000;
const HOUR = 3_600_000;
const key = (id = 'a') => keyWindows({ id, perMinute: 100, perHour: 1000 }, 1);
const NOW = Date.parse('2026-01-01T12:00:00Z');

/** A key that sent `perMinute` requests a minute for the `minutes` before `nowMs`. */
function burst(minutes: number, perMinute: number, nowMs = NOW): SentLog {
  const log: SentLog = [];
  for (let i = minutes; i > 0; i--) recordSent(log, nowMs - i * MIN, perMinute, key());
  return log;
}

describe('sendMs: both windows of a key', () => {
  it('sends at the minute limit while the hour window has room', () => {
    expect(sendMs(500, key())).toBe(5 * MIN);
  });

  it('3,000 rows at 2 requests each on one key of 100/min and 1,000/h take hours, not minutes', () => {
    // 1,000 requests in ten minutes, then the hour slides: five hours and ten minutes.
    expect(sendMs(6000, key())).toBe(5 * HOUR + 10 * MIN);
  });

  it('a very long batch is counted hour by hour without simulating every minute', () => {
    expect(sendMs(200_000, key())).toBe(199 * HOUR + 10 * MIN);
  });

  it('a key whose hour limit allows more than 60 minutes at its minute limit is bound by the minute', () => {
    const k = keyWindows({ id: 'a', perMinute: 10, perHour: 1000 }, 1);
    expect(sendMs(1200, k)).toBe(120 * MIN);
  });

  it('the windows scale: a time scale of 100 (times faster) makes the same plan a hundred times shorter', () => {
    const k = keyWindows({ id: 'a', perMinute: 100, perHour: 1000 }, 100);
    expect(sendMs(6000, k)).toBeCloseTo((5 * HOUR + 10 * MIN) / 100, 6);
  });
});

describe('etaSeconds', () => {
  const base = {
    nowMs: NOW,
    paused: false,
    requestsPerRow: 2,
    keys: [key()],
    sent: {},
  };

  it('3,000 rows, 2 requests a row, one key of 100/min + 1,000/h: about 5 h, not minutes', () => {
    const eta = etaSeconds({ ...base, rowsLeft: 3000 })!;
    expect(eta / 3600).toBeGreaterThan(5);
    expect(eta / 3600).toBeLessThan(6);
  });

  it('after ten minutes of bursting the hour window is spent: the rest waits for it to slide', () => {
    // 1,000 requests sent in the last ten minutes (500 rows done): 5,000 requests left.
    const sent = { a: burst(10, 100) };
    const eta = etaSeconds({ ...base, rowsLeft: 2500, sent })!;
    // The first 1,000 of them go when the burst leaves the hour window, 50 minutes from now.
    expect(eta).toBe((50 * MIN + 4 * HOUR + 10 * MIN) / 1000);
    // The rows-per-second view of the same moment: 50 rows a minute for 2,500 rows, 50 minutes.
    expect(eta).toBeGreaterThan(4 * 3600);
  });

  it('after 50 minutes of bursting at 20/min the hour window is nearly spent', () => {
    const sent = { a: burst(50, 20) };
    const eta = etaSeconds({ ...base, rowsLeft: 100, sent })!;
    // 1,000 sent in the last 50 minutes: nothing fits until the first of them leave in 10
    // minutes, then 20 a minute as they leave: 200 requests take 20 minutes, not 2.
    expect(eta).toBeGreaterThan(19 * 60);
    expect(eta).toBeLessThan(21 * 60);
    // Without the burst the same 200 requests take two minutes.
    expect(etaSeconds({ ...base, rowsLeft: 100 })).toBe(120);
  });

  it('two keys halve it', () => {
    const one = etaSeconds({ ...base, rowsLeft: 3000 })!;
    const two = etaSeconds({ ...base, rowsLeft: 3000, keys: [key('a'), key('b')] })!;
    expect(two).toBeLessThan(one * 0.6);
    expect(two).toBeGreaterThan(one * 0.4);
  });

  it('a paused batch has no ETA', () => {
    expect(etaSeconds({ ...base, rowsLeft: 3000, paused: true })).toBeUndefined();
  });

  it('no key left: no ETA; nothing left: 0', () => {
    expect(etaSeconds({ ...base, rowsLeft: 10, keys: [] })).toBeUndefined();
    expect(etaSeconds({ ...base, rowsLeft: 0 })).toBe(0);
  });

  it('a batch getting a third of its key (other batches share it) is told three times as long', () => {
    // Ten minutes at a third of the minute window: 330 of the 1,000 the key allowed.
    const shared: SentLog = [];
    for (let i = 10; i > 0; i--) recordSent(shared, NOW - i * MIN, 33, key());
    expect(measuredShare(shared, key(), NOW)).toBeCloseTo(0.33, 2);
    const alone = etaSeconds({ ...base, rowsLeft: 3000, sent: { a: burst(10, 100) } })!;
    const third = etaSeconds({ ...base, rowsLeft: 3000, sent: { a: shared } })!;
    expect(third / alone).toBeGreaterThan(2.5);
    expect(third / alone).toBeLessThan(3.5);
    // A batch alone that filled the key (within the reserve) is taken as having it whole.
    expect(measuredShare(burst(10, 90), key(), NOW)).toBe(1);
    // Too little measured to tell: the whole key.
    expect(measuredShare(burst(1, 10), key(), NOW)).toBe(1);
  });

  it('adds the last jobs\u2019 duration', () => {
    expect(etaSeconds({ ...base, rowsLeft: 50, tailMs: 3000 })).toBe(63);
  });
});

describe('recordSent', () => {
  it('keeps one bucket a minute and forgets what the hour window no longer sees', () => {
    const log: SentLog = [];
    recordSent(log, NOW, 2, key());
    recordSent(log, NOW + 1000, 3, key());
    expect(log).toEqual([[NOW, 5]]);
    recordSent(log, NOW + 2 * HOUR, 1, key());
    expect(log).toEqual([[NOW + 2 * HOUR, 1]]);
  });
});

describe('planBatch', () => {
  const plan = (extra: Partial<Parameters<typeof planBatch>[0]> = {}) =>
    planBatch({
      rows: 3000,
      duplicates: 0,
      invalid: 0,
      webhooks: false,
      keys: [key()],
      creditsPerRow: 1,
      timeScale: 1,
      ...extra,
    });

  it('3,000 rows on one key: 6,000 requests, about 5.2 hours, what more keys and webhooks give', () => {
    const p = plan();
    expect(p).toMatchObject({ sent: 3000, requestsPerRow: 2, requests: 6000, keys: 1 });
    expect(p.hours).toBeCloseTo(5.17, 2);
    expect(p.credits).toBe(3000);
    const more = p.shorter.find((s) => s.with === 'one more key')!;
    const hooks = p.shorter.find((s) => s.with === 'webhooks')!;
    expect(more.hours).toBeCloseTo(2.17, 2);
    expect(hooks.hours).toBeCloseTo(2.17, 2);
  });

  it('duplicates and invalid rows send nothing; webhooks cost one request a row', () => {
    const p = plan({ duplicates: 500, invalid: 500, webhooks: true });
    expect(p).toMatchObject({ sent: 2000, requestsPerRow: 1, requests: 2000, credits: 2000 });
    expect(p.hours).toBeCloseTo(1.17, 2);
    expect(p.shorter.map((s) => s.with)).toEqual(['one more key']);
  });

  it('reports the service hours whatever the time scale', () => {
    const scaled = plan({
      keys: [keyWindows({ id: 'a', perMinute: 100, perHour: 1000 }, 100)],
      timeScale: 100,
    });
    expect(scaled.hours).toBeCloseTo(5.17, 2);
    expect(scaled.durationMs).toBeCloseTo((5 * HOUR + 10 * MIN) / 100, 3);
  });
});
