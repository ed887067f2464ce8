// Webhook settings read from configuration: public base URL, current and previous secrets (for
// rotation) and the loopback switch. Errors name the variable at fault and never echo a secret.
import { PcdsError } from '../contract/pcds-error.js';
import type { Config } from '../config.js';

export const SECRET_ID_RE = /^[A-Za-z0-9]{1,16}$/;
const MIN_SECRET_LENGTH = 16;

export interface WebhookSecret {
  /** Non-secret label carried in the callback URL so a rotated secret can still be found. */
  id: string;
  secret: string;
}

export interface WebhookSettings {
  /** Base URL the service posts to, without a trailing slash. */
  publicUrl: string;
  /** The secret new callback URLs are made with. */
  current: WebhookSecret;
  /** Older secrets whose URLs are still accepted while their calls drain. */
  previous: WebhookSecret[];
  allowLoopback: boolean;
  fallbackPollMs: number;
  /** How long a callback URL is accepted after it is made. Default 48 h. */
  tokenTtlMs?: number;
}

export class WebhookConfigError extends PcdsError {
  override name = 'WebhookConfigError';
  constructor(message: string) {
    super('invalid_config', message);
  }
}

/** True when configuration asks for webhooks (both the public URL and the secret are set). */
export function webhooksConfigured(
  config: Pick<Config, 'PCDS_WEBHOOK_PUBLIC_URL' | 'PCDS_WEBHOOK_SECRET'>,
): boolean {
  return Boolean(config.PCDS_WEBHOOK_PUBLIC_URL && config.PCDS_WEBHOOK_SECRET);
}

type WebhookConfig = Pick<
  Config,
  | 'PCDS_WEBHOOK_PUBLIC_URL'
  | 'PCDS_WEBHOOK_SECRET'
  | 'PCDS_WEBHOOK_SECRET_ID'
  | 'PCDS_WEBHOOK_PREVIOUS_SECRETS'
  | 'PCDS_WEBHOOK_ALLOW_LOOPBACK'
  | 'PCDS_WEBHOOK_FALLBACK_POLL_MS'
  | 'PCDS_WEBHOOK_TOKEN_TTL_MS'
>;

/** "id:secret,id:secret" -> secrets; the message names the entry by position, not by value. */
export function parsePreviousSecrets(raw: string | undefined): WebhookSecret[] {
  if (!raw || raw.trim() === '') return [];
  return raw.split(',').map((entry, i) => {
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon).trim() : '';
    const secret = colon > 0 ? entry.slice(colon + 1).trim() : '';
    if (!SECRET_ID_RE.test(id)) {
      throw new WebhookConfigError(
        `PCDS_WEBHOOK_PREVIOUS_SECRETS entry ${i + 1}: expected "id:secret" with an id of 1-16 letters or digits`,
      );
    }
    if (secret.length < MIN_SECRET_LENGTH) {
      throw new WebhookConfigError(
        `PCDS_WEBHOOK_PREVIOUS_SECRETS entry ${i + 1} (id ${id}): the secret must be at least ${MIN_SECRET_LENGTH} characters`,
      );
    }
    return { id, secret };
  });
}

export function webhookSettings(config: WebhookConfig): WebhookSettings {
  if (!config.PCDS_WEBHOOK_PUBLIC_URL) {
    throw new WebhookConfigError(
      'webhooks need PCDS_WEBHOOK_PUBLIC_URL: the public base URL at which the service can reach the receiver',
    );
  }
  if (!config.PCDS_WEBHOOK_SECRET) {
    throw new WebhookConfigError(
      'webhooks need PCDS_WEBHOOK_SECRET (at least 16 random characters) to make unguessable callback URLs',
    );
  }
  const base = new URL(config.PCDS_WEBHOOK_PUBLIC_URL);
  if (base.search || base.hash) {
    throw new WebhookConfigError(
      'PCDS_WEBHOOK_PUBLIC_URL must be a base URL without a query or fragment: callback paths are appended to it',
    );
  }
  const current = { id: config.PCDS_WEBHOOK_SECRET_ID, secret: config.PCDS_WEBHOOK_SECRET };
  const previous = parsePreviousSecrets(config.PCDS_WEBHOOK_PREVIOUS_SECRETS);
  const ids = new Set([current.id]);
  for (const p of previous) {
    if (ids.has(p.id)) {
      throw new WebhookConfigError(
        `webhook secret id "${p.id}" is used twice (PCDS_WEBHOOK_SECRET_ID and PCDS_WEBHOOK_PREVIOUS_SECRETS): give each secret its own id`,
      );
    }
    ids.add(p.id);
  }
  return {
    publicUrl: config.PCDS_WEBHOOK_PUBLIC_URL.replace(/\/+$/, ''),
    current,
    previous,
    allowLoopback: config.PCDS_WEBHOOK_ALLOW_LOOPBACK,
    fallbackPollMs: config.PCDS_WEBHOOK_FALLBACK_POLL_MS,
    tokenTtlMs: config.PCDS_WEBHOOK_TOKEN_TTL_MS,
  };
}
