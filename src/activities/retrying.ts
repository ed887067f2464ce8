// The activities' one retry loop: a request made again after the back-off (src/calls/backoff.ts)
// until it is answered, or until the caller says an error ends it.
import { setTimeout as sleep } from 'node:timers/promises';
import { FULL_JITTER, SERVICE_BACKOFF, backoffDelayMs, type Backoff } from '../calls/backoff.js';

export type Attempts<T> = { answered: true; value: T } | { answered: false; error: unknown };

export async function retryUntilAnswered<T>(
  request: () => Promise<T>,
  o: {
    /** An error that ends the attempts (it is returned). */
    ends?: (err: unknown) => boolean;
    backoff?: Backoff;
    random?: () => number;
    /** Cancels a wait between attempts. */
    signal?: AbortSignal;
  } = {},
): Promise<Attempts<T>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { answered: true, value: await request() };
    } catch (error) {
      if (o.ends?.(error)) return { answered: false, error };
    }
    const delay = backoffDelayMs(attempt, o.random ?? FULL_JITTER, o.backoff ?? SERVICE_BACKOFF);
    await sleep(delay, undefined, o.signal ? { signal: o.signal } : undefined);
  }
}
