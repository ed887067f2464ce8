// The result cache as a single call uses it: looked up before the submit, told of the accepted
// job, filled when the job's result is read. The store helps a call and never fails it: when it
// cannot be reached (or is slow), the call goes out as if nothing were cached.
import { Context } from '@temporalio/activity';
import { recordCacheLookups } from '../metrics/instruments.js';
import { fillsCache, readsCache, type CacheUse } from '../calls/cache-policy.js';
import type { CachedResult, CallCache } from '../store/roles.js';
import type { ActivityDeps } from './deps.js';

/** How long one cache step may take before the call goes on without it. */
const CACHE_STEP_MS = 5_000;

type Step = 'lookup' | 'expect' | 'put' | 'fill';

/** A found or empty result as the cache keeps it. */
export interface CacheableResult {
  outcome: 'found' | 'empty';
  status: string;
  result?: unknown;
}

/**
 * Says that the cache was skipped, naming the step and the endpoint only: the error's message may
 * name the database's host, and the parameters are personal data.
 */
function reportSkipped(step: Step, endpoint: string | undefined): void {
  try {
    Context.current().log.warn('result cache unavailable: the call went on without it', {
      step,
      ...(endpoint !== undefined ? { endpoint } : {}),
    });
  } catch {
    // Outside an activity (a test of the helper): nothing to report to.
  }
}

/** Runs a cache step within CACHE_STEP_MS; undefined (and a report) when it fails or is late. */
async function guarded<T>(
  step: Step,
  endpoint: string | undefined,
  run: () => Promise<T>,
): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      run(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('cache step timed out')), CACHE_STEP_MS);
      }),
    ]);
  } catch {
    reportSkipped(step, endpoint);
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

export function callCache(deps: ActivityDeps) {
  const cache = (): Promise<CallCache> => {
    if (!deps.store) return Promise.reject(new Error('no store'));
    return deps.store.cache();
  };
  return {
    /**
     * The fresh entry that answers this call, or undefined (a miss, or the store unreachable).
     * Counted as a hit or a miss when the call reads the cache at all.
     */
    async lookup(
      endpoint: string,
      params: Record<string, unknown>,
      use: CacheUse | undefined,
    ): Promise<CachedResult | undefined> {
      if (!deps.store || !readsCache(endpoint, use)) return undefined;
      const hit = await guarded('lookup', endpoint, async () =>
        (await cache()).get(endpoint, params, use),
      );
      recordCacheLookups('call', hit ? 1 : 0, hit ? 0 : 1);
      return hit;
    },

    /** Remembers an accepted job, so the poll that reads its result fills the cache. */
    async expect(
      requestId: string,
      endpoint: string,
      params: Record<string, unknown>,
      use: CacheUse | undefined,
    ): Promise<void> {
      if (!deps.store || !fillsCache(endpoint, use)) return;
      await guarded('expect', endpoint, async () =>
        (await cache()).expect(requestId, endpoint, params, use),
      );
    },

    /** Puts the result of a job that completed at its submit. */
    async put(
      endpoint: string,
      params: Record<string, unknown>,
      use: CacheUse | undefined,
      got: CacheableResult & { requestId: string },
    ): Promise<void> {
      if (!deps.store || !fillsCache(endpoint, use)) return;
      await guarded('put', endpoint, async () => (await cache()).put(endpoint, params, use, got));
    },

    /** A job's result was read: fills the entry its submit expected (nothing if none did). */
    async fill(requestId: string, endpoint: string, got: CacheableResult): Promise<void> {
      if (!deps.store) return;
      await guarded('fill', endpoint, async () => (await cache()).fill(requestId, got));
    },
  };
}
