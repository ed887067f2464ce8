// The project's one back-off formula: exponential from a base, capped, with full jitter above a
// floor; the wait after a Retry-After; and the policy of every hand-written retry loop (Temporal's
// own retry policies are in retry-policies.ts). Pure, so workflow code (with its seeded
// random) and activities share it.

export interface Backoff {
  /** The first attempt's ceiling. */
  baseMs: number;
  /** No attempt waits longer. */
  capMs: number;
  /** No attempt waits less (a jitter of nearly zero would repeat at once). */
  floorMs: number;
}

/** Requests to the service: 1 s, doubling up to a minute, never under 100 ms. */
export const SERVICE_BACKOFF: Backoff = { baseMs: 1_000, capMs: 60_000, floorMs: 100 };
/** Added to a Retry-After so that callers released together do not all arrive at once. */
export const RETRY_AFTER_JITTER_MS = 250;

/** Full jitter: a uniform draw below the ceiling. */
export const FULL_JITTER: () => number = Math.random;
/** No jitter: always the ceiling (a deterministic wait, e.g. a recorded workflow timer). */
export const NO_JITTER: () => number = () => 1;

/** The most attempt `attempt` (1 for the first) may wait: base x 2^(attempt-1), capped. */
export function backoffCeilingMs(attempt: number, b: Backoff = SERVICE_BACKOFF): number {
  return Math.min(b.capMs, b.baseMs * 2 ** Math.min(Math.max(0, attempt - 1), 30));
}

/** The wait before attempt `attempt + 1`: the ceiling times a draw of `random`, at least the floor. */
export function backoffDelayMs(
  attempt: number,
  random: () => number = FULL_JITTER,
  b: Backoff = SERVICE_BACKOFF,
): number {
  return Math.max(b.floorMs, Math.round(random() * backoffCeilingMs(attempt, b)));
}

/** The wait the service asked for (Retry-After), plus a small jitter. */
export function retryAfterDelayMs(
  retryAfterMs: number,
  random: () => number = FULL_JITTER,
): number {
  return retryAfterMs + Math.round(random() * RETRY_AFTER_JITTER_MS);
}

/** A transient failure's wait: the service's Retry-After when it gave one, else the back-off. */
export function retryDelayMs(
  attempt: number,
  retryAfterMs: number | undefined,
  random: () => number = FULL_JITTER,
): number {
  return retryAfterMs !== undefined
    ? retryAfterDelayMs(retryAfterMs, random)
    : backoffDelayMs(attempt, random);
}

/** A wait of exactly `ms` between attempts (with NO_JITTER; full jitter draws below it). */
export const constantBackoff = (ms: number): Backoff => ({ baseMs: ms, capMs: ms, floorMs: ms });

// The policies of the loops that retry in process, by the loop that uses each.

/** A permit the throttle said to ask again for at a time: asked up to 100 ms after it. */
export const PERMIT_RETRY_SPREAD_MS = 100;

/** Updates to a key's throttle workflow: 6 attempts, 50 ms apart doubling (1.6 s before the last). */
export const THROTTLE_UPDATE_ATTEMPTS = 6;
export const THROTTLE_UPDATE_BACKOFF: Backoff = { baseMs: 50, capMs: 1_600, floorMs: 0 };

/** Reports of an accepted submit to the Temporal server: as requests to the service, up to 10 s. */
export const ACCEPTANCE_REPORT_BACKOFF: Backoff = { ...SERVICE_BACKOFF, capMs: 10_000 };

/** A compact row's journal writes the store refused: from 0.5 s, doubling up to 30 s. */
export const ROW_JOURNAL_BACKOFF: Backoff = { baseMs: 500, capMs: 30_000, floorMs: 0 };

/** A batch's progress query between two runs (continue-as-new): 5 tries, 300 ms apart. */
export const BATCH_QUERY_ATTEMPTS = 5;
export const BATCH_QUERY_BACKOFF: Backoff = constantBackoff(300);

/** A progress query that failed is asked again 200 ms later, within the caller's deadline. */
export const PROGRESS_QUERY_BACKOFF: Backoff = constantBackoff(200);
