import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { checkCallbackUrl } from '../../../src/contract/callback-url.js';
import {
  webhookSettings,
  WebhookConfigError,
  type WebhookSettings,
} from '../../../src/webhooks/settings.js';
import {
  callbackToken,
  callbackUrlFor,
  CallbackUrlRefusedError,
  verifyCallbackToken,
} from '../../../src/webhooks/token.js';

const SECRET = 'current-secret-0123456789';
const OLD_SECRET = 'previous-secret-0123456789';

function settings(over: Partial<WebhookSettings> = {}): WebhookSettings {
  return {
    publicUrl: 'https://hooks.acme-data.io/pcds',
    current: { id: 'k2', secret: SECRET },
    previous: [{ id: 'k1', secret: OLD_SECRET }],
    allowLoopback: false,
    fallbackPollMs: 60_000,
    ...over,
  };
}

/** Splits a callback URL made by callbackUrlFor into its parts. */
function partsOf(
  url: string,
  base: string,
): { secretId: string; workflowId: string; token: string } {
  const rest = url.slice(base.length).split('/');
  expect(rest[0]).toBe('');
  expect(rest[1]).toBe('hooks');
  return { secretId: rest[2], workflowId: decodeURIComponent(rest[3]), token: rest[4] };
}

describe('callbackUrlFor / verifyCallbackToken', () => {
  it('round-trips: the URL carries the key id, the workflow id and a token that verifies', () => {
    const s = settings();
    const workflowId = 'batch-7f3a/row-000042';
    const url = callbackUrlFor(workflowId, s);
    expect(url.startsWith('https://hooks.acme-data.io/pcds/hooks/k2/')).toBe(true);
    expect(checkCallbackUrl(url).ok).toBe(true);
    const p = partsOf(url, s.publicUrl);
    expect(p.secretId).toBe('k2');
    expect(p.workflowId).toBe(workflowId);
    // At least 128 bits of token, URL-safe.
    expect(p.token).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{22,}$/);
    expect(verifyCallbackToken(p.secretId, p.workflowId, p.token, s)).toBe(true);
  });

  it('expires: a URL works until its expiry hour, then is refused like a forged one', () => {
    const s = settings({ tokenTtlMs: 2 * 3_600_000 });
    const madeAt = Date.UTC(2026, 10, 23, 9, 30);
    const p = partsOf(callbackUrlFor('call-a', s, madeAt), s.publicUrl);
    expect(verifyCallbackToken('k2', 'call-a', p.token, s, madeAt)).toBe(true);
    // Made at 09:30 with a 2 h life: good through 11:59, refused from 12:00.
    expect(verifyCallbackToken('k2', 'call-a', p.token, s, Date.UTC(2026, 10, 23, 11, 59))).toBe(
      true,
    );
    expect(verifyCallbackToken('k2', 'call-a', p.token, s, Date.UTC(2026, 10, 23, 12, 0))).toBe(
      false,
    );
    // The expiry is under the HMAC: moving it forward breaks the token.
    const [hour, mac] = p.token.split('.');
    const later = `${(parseInt(hour, 36) + 100).toString(36)}.${mac}`;
    expect(verifyCallbackToken('k2', 'call-a', later, s, madeAt)).toBe(false);
  });

  it('gives each workflow its own token, and the same one every time', () => {
    const s = settings();
    const a = partsOf(callbackUrlFor('call-a', s), s.publicUrl).token;
    const b = partsOf(callbackUrlFor('call-b', s), s.publicUrl).token;
    expect(a).not.toBe(b);
    expect(partsOf(callbackUrlFor('call-a', s), s.publicUrl).token).toBe(a);
  });

  it('refuses a wrong token, including one of another length', () => {
    const s = settings();
    const { token } = partsOf(callbackUrlFor('call-a', s), s.publicUrl);
    const flipped = (token[0] === 'A' ? 'B' : 'A') + token.slice(1);
    expect(verifyCallbackToken('k2', 'call-a', flipped, s)).toBe(false);
    expect(verifyCallbackToken('k2', 'call-a', token.slice(0, -1), s)).toBe(false);
    expect(verifyCallbackToken('k2', 'call-a', token + 'x', s)).toBe(false);
    expect(verifyCallbackToken('k2', 'call-a', '', s)).toBe(false);
  });

  it('refuses a valid token presented for another workflow id', () => {
    const s = settings();
    const { token } = partsOf(callbackUrlFor('call-a', s), s.publicUrl);
    expect(verifyCallbackToken('k2', 'call-b', token, s)).toBe(false);
  });

  it('accepts a URL made before a rotation, under its previous key id', () => {
    const before = settings({ current: { id: 'k1', secret: OLD_SECRET }, previous: [] });
    const made = partsOf(callbackUrlFor('call-a', before), before.publicUrl);
    expect(made.secretId).toBe('k1');
    const after = settings();
    expect(verifyCallbackToken(made.secretId, 'call-a', made.token, after)).toBe(true);
    // ...but not under the new key id, and not once the old secret is dropped.
    expect(verifyCallbackToken('k2', 'call-a', made.token, after)).toBe(false);
    expect(verifyCallbackToken('k1', 'call-a', made.token, settings({ previous: [] }))).toBe(false);
  });

  it('refuses an unknown key id even with a token made by a known secret', () => {
    const s = settings();
    const token = callbackToken(s.current, 'call-a');
    expect(verifyCallbackToken('k9', 'call-a', token, s)).toBe(false);
  });

  it.each([
    ['http://localhost:8788', 'must not be localhost', true],
    ['http://127.0.0.1:8788', 'loopback', true],
    ['http://10.1.2.3', 'private', false],
    ['http://192.168.1.10:8080/x', 'private', false],
    ['https://receiver.internal', 'must not end in .internal', false],
    ['https://hooks.acme.test', 'must not end in .test', false],
    ['ftp://hooks.acme-data.io', 'scheme must be http or https', false],
  ])('refuses %s before submitting, saying why', (publicUrl, reason, loopbackHint) => {
    const s = settings({ publicUrl });
    let error: unknown;
    try {
      callbackUrlFor('call-a', s);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CallbackUrlRefusedError);
    const err = error as CallbackUrlRefusedError;
    expect(err.code).toBe('invalid_callback_url');
    expect(err.message).toContain(reason);
    expect(err.message).toContain('PCDS_WEBHOOK_PUBLIC_URL');
    expect(err.message.includes('PCDS_WEBHOOK_ALLOW_LOOPBACK')).toBe(loopbackHint);
    // The token is a credential: it never appears in the error.
    expect(err.message).not.toContain(callbackToken(s.current, 'call-a'));
  });

  it('refuses a URL longer than the service allows', () => {
    const s = settings();
    expect(() => callbackUrlFor('w'.repeat(1000), s)).toThrow(/at most 1024/);
  });

  it('accepts loopback only when the development switch is on', () => {
    const s = settings({ publicUrl: 'http://127.0.0.1:8788', allowLoopback: true });
    const url = callbackUrlFor('call-a', s);
    expect(checkCallbackUrl(url, { allowLoopback: true }).ok).toBe(true);
  });
});

