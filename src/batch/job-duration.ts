// How long a batch's jobs take, learned from its finished rows, and the first-poll delay it
// gives new rows. Pure and small (at most JOB_SAMPLES numbers): carried across continue-as-new.
//
// The samples come from each row's jobMs (measured by calls/engine.ts): submit accepted -> the
// poll that saw the job done, an upper bound of the job's duration. The estimate is their 80th
// percentile (nearest rank) over the last 50 rows: a high quantile so the first poll lands after
// most jobs end, robust to a few outliers (a job slowed by a retry, one served from a cache), and
// recent, so it follows drift.
// The first poll waits FIRST_POLL_FACTOR x the estimate, so the estimate probes downwards: a row
// whose learned first poll found its job done reports about that delay, and the estimate moves
// down while jobs get faster. A row whose learned first poll came too early says the first poll
// should have waited until its job was seen done: it records jobMs / FIRST_POLL_FACTOR, the
// estimate whose first poll is that late. Without that, the short polls after an early first poll
// report a jobMs below the estimate and the estimate sinks until most first polls are early.

export const JOB_SAMPLES = 50;
/** Rows that must finish before new rows get a learned first poll. */
export const MIN_JOB_SAMPLES = 5;
export const JOB_QUANTILE = 0.8;
export const FIRST_POLL_FACTOR = 0.9;

/** Adds one finished row's jobMs, keeping the last JOB_SAMPLES (oldest first). */
export function recordJobMs(samples: number[], jobMs: number): void {
  if (!Number.isFinite(jobMs) || jobMs < 0) return;
  samples.push(Math.round(jobMs));
  if (samples.length > JOB_SAMPLES) samples.splice(0, samples.length - JOB_SAMPLES);
}

/** The sample a finished row adds: its jobMs, raised when its learned first poll came too early. */
export function jobSampleOf(timing: {
  jobMs: number;
  polls: number;
  firstPollDelayMs?: number;
}): number {
  const early = timing.firstPollDelayMs !== undefined && timing.polls > 1;
  return early ? timing.jobMs / FIRST_POLL_FACTOR : timing.jobMs;
}

/** The learned job duration in ms, or undefined before MIN_JOB_SAMPLES rows finished. */
export function estimateJobMs(samples: readonly number[]): number | undefined {
  if (samples.length < MIN_JOB_SAMPLES) return undefined;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil(JOB_QUANTILE * sorted.length) - 1];
}

/** The first-poll delay for a new row, or undefined (the default schedule) while learning. */
export function firstPollDelayFor(samples: readonly number[]): number | undefined {
  const estimate = estimateJobMs(samples);
  return estimate === undefined ? undefined : Math.round(FIRST_POLL_FACTOR * estimate);
}

/** Polls of the rows that finished found or empty (one submit each), for progress. */
export interface RequestCounts {
  rows: number;
  polls: number;
}

export function requestsPerRow(c: RequestCounts): number | undefined {
  return c.rows === 0 ? undefined : Math.round(((c.rows + c.polls) / c.rows) * 100) / 100;
}
