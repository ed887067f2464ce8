import { describe, expect, it } from 'vitest';
import {
  FIRST_POLL_FACTOR,
  JOB_SAMPLES,
  MIN_JOB_SAMPLES,
  estimateJobMs,
  firstPollDelayFor,
  recordJobMs,
  requestsPerRow,
} from '../../../src/batch/job-duration';

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
    expect(requestsPerRow({ rows: 0, submits: 0, polls: 0 })).toBeUndefined();
    expect(requestsPerRow({ rows: 10, submits: 10, polls: 29 })).toBe(3.9);
  });
});
