// The development key and id secret: generated once into the data folder (readable by its owner
// only), so `pcds dev` and the demo run encrypted, with keyed ids, without anyone handling a key.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { KEY_BYTES } from './aes-gcm-codec.js';

export const DEV_KEY_FILE_NAME = 'encryption-key';
export const DEV_ID_SECRET_FILE_NAME = 'id-secret';

/** Path of `<dataDir>/encryption-key`, created (mode 0600) when absent; an existing key is kept. */
export function ensureDevEncryptionKey(dataDir: string): string {
  return ensureKeyFile(join(dataDir, DEV_KEY_FILE_NAME));
}

/** Path of `<dataDir>/id-secret` (PCDS_ID_SECRET_FILE), made like the key. */
export function ensureDevIdSecret(dataDir: string): string {
  return ensureKeyFile(join(dataDir, DEV_ID_SECRET_FILE_NAME));
}

/**
 * Creates a file holding a random 32-byte key in base64 (mode 0600) at `path` unless one exists,
 * and returns the path. The create is exclusive: processes that race all end up with the same key.
 */
export function ensureKeyFile(path: string): string {
  // The data folder it may make holds keys and results: its owner's only.
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    writeFileSync(path, randomBytes(KEY_BYTES).toString('base64') + '\n', {
      flag: 'wx',
      mode: 0o600,
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Whoever made it, it holds a key: only its owner reads it.
    chmodSync(path, 0o600);
  }
  return path;
}
