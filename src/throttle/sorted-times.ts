// Sorted arrays of times (epoch ms): the throttle's reservation logs and holds. Pure helpers the
// window arithmetic and the scheduler share; workflow-safe.

/** Index of the first element greater than `x`. */
export function upperBound(log: readonly number[], x: number): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (log[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Elements in (from, to]. */
export function countIn(log: readonly number[], from: number, to: number): number {
  return upperBound(log, to) - upperBound(log, from);
}

/** Index of an element equal to `x`, or -1. */
export function indexOf(log: readonly number[], x: number): number {
  const i = upperBound(log, x) - 1;
  return i >= 0 && log[i] === x ? i : -1;
}

export function insertSorted(log: number[], x: number): void {
  log.splice(upperBound(log, x), 0, x);
}

/** Removes one element equal to `x`; answers whether there was one. */
export function removeOne(log: number[], x: number): boolean {
  const i = indexOf(log, x);
  if (i < 0) return false;
  log.splice(i, 1);
  return true;
}

/** Drops every element at or before `x`. */
export function dropThrough(log: number[], x: number): void {
  if (log.length > 0 && log[0] <= x) log.splice(0, upperBound(log, x));
}

/** Drops every element after `x`. */
export function dropAfter(log: number[], x: number): void {
  const i = upperBound(log, x);
  if (i < log.length) log.splice(i);
}
