// The expiry sweep a worker runs on the result cache: once when it starts, then every hour. A
// sweep that fails (the store is down, or not reachable yet) is ignored: the next one tries again.
import type { ResultCache } from './result-cache.js';

export const CACHE_SWEEP_INTERVAL_MS = 3_600_000;

export interface CacheSweep {
  /** Stops the timer and waits for a sweep under way (the store is closed after it). */
  stop(): Promise<void>;
}

export function startCacheSweep(
  cache: () => Promise<ResultCache>,
  opts: { intervalMs?: number; onSwept?: (expired: number) => void } = {},
): CacheSweep {
  let stopped = false;
  let running: Promise<void> | undefined;
  const sweep = () => {
    if (stopped || running) return;
    running = cache()
      .then((c) => c.sweep())
      .then(({ expired }) => opts.onSwept?.(expired))
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
      });
  };
  sweep();
  // Unref'd: the sweep never keeps a process alive.
  const timer = setInterval(sweep, opts.intervalMs ?? CACHE_SWEEP_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
