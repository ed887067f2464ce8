// Throughput over the last minute from per-second completion counts: a bounded list (at most 60
// entries), small enough to carry across continue-as-new. Pure: workflow code imports it.

export type RateBuckets = [number, number][];

const WINDOW_SECONDS = 60;

export function recordCompletions(buckets: RateBuckets, nowMs: number, count = 1): void {
  const second = Math.floor(nowMs / 1000);
  const last = buckets[buckets.length - 1];
  if (last && last[0] === second) last[1] += count;
  else buckets.push([second, count]);
  prune(buckets, second);
}

function prune(buckets: RateBuckets, second: number): void {
  while (buckets.length > 0 && buckets[0][0] <= second - WINDOW_SECONDS) buckets.shift();
}

/**
 * Rows per second over the last minute, or over the time since `sinceMs` when the batch is
 * younger than a minute (so an early figure is not diluted by seconds that never happened).
 */
export function rowsPerSecond(buckets: RateBuckets, nowMs: number, sinceMs: number): number {
  const second = Math.floor(nowMs / 1000);
  let count = 0;
  for (const [s, c] of buckets) if (s > second - WINDOW_SECONDS) count += c;
  const span = Math.min(WINDOW_SECONDS, Math.max(1, (nowMs - sinceMs) / 1000));
  return count / span;
}

/**
 * Rows left over the last minute's rows per second: blind to the hour window (a burst reads as
 * minutes where the hour window makes hours). The ETA of a batch without a throttle, and the
 * baseline bench/eta.ts compares batch/plan.ts with.
 */
export function etaSeconds(remaining: number, rate: number): number | undefined {
  if (remaining <= 0) return 0;
  if (rate <= 0) return undefined;
  return Math.ceil(remaining / rate);
}
