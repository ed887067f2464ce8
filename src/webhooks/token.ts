// Callback URLs with an unguessable per-call token: an expiry hour and an HMAC of the workflow id
// and that hour under a configured secret, named by a key id so secrets can be rotated. Deliveries
// carry no signature, so knowing the URL is what authenticates them; the token therefore never
// enters workflow history or logs, and stops working when it expires.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { checkCallbackUrl } from '../contract/callback-url.js';
import { PcdsError } from '../contract/pcds-error.js';
import type { WebhookSecret, WebhookSettings } from './settings.js';

/** 128 bits of the HMAC: far beyond online guessing, and short enough for the 1024-character limit. */
const TOKEN_BYTES = 16;
/** Domain separation, so a token is never valid as any other HMAC made with the same secret. */
const TOKEN_CONTEXT = 'pcds-webhook-v2\0';
const HOUR_MS = 3_600_000;
/** How long a callback URL works after it is made, unless configured: a job seldom runs a day. */
export const DEFAULT_TOKEN_TTL_MS = 48 * HOUR_MS;
const TOKEN_RE = /^([0-9a-z]{1,8})\.([A-Za-z0-9_-]{22})$/;

export const CALLBACK_PATH_PREFIX = '/hooks';

/** The hour (since the epoch) a token made at `now` expires, rounded up: tokens of one hour agree. */
export function tokenExpiryHour(now: number, ttlMs = DEFAULT_TOKEN_TTL_MS): number {
  return Math.ceil((now + ttlMs) / HOUR_MS);
}

function tokenMac(secret: WebhookSecret, workflowId: string, expiryHour: number): string {
  return createHmac('sha256', secret.secret)
    .update(`${TOKEN_CONTEXT}${expiryHour}\0${workflowId}`, 'utf8')
    .digest()
    .subarray(0, TOKEN_BYTES)
    .toString('base64url');
}

/** `<expiry hour, base 36>.<HMAC>`; by default the token a URL made now carries. */
export function callbackToken(
  secret: WebhookSecret,
  workflowId: string,
  expiryHour = tokenExpiryHour(Date.now()),
): string {
  return `${expiryHour.toString(36)}.${tokenMac(secret, workflowId, expiryHour)}`;
}

/** Raised when a callback URL would be refused by the service; the message never holds the token. */
export class CallbackUrlRefusedError extends PcdsError {
  override name = 'CallbackUrlRefusedError';
  /** The service's own code for the refusal, so callers can fail the call with it. */
  declare readonly code: 'invalid_callback_url';
  constructor(message: string) {
    super('invalid_callback_url', message);
  }
}

/**
 * The callback URL for one call:
 * `${publicUrl}/hooks/${secretId}/${encodeURIComponent(workflowId)}/${token}`. It is checked
 * with the service's rules before it is used, so a misconfiguration fails here, with its reason,
 * instead of costing a rejected submit.
 */
export function callbackUrlFor(
  workflowId: string,
  settings: WebhookSettings,
  now = Date.now(),
): string {
  if (workflowId.length === 0)
    throw new CallbackUrlRefusedError('a callback URL needs a workflow id');
  const { current } = settings;
  const expiry = tokenExpiryHour(now, settings.tokenTtlMs);
  const url = `${settings.publicUrl}${CALLBACK_PATH_PREFIX}/${current.id}/${encodeURIComponent(workflowId)}/${callbackToken(current, workflowId, expiry)}`;
  const check = checkCallbackUrl(url, { allowLoopback: settings.allowLoopback });
  if (!check.ok) {
    const hint =
      /localhost|loopback/.test(check.reason) && !settings.allowLoopback
        ? ' (for local development against the emulator, set PCDS_WEBHOOK_ALLOW_LOOPBACK=true)'
        : '';
    throw new CallbackUrlRefusedError(
      `the service would refuse the callback URL built from PCDS_WEBHOOK_PUBLIC_URL (${settings.publicUrl}): ${check.reason}${hint}`,
    );
  }
  return url;
}

function secretById(settings: WebhookSettings, secretId: string): WebhookSecret | undefined {
  if (settings.current.id === secretId) return settings.current;
  return settings.previous.find((s) => s.id === secretId);
}

/**
 * True when `token` is one this receiver made for `workflowId` under the secret named `secretId`
 * (current or previous) and it has not expired at `now`. Compared in constant time.
 */
export function verifyCallbackToken(
  secretId: string,
  workflowId: string,
  token: string,
  settings: WebhookSettings,
  now = Date.now(),
): boolean {
  const secret = secretById(settings, secretId);
  const parts = TOKEN_RE.exec(token);
  if (!secret || !parts) return false;
  const expiryHour = parseInt(parts[1], 36);
  if (expiryHour * HOUR_MS <= now) return false;
  const expected = Buffer.from(tokenMac(secret, workflowId, expiryHour), 'utf8');
  const given = Buffer.from(parts[2], 'utf8');
  // timingSafeEqual needs equal lengths; the expected length is public (fixed), so this leaks nothing.
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}
