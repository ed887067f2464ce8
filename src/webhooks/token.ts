// Callback URLs with an unguessable per-call token: an HMAC of the workflow id under a configured
// secret, named by a key id so secrets can be rotated. Deliveries carry no signature, so knowing
// the URL is what authenticates them; the token therefore never enters workflow history or logs.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { checkCallbackUrl } from '../contract/callback-url.js';
import { PcdsError } from '../contract/pcds-error.js';
import type { WebhookSecret, WebhookSettings } from './settings.js';

/** 128 bits of the HMAC: far beyond online guessing, and short enough for the 1024-character limit. */
const TOKEN_BYTES = 16;
/** Domain separation, so a token is never valid as any other HMAC made with the same secret. */
const TOKEN_CONTEXT = 'pcds-webhook-v1\0';

export const CALLBACK_PATH_PREFIX = '/hooks';

export function callbackToken(secret: WebhookSecret, workflowId: string): string {
  return createHmac('sha256', secret.secret)
    .update(TOKEN_CONTEXT + workflowId, 'utf8')
    .digest()
    .subarray(0, TOKEN_BYTES)
    .toString('base64url');
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
export function callbackUrlFor(workflowId: string, settings: WebhookSettings): string {
  if (workflowId.length === 0)
    throw new CallbackUrlRefusedError('a callback URL needs a workflow id');
  const { current } = settings;
  const url = `${settings.publicUrl}${CALLBACK_PATH_PREFIX}/${current.id}/${encodeURIComponent(workflowId)}/${callbackToken(current, workflowId)}`;
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
 * True when `token` is the one this receiver would have made for `workflowId` under the secret
 * named `secretId` (current or previous). Compared in constant time.
 */
export function verifyCallbackToken(
  secretId: string,
  workflowId: string,
  token: string,
  settings: WebhookSettings,
): boolean {
  const secret = secretById(settings, secretId);
  if (!secret) return false;
  const expected = Buffer.from(callbackToken(secret, workflowId), 'utf8');
  const given = Buffer.from(token, 'utf8');
  // timingSafeEqual needs equal lengths; the expected length is public (fixed), so this leaks nothing.
  if (given.length !== expected.length) return false;
  return timingSafeEqual(given, expected);
}
