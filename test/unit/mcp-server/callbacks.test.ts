// No `pcds mcp` caller picks where results go: a callback URL key, however spelled and however
// deep in the parameters, is refused.
import { describe, expect, it } from 'vitest';
import { PcdsUsageError } from '../../../src/client-errors.js';
import { CALLBACK_KEY, hasCallbackKey } from '../../../src/contract/callback-url.js';
import { refuseCallbackUrl } from '../../../src/mcp-server/callbacks.js';

const HOOK = 'https://listener.example.com/hook';

describe('refuseCallbackUrl', () => {
  it.each([
    { callback_url: HOOK },
    { callbackUrl: HOOK },
    { 'Callback-URL': HOOK },
    { CALLBACKURL: HOOK },
    { query: 'x', filters: { delivery: { callback_url: HOOK } } },
    { query: 'x', hooks: [{ a: 1 }, { callbackUrl: HOOK }] },
  ])('refuses %j', (params) => {
    let err: unknown;
    try {
      refuseCallbackUrl(params);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PcdsUsageError);
    expect((err as PcdsUsageError).code).toBe('callback_not_allowed');
    expect((err as Error).message).not.toContain(HOOK);
  });

  it('accepts parameters whose keys only look alike, and values that are URLs', () => {
    for (const params of [
      { query: 'x', callback: HOOK, url: HOOK },
      { query: 'x', my_callback_url_note: 1, notes: ['callback_url'] },
      { query: 'x', deep: [[{ callback__url: 1 }]] },
    ]) {
      expect(() => refuseCallbackUrl(params)).not.toThrow();
      expect(hasCallbackKey(params)).toBe(false);
    }
    expect(CALLBACK_KEY.test('callback-url')).toBe(true);
  });
});
