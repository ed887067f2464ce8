// When a call's polls happen: pure, so the workflow stays deterministic and the schedule is
// tested without a server. Delays count from the accepted submit (poll 1) or the previous poll.

export const DEFAULT_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_MAX_WAIT_MS = 30 * 60_000;
export const DEFAULT_POLL_BACKOFF = 1.5;
export const DEFAULT_MAX_POLL_INTERVAL_MS = 15_000;

/** After a learned first poll, this many polls keep the short interval before backing off. */
export const SHORT_POLLS_AFTER_FIRST = 3;

export interface PollScheduleOptions {
  intervalMs: number;
  backoff: number;
  maxIntervalMs: number;
  /** The batch's estimate of when the job is done; absent: the default schedule. */
  firstPollDelayMs?: number;
}

/**
 * Delay before poll number `poll` (1-based). Default: interval, then growing by `backoff` up to
 * the ceiling. With a learned first delay: that delay, then the short interval a few times (a job
 * most likely ends just after its typical duration), then the same backoff as the default.
 */
export function pollDelayMs(poll: number, o: PollScheduleOptions): number {
  let growthSteps = poll - 1;
  if (o.firstPollDelayMs !== undefined) {
    if (poll === 1) return Math.max(0, Math.round(o.firstPollDelayMs));
    growthSteps = Math.max(0, poll - 2 - SHORT_POLLS_AFTER_FIRST);
  }
  let delay = o.intervalMs;
  for (let i = 0; i < growthSteps && delay < o.maxIntervalMs; i++)
    delay = Math.min(o.maxIntervalMs, Math.round(delay * o.backoff));
  return delay;
}
