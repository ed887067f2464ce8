// How person data sits in the store: every value sealed with the payload codec's keys
// (AES-256-GCM, tagged with the key id, so a rotated key still opens what it sealed), and
// lookups made from a keyed HMAC of the normalised parameters, never from a value.
import { PcdsError } from '../contract/pcds-error.js';
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  randomBytes,
} from 'node:crypto';
import type { EncryptionKeyring } from '../codec/aes-gcm-codec.js';
import { normalisedParams } from '../batch/normalise.js';
import { identifiersOf } from './person-identifiers.js';
import type { IdSecret } from '../codec/idempotency.js';

const SEALED = 'sealed:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class StoreSealError extends PcdsError {
  override name = 'StoreSealError';
  override readonly code = 'store_unreadable';
  constructor(message: string) {
    super('store_unreadable', message);
  }
}

export interface Sealer {
  /** JSON of the value, sealed with the current key (or in clear with encryption off). */
  seal(value: unknown): string;
  open(text: string): unknown;
  /** The keyed lookup of an endpoint's parameters once normalised. */
  lookup(endpoint: string, params: Record<string, unknown>): string;
  /**
   * The erasure subjects of what the values name (a request's parameters, a result, a row's
   * cells): keyed HMACs of their identifiers (person-identifiers.ts), space-separated; null if none.
   */
  subjects(...values: unknown[]): string | null;
  /** The keyed HMAC of one identifier (requestedIdentifiers): what an erasure looks for. */
  subject(identifier: string): string;
}

/** Several space-separated lists of subjects as one, each subject once; null when none. */
export function mergedSubjects(...lists: (string | null | undefined)[]): string | null {
  const all = new Set(lists.flatMap((l) => (l ? l.split(' ').filter(Boolean) : [])));
  return all.size > 0 ? [...all].sort().join(' ') : null;
}

/**
 * keyring: the payload codec's keys (undefined: encryption off, values stored as JSON in clear).
 * idSecret: PCDS_ID_SECRET keys every lookup and erasure subject. It is required: an unkeyed
 * hash of an email would let anyone with a copy of the database confirm a guessed address.
 */
export function createSealer(keyring: EncryptionKeyring | undefined, idSecret: IdSecret): Sealer {
  if (!idSecret || idSecret.key.length === 0)
    throw new StoreSealError('the store needs the id secret (PCDS_ID_SECRET) to key its lookups');
  // The id secret imported once: every lookup and subject reuses it.
  const hmacKey = createSecretKey(idSecret.key);
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
    subjects(...values) {
      const all = identifiersOf(...values).map((v) => keyed(`pcds-store-subject\0${v}`));
      return all.length > 0 ? all.join(' ') : null;
    },
    subject(identifier) {
      return keyed(`pcds-store-subject\0${identifier}`);
    },
  };
  function keyed(text: string): string {
    return createHmac('sha256', hmacKey).update(text).digest('base64url');
  }
}
