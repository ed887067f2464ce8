import { describe, expect, it } from 'vitest';
import {
  FIRST_POLL_FACTOR,
  JOB_SAMPLES,
  MIN_JOB_SAMPLES,
  estimateJobMs,
  firstPollDelayFor,
  jobSampleOf,
  recordJobMs,
  requestsPerRow,
} from '../../../src/batch/job-duration.js';
import { measuredJobMs } from '../../../src/calls/engine.js';
import { pollDelayMs } from '../../../src/calls/poll-schedule.js';

const record = (values: number[]) => {
  const samples: number[] = [];
  for (const v of values) recordJobMs(samples, v);
  return samples;
};

describe('job duration estimate', () => {
  it('gives nothing until enough rows finished, then the first poll at a share of it', () => {
    const samples = record(Array.from({ length: MIN_JOB_SAMPLES - 1 }, () => 6_000));
    expect(estimateJobMs(samples)).toBeUndefined();
    expect(firstPollDelayFor(samples)).toBeUndefined();
    recordJobMs(samples, 6_000);
    expect(estimateJobMs(samples)).toBe(6_000);
    expect(firstPollDelayFor(samples)).toBe(Math.round(FIRST_POLL_FACTOR * 6_000));
  });

  it('is the 80th percentile: a few slow outliers do not move it, a slower majority does', () => {
    const typical = Array.from({ length: 45 }, (_, i) => 6_000 + i);
    expect(estimateJobMs(record([...typical, 90_000, 90_000, 60_000, 1, 2]))).toBe(6_037);
    const slower = record([...typical.slice(0, 20), ...Array.from({ length: 30 }, () => 9_000)]);
    expect(estimateJobMs(slower)).toBe(9_000);
  });

  it('keeps only the most recent rows, so it follows jobs that got faster', () => {
    const samples = record([
      ...Array.from({ length: 100 }, () => 8_000),
      ...Array.from({ length: JOB_SAMPLES }, () => 3_000),
    ]);
    expect(samples).toHaveLength(JOB_SAMPLES);
    expect(estimateJobMs(samples)).toBe(3_000);
  });

  it('ignores values that are not durations', () => {
    expect(record([Number.NaN, -1, Number.POSITIVE_INFINITY, 10])).toEqual([10]);
  });

  it('counts requests per finished row', () => {
    expect(requestsPerRow({ rows: 0, polls: 0 })).toBeUndefined();
    expect(requestsPerRow({ rows: 10, polls: 29 })).toBe(3.9);
  });

  it('raises the sample of a row whose learned first poll came too early', () => {
    expect(jobSampleOf({ jobMs: 3_000, polls: 1, firstPollDelayMs: 2_900 })).toBe(3_000);
    expect(jobSampleOf({ jobMs: 3_100, polls: 2, firstPollDelayMs: 2_850 })).toBeCloseTo(
      3_100 / FIRST_POLL_FACTOR,
    );
    // Rows on the default schedule are not corrected: their polls were not aimed at the estimate.
    expect(jobSampleOf({ jobMs: 3_300, polls: 5 })).toBe(3_300);
  });

  // Jobs of a fixed duration, rows one after another, each poll late by a small overhead: the
  // learned first poll must not sink below the job's duration and leave most rows polling twice.
  it('settles where most first polls find the job done', () => {
    const JOB_MS = 3_000;
    const schedule = { intervalMs: 250, backoff: 1.5, maxIntervalMs: 5_000 };
    const samples: number[] = [];
    const polls: number[] = [];
    for (let row = 0; row < 300; row++) {
      const firstPollDelayMs = firstPollDelayFor(samples);
      const overhead = 5 + (row % 7) * 3;
      let at = 0;
      let n = 0;
      do {
        n += 1;
        at += pollDelayMs(n, { ...schedule, firstPollDelayMs }) + overhead;
      } while (at < JOB_MS);
      polls.push(n);
      recordJobMs(samples, jobSampleOf({ jobMs: at, polls: n, firstPollDelayMs }));
    }
    const steady = polls.slice(100);
    const mean = steady.reduce((a, b) => a + b, 0) / steady.length;
    expect(mean).toBeLessThanOrEqual(1.3);
    // ... and does not wait much past the job either: the estimate stays near its duration.
    expect(estimateJobMs(samples)).toBeLessThan(JOB_MS / FIRST_POLL_FACTOR + 400);
  });
});

describe('measuredJobMs: the job, not the waits around it', () => {
  it('counts from acceptance to the send of the poll that saw it done (after its permit)', () => {
    expect(measuredJobMs({ acceptedAt: 10_000, sentAt: 10_800, fallbackMs: 45_000 })).toBe(800);
  });
  it('is capped by the service-stated duration plus its 1 s resolution (an outage delayed the poll)', () => {
    // A 0.75 s job whose poll went out 45 s late: the service's timestamps say 0 or 1 s.
    expect(
      measuredJobMs({ acceptedAt: 0, sentAt: 45_000, serviceJobMs: 1_000, fallbackMs: 45_000 }),
    ).toBe(2_000);
    // The observed bound wins when it is tighter than the whole-second one.
    expect(
      measuredJobMs({ acceptedAt: 0, sentAt: 760, serviceJobMs: 1_000, fallbackMs: 900 }),
    ).toBe(760);
  });
  it('falls back to workflow time without stamps, never below zero', () => {
    expect(measuredJobMs({ fallbackMs: 1_234 })).toBe(1_234);
    expect(measuredJobMs({ acceptedAt: 2_000, sentAt: 1_500, fallbackMs: 9 })).toBe(0);
  });
  it('keeps the learned first poll near the job after an outage (steady state)', () => {
    const samples: number[] = [];
    // 50 rows of 750 ms jobs in flight through a 45 s outage: every poll is late.
    for (let i = 0; i < 50; i++)
      recordJobMs(
        samples,
        measuredJobMs({ acceptedAt: 0, sentAt: 45_000, serviceJobMs: 0, fallbackMs: 45_000 }),
      );
    expect(firstPollDelayFor(samples)).toBeLessThanOrEqual(1_000);
  });
});
