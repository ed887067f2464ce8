// Exact sliding-window limits per key (a minute and an hour window, both scaled by the time
// scale). Requests are counted at arrival; rejected requests are not counted. Retry-After is the
// time until the oldest counted request leaves every full window, so a retry after it succeeds.

/** Arrival times of accepted requests, oldest first; a growable ring would save little here. */
class Window {
  private times: number[] = [];
  private head = 0;
  constructor(readonly lengthMs: number) {}

  private evict(now: number): void {
    while (this.head < this.times.length && this.times[this.head] <= now - this.lengthMs)
      this.head++;
    // Compact now and then so the array does not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
  }

  count(now: number): number {
    this.evict(now);
    return this.times.length - this.head;
  }

  /** Milliseconds until the count drops below `limit`. */
  waitFor(now: number, limit: number): number {
    const n = this.count(now);
    if (n < limit) return 0;
    const t = this.times[this.head + (n - limit)];
    return t + this.lengthMs - now;
  }

  push(now: number): void {
    this.times.push(now);
  }
}

export interface LimitDecision {
  allowed: boolean;
  /** Whole seconds, rounded up; set when not allowed. */
  retryAfterSeconds?: number;
  retryAfterMs?: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, { minute: Window; hour: Window }>();
  constructor(private readonly timeScale: number) {}

  check(keyId: string, perMinute: number, perHour: number, now = Date.now()): LimitDecision {
    let w = this.windows.get(keyId);
    if (!w) {
      w = {
        minute: new Window(60_000 / this.timeScale),
        hour: new Window(3_600_000 / this.timeScale),
      };
      this.windows.set(keyId, w);
    }
    const wait = Math.max(w.minute.waitFor(now, perMinute), w.hour.waitFor(now, perHour));
    if (wait > 0) {
      // Eviction is "older than the window" (strict), so add 1 ms before rounding up.
      return {
        allowed: false,
        retryAfterMs: wait + 1,
        retryAfterSeconds: Math.max(1, Math.ceil((wait + 1) / 1000)),
      };
    }
    w.minute.push(now);
    w.hour.push(now);
    return { allowed: true };
  }

  reset(keyId?: string): void {
    if (keyId) this.windows.delete(keyId);
    else this.windows.clear();
  }
}
