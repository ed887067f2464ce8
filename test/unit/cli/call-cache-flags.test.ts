// How `pcds call`'s cache flags and the client's cache option become the call's cache use, and
// what each refuses (with a message that names the problem, not the value).
import { describe, expect, it } from 'vitest';
import { splitFlags } from '../../../src/cli/call.js';
import { UsageError } from '../../../src/cli/output.js';
import { callCacheUse, PcdsUsageError } from '../../../src/client.js';

describe('pcds call cache flags', () => {
  it('uses the cache by default, and leaves the parameters to the endpoint', () => {
    const { flags, rest } = splitFlags(['--email', 'a@b.example']);
    expect(flags.cache).toEqual({});
    expect(rest).toEqual(['--email', 'a@b.example']);
    expect(callCacheUse(flags.cache)).toEqual({ mode: 'use' });
  });

  it('--max-age takes a duration, as a separate or an inline value', () => {
    expect(splitFlags(['--max-age', '7d']).flags.cache).toEqual({ maxAge: 7 * 86_400_000 });
    expect(splitFlags(['--max-age=90s']).flags.cache).toEqual({ maxAge: 90_000 });
    expect(callCacheUse(splitFlags(['--max-age', '0']).flags.cache)).toEqual({
      mode: 'use',
      maxAgeMs: 0,
    });
  });

  it('--refresh renews the entry and --no-cache skips the cache', () => {
    expect(splitFlags(['--refresh']).flags.cache).toBe('refresh');
    expect(callCacheUse(splitFlags(['--refresh']).flags.cache)).toEqual({ mode: 'refresh' });
    expect(splitFlags(['--no-cache']).flags.cache).toBe(false);
    expect(callCacheUse(splitFlags(['--no-cache']).flags.cache)).toEqual({ mode: 'off' });
  });

  it('refuses --no-cache with --refresh, and --max-age with either', () => {
    expect(() => splitFlags(['--no-cache', '--refresh'])).toThrow(UsageError);
    expect(() => splitFlags(['--no-cache', '--refresh'])).toThrow(/--no-cache and --refresh/);
    expect(() => splitFlags(['--refresh', '--max-age', '1d'])).toThrow(/--max-age/);
    expect(() => splitFlags(['--max-age', '1d', '--no-cache'])).toThrow(UsageError);
  });

  it('refuses a --max-age that is not a duration, or has no value, without echoing it', () => {
    expect(() => splitFlags(['--max-age', 'soon-ish'])).toThrow(UsageError);
    expect(() => splitFlags(['--max-age', 'soon-ish'])).not.toThrow(/soon-ish/);
    expect(() => splitFlags(['--max-age'])).toThrow(/--max-age needs a value/);
  });
});

describe('the client call cache option', () => {
  it('maps each shape onto the cache use the workflow carries', () => {
    expect(callCacheUse(undefined)).toEqual({ mode: 'use' });
    expect(callCacheUse({})).toEqual({ mode: 'use' });
    expect(callCacheUse({ maxAge: 1_500 })).toEqual({ mode: 'use', maxAgeMs: 1_500 });
    expect(callCacheUse({ maxAge: '12h' })).toEqual({ mode: 'use', maxAgeMs: 12 * 3_600_000 });
    expect(callCacheUse('refresh')).toEqual({ mode: 'refresh' });
    expect(callCacheUse(false)).toEqual({ mode: 'off' });
  });

  it.each([[-1], [Number.NaN], [Number.POSITIVE_INFINITY], ['yesterday']])(
    'refuses maxAge %s as invalid_options',
    (maxAge) => {
      let err: unknown;
      try {
        callCacheUse({ maxAge });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(PcdsUsageError);
      expect((err as PcdsUsageError).code).toBe('invalid_options');
      if (typeof maxAge === 'string') expect((err as Error).message).not.toContain(maxAge);
    },
  );
});