describe('webhookSettings', () => {
  const env = {
    PCDS_WEBHOOK_PUBLIC_URL: 'https://hooks.acme-data.io/',
    PCDS_WEBHOOK_SECRET: SECRET,
    PCDS_WEBHOOK_SECRET_ID: 'k2',
    PCDS_WEBHOOK_PREVIOUS_SECRETS: `k1:${OLD_SECRET}`,
  };

  it('reads the public URL, the current secret and previous ones from configuration', () => {
    const s = webhookSettings(loadConfig(env));
    expect(s.publicUrl).toBe('https://hooks.acme-data.io');
    expect(s.current).toEqual({ id: 'k2', secret: SECRET });
    expect(s.previous).toEqual([{ id: 'k1', secret: OLD_SECRET }]);
    expect(s.allowLoopback).toBe(false);
    expect(
      loadConfig({ ...env, PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true' }).PCDS_WEBHOOK_ALLOW_LOOPBACK,
    ).toBe(true);
    expect(
      loadConfig({ ...env, PCDS_WEBHOOK_ALLOW_LOOPBACK: 'false' }).PCDS_WEBHOOK_ALLOW_LOOPBACK,
    ).toBe(false);
  });

  it('names what is missing', () => {
    expect(() =>
      webhookSettings(loadConfig({ ...env, PCDS_WEBHOOK_PUBLIC_URL: undefined })),
    ).toThrow(/PCDS_WEBHOOK_PUBLIC_URL/);
    expect(() => webhookSettings(loadConfig({ ...env, PCDS_WEBHOOK_SECRET: undefined }))).toThrow(
      /PCDS_WEBHOOK_SECRET/,
    );
  });

  it('rejects malformed previous secrets without echoing them', () => {
    for (const bad of ['k1-nocolon-0123456789abcdef', 'k1:short', ':nolabel-0123456789abcdef']) {
      let error: unknown;
      try {
        webhookSettings(loadConfig({ ...env, PCDS_WEBHOOK_PREVIOUS_SECRETS: bad }));
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(WebhookConfigError);
      const message = (error as Error).message;
      expect(message).toContain('PCDS_WEBHOOK_PREVIOUS_SECRETS entry 1');
      expect(message).not.toContain(bad.split(':').pop());
    }
  });

  it('rejects a key id used twice', () => {
    expect(() =>
      webhookSettings(loadConfig({ ...env, PCDS_WEBHOOK_PREVIOUS_SECRETS: `k2:${OLD_SECRET}` })),
    ).toThrow(/used twice/);
  });

  it('rejects a public URL with a query', () => {
    expect(() =>
      webhookSettings(
        loadConfig({ ...env, PCDS_WEBHOOK_PUBLIC_URL: 'https://hooks.acme-data.io/?a=1' }),
      ),
    ).toThrow(/without a query/);
  });
});
