// The project's one back-off formula: exponential from a base, capped, with full jitter above a
// floor; and the wait after a Retry-After. Pure, so workflow code (with its seeded random) and
// activities share it.

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
