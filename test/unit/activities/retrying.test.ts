// The activities' retry loop: made again after the back-off until answered, or until an error ends it.
import { describe, expect, it } from 'vitest';
import { retryUntilAnswered } from '../../../src/activities/retrying.js';
import { NO_JITTER } from '../../../src/calls/backoff.js';

const quick = { backoff: { baseMs: 1, capMs: 4, floorMs: 0 }, random: NO_JITTER };

describe('retryUntilAnswered', () => {
  it('makes the request again until it is answered', async () => {
    let calls = 0;
    const got = await retryUntilAnswered(async () => {
      if (++calls < 4) throw new Error('not yet');
      return 'ok';
    }, quick);
    expect(got).toEqual({ answered: true, value: 'ok' });
    expect(calls).toBe(4);
  });

  it('stops at an error that ends it, and returns that error', async () => {
    const refused = new Error('refused');
    let calls = 0;
    const got = await retryUntilAnswered(
      async () => {
        calls += 1;
        throw calls < 3 ? new Error('again') : refused;
      },
      { ...quick, ends: (err) => err === refused },
    );
    expect(got).toEqual({ answered: false, error: refused });
    expect(calls).toBe(3);
  });

  it('a cancelled wait ends the attempts', async () => {
    const abort = new AbortController();
    const attempts = retryUntilAnswered(
      async () => {
        abort.abort();
        throw new Error('down');
      },
      { backoff: { baseMs: 60_000, capMs: 60_000, floorMs: 0 }, signal: abort.signal },
    );
    await expect(attempts).rejects.toThrow(/abort/i);
  });
});
