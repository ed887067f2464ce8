// Payload encryption settings (PCDS_ENCRYPTION*), read with the rest of the configuration and
// turned here into the keyring the codec uses. Key values never appear in a message.
import { z } from 'zod';
import { ConfigError } from '../config-error.js';
import { readSecretFile } from '../files/secret-file.js';
import { KEY_BYTES, type EncryptionKeyring } from './aes-gcm-codec.js';

const keyId = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'key id: letters, digits, _ . - only');

export const encryptionEnvShape = {
  /** off: payloads go to Temporal in clear. Only for data that is not personal. */
  PCDS_ENCRYPTION: z.enum(['on', 'off']).default('on'),
  /** The current key: 32 bytes, base64. */
  PCDS_ENCRYPTION_KEY: z.string().optional(),
  /** A file holding the current key (base64), instead of PCDS_ENCRYPTION_KEY. */
  PCDS_ENCRYPTION_KEY_FILE: z.string().optional(),
  PCDS_ENCRYPTION_KEY_ID: keyId.default('k1'),
  /** Older keys that still decrypt: "id:base64key,id:base64key". */
  PCDS_ENCRYPTION_PREVIOUS_KEYS: z.string().optional(),
};

const encryptionEnvSchema = z.object(encryptionEnvShape);
export type EncryptionSettings = z.infer<typeof encryptionEnvSchema>;

export class EncryptionConfigError extends ConfigError {}

export const NO_KEY_MESSAGE =
  'no payload encryption key: set PCDS_ENCRYPTION_KEY (32 bytes, base64) or PCDS_ENCRYPTION_KEY_FILE, ' +
  'or PCDS_ENCRYPTION=off to send payloads (person data) to Temporal in clear';

/** The PCDS_ENCRYPTION* settings alone, for clients that take the rest as options. */
export function encryptionSettingsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): EncryptionSettings {
  const parsed = encryptionEnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new EncryptionConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  return parsed.data;
}

function keyFrom(text: string, name: string): Uint8Array {
  const trimmed = text.trim();
  const bytes = /^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)
    ? Buffer.from(trimmed, 'base64')
    : Buffer.alloc(0);
  if (bytes.length !== KEY_BYTES)
    throw new EncryptionConfigError(`${name} must be ${KEY_BYTES} bytes in base64`);
  return new Uint8Array(bytes);
}

/** The keyring, or undefined with PCDS_ENCRYPTION=off; refused when encryption is on without a key. */
export function keyringFromSettings(s: EncryptionSettings): EncryptionKeyring | undefined {
  if (s.PCDS_ENCRYPTION === 'off') return undefined;
  if (s.PCDS_ENCRYPTION_KEY && s.PCDS_ENCRYPTION_KEY_FILE)
    throw new EncryptionConfigError(
      'PCDS_ENCRYPTION_KEY and PCDS_ENCRYPTION_KEY_FILE are both set: keep one',
    );
  let current: Uint8Array;
  if (s.PCDS_ENCRYPTION_KEY) {
    current = keyFrom(s.PCDS_ENCRYPTION_KEY, 'PCDS_ENCRYPTION_KEY');
  } else if (s.PCDS_ENCRYPTION_KEY_FILE) {
    // Refused when unreadable or open to other users (a secret file is its owner's only).
    const text = readSecretFile(s.PCDS_ENCRYPTION_KEY_FILE, 'PCDS_ENCRYPTION_KEY_FILE');
    current = keyFrom(text.toString('utf8'), 'PCDS_ENCRYPTION_KEY_FILE');
  } else {
    throw new EncryptionConfigError(NO_KEY_MESSAGE);
  }
  const keys = new Map<string, Uint8Array>([[s.PCDS_ENCRYPTION_KEY_ID, current]]);
  for (const entry of (s.PCDS_ENCRYPTION_PREVIOUS_KEYS ?? '').split(',')) {
    if (!entry.trim()) continue;
    const colon = entry.indexOf(':');
    const id = colon > 0 ? entry.slice(0, colon).trim() : '';
    if (!keyId.safeParse(id).success)
      throw new EncryptionConfigError(
        'PCDS_ENCRYPTION_PREVIOUS_KEYS: each entry is id:base64key, the id letters, digits, _ . -',
      );
    if (keys.has(id)) throw new EncryptionConfigError(`encryption key id "${id}" is used twice`);
    keys.set(id, keyFrom(entry.slice(colon + 1), `PCDS_ENCRYPTION_PREVIOUS_KEYS key "${id}"`));
  }
  return { currentKeyId: s.PCDS_ENCRYPTION_KEY_ID, keys };
}
