// How person data sits in the store: every value sealed with the payload codec's keys
// (AES-256-GCM, tagged with the key id, so a rotated key still opens what it sealed), and
// lookups made from a keyed HMAC of the normalised parameters, never from a value.
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import type { EncryptionKeyring } from '../codec/aes-gcm-codec.js';
import { normalisedParams, subjectValues } from '../batch/normalise.js';
import type { IdSecret } from '../temporal/idempotency.js';

const SEALED = 'sealed:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class StoreSealError extends Error {
  readonly code = 'store_unreadable';
}

export interface Sealer {
  /** JSON of the value, sealed with the current key (or in clear with encryption off). */
  seal(value: unknown): string;
  open(text: string): unknown;
  /** The keyed lookup of an endpoint's parameters once normalised. */
  lookup(endpoint: string, params: Record<string, unknown>): string;
  /** Keyed HMACs of the emails and URLs the parameters name, space-separated; null if none. */
  subjects(params: Record<string, unknown>): string | null;
  /** The keyed HMAC of one normalised email or URL (subjectOf): what an erasure looks for. */
  subject(normalised: string): string;
}

/**
 * keyring: the payload codec's keys (undefined: encryption off, values stored as JSON in clear).
 * idSecret: PCDS_ID_SECRET keys the lookups; without it they are plain SHA-256 (dev only).
 */
export function createSealer(keyring?: EncryptionKeyring, idSecret?: IdSecret): Sealer {
  const current = keyring ? keyring.keys.get(keyring.currentKeyId) : undefined;
  if (keyring && !current)
    throw new StoreSealError('the current encryption key is not in the keyring');
  return {
    seal(value) {
      const json = JSON.stringify(value ?? null);
      if (!keyring || !current) return json;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      const body = Buffer.concat([
        iv,
        cipher.update(json, 'utf8'),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return `${SEALED}${keyring.currentKeyId}:${body.toString('base64')}`;
    },
    open(text) {
      if (!text.startsWith(SEALED)) return JSON.parse(text) as unknown;
      const rest = text.slice(SEALED.length);
      const colon = rest.indexOf(':');
      const keyId = rest.slice(0, colon);
      const key = keyring?.keys.get(keyId);
      if (!key)
        throw new StoreSealError(
          `a stored value was sealed with key "${keyId}", which is not configured (PCDS_ENCRYPTION_PREVIOUS_KEYS)`,
        );
      const body = Buffer.from(rest.slice(colon + 1), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, IV_BYTES));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return JSON.parse(plain.toString('utf8')) as unknown;
    },
    lookup(endpoint, params) {
      return keyed(`pcds-store-lookup\0${endpoint}\0${normalisedParams(params)}`);
    },
    subjects(params) {
      const all = subjectValues(params).map((v) => keyed(`pcds-store-subject\0${v}`));
      return all.length > 0 ? all.join(' ') : null;
    },
    subject(normalised) {
      return keyed(`pcds-store-subject\0${normalised}`);
    },
  };
  function keyed(text: string): string {
    return idSecret
      ? createHmac('sha256', idSecret.key).update(text).digest('base64url')
      : createHash('sha256').update(text).digest('base64url');
  }
}
