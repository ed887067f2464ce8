// The expiry sweep a worker runs on the result cache: a few minutes after it starts, then every
// hour. A sweep that fails (the store is down, or not reachable yet) is ignored: the next one
// tries again.
import type { CacheUpkeep } from './roles.js';

export const CACHE_SWEEP_INTERVAL_MS = 3_600_000;
/**
 * The first sweep waits this long: a worker that starts opens no store for it (workers started
 * together, or restarted in a loop, do not all delete at once), and one that stops soon never
 * sweeps. Expired entries never answer meanwhile: the sweep only frees their room.
 */
export const CACHE_SWEEP_FIRST_MS = 5 * 60_000;
/** How long stopping waits for a sweep under way before the store is closed under it. */
const STOP_WAIT_MS = 5_000;

export interface CacheSweep {
  /** Stops the timer and waits for a sweep under way (the store is closed after it). */
  stop(): Promise<void>;
}

export function startCacheSweep(
  cache: () => Promise<CacheUpkeep>,
  opts: {
    intervalMs?: number;
    /** When the first sweep runs; CACHE_SWEEP_FIRST_MS by default (0: at once). */
    firstAfterMs?: number;
    onSwept?: (expired: number) => void;
  } = {},
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
  // Unref'd: the sweep never keeps a process alive.
  let timer: NodeJS.Timeout | undefined;
  const first = setTimeout(() => {
    sweep();
    timer = setInterval(sweep, opts.intervalMs ?? CACHE_SWEEP_INTERVAL_MS);
    timer.unref();
  }, opts.firstAfterMs ?? CACHE_SWEEP_FIRST_MS);
  first.unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      // A sweep held up by a busy store does not hold up the worker's shutdown.
      let waited: NodeJS.Timeout | undefined;
      await Promise.race([
        running,
        new Promise((r) => {
          waited = setTimeout(r, STOP_WAIT_MS);
          waited.unref();
        }),
      ]);
      clearTimeout(waited);
    },
  };
}
