// Workflow ids from idempotency keys, and the fingerprint of the request a key was first used
// for: both keyed HMAC-SHA256 with the id secret (PCDS_ID_SECRET), so nobody without it can
// derive another caller's id from a key they guess (an email, an order number) or learn a
// parameter from a fingerprint.
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { ConfigError } from '../config-error.js';
import { readSecretFile } from '../files/secret-file.js';

/** At least 32 characters: `openssl rand -base64 32` gives 44; the dev secret file is made so. */
export const MIN_ID_SECRET_LENGTH = 32;

export const idSecretEnvShape = {
  /** The secret of workflow ids made from idempotency keys (and of request fingerprints). */
  PCDS_ID_SECRET: z
    .string()
    .min(MIN_ID_SECRET_LENGTH, `PCDS_ID_SECRET must be at least ${MIN_ID_SECRET_LENGTH} characters`)
    .optional(),
  /** A file holding it instead (`pcds dev` makes `<PCDS_DATA_DIR>/id-secret`). */
  PCDS_ID_SECRET_FILE: z.string().min(1).optional(),
};

const idSecretEnvSchema = z.object(idSecretEnvShape);
export type IdSecretSettings = z.infer<typeof idSecretEnvSchema>;

export class IdSecretConfigError extends ConfigError {}

/** The secret as a byte key. A value type of its own, so it is never passed where text goes. */
export interface IdSecret {
  readonly key: Buffer;
}

/**
 * The configured id secret, or undefined when none is set (idempotent starts are then refused
 * with id_secret_missing). A short secret or an unreadable file is refused at once.
 */
export function idSecretFromSettings(s: IdSecretSettings): IdSecret | undefined {
  if (s.PCDS_ID_SECRET && s.PCDS_ID_SECRET_FILE)
    throw new IdSecretConfigError('PCDS_ID_SECRET and PCDS_ID_SECRET_FILE are both set: keep one');
  let text: string;
  let name: string;
  if (s.PCDS_ID_SECRET !== undefined) {
    text = s.PCDS_ID_SECRET;
    name = 'PCDS_ID_SECRET';
  } else if (s.PCDS_ID_SECRET_FILE) {
    name = 'PCDS_ID_SECRET_FILE';
    // Refused when unreadable or open to other users (a secret file is its owner's only).
    text = readSecretFile(s.PCDS_ID_SECRET_FILE, name).toString('utf8').trim();
  } else {
    return undefined;
  }
  // Never echo the value: it is a secret.
  if (text.length < MIN_ID_SECRET_LENGTH)
    throw new IdSecretConfigError(`${name} must hold at least ${MIN_ID_SECRET_LENGTH} characters`);
  return { key: Buffer.from(text, 'utf8') };
}

/** The same, from PCDS_ID_SECRET* in the environment (for clients that take no Config). */
export function idSecretFromEnv(env: NodeJS.ProcessEnv = process.env): IdSecret | undefined {
  const parsed = idSecretEnvSchema.safeParse(env);
  if (!parsed.success) {
    // Never echo the value: it is a secret.
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new IdSecretConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  return idSecretFromSettings(parsed.data);
}

/** Domain-separated HMACs: the id and the fingerprint of the same text never coincide. */
const hmac = (secret: IdSecret, domain: string, text: string) =>
  createHmac('sha256', secret.key).update(`${domain}\0${text}`).digest('hex');

/** 128 bits of HMAC-SHA256 of the key: the part of a workflow id that stands for it. */
export function idempotencyDigest(secret: IdSecret, idempotencyKey: string): string {
  return hmac(secret, 'pcds-idempotency-key', idempotencyKey).slice(0, 32);
}

/** JSON with object keys sorted at every depth: one text for one request, however it was built. */
function canonicalJson(value: unknown): string {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v !== null && typeof v === 'object')
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
      );
    return v;
  };
  return JSON.stringify(sorted(value));
}

/**
 * What a request asked for (the endpoint and its validated parameters), as a keyed HMAC: stored
 * with the workflow started under an idempotency key, compared when the key comes back.
 */
export function requestFingerprint(secret: IdSecret, endpoint: string, request: unknown): string {
  return hmac(secret, 'pcds-request-fingerprint', canonicalJson({ endpoint, request }));
}

/** The memo field that holds a workflow's request fingerprint. */
export const FINGERPRINT_MEMO = 'pcdsRequestFingerprint';
