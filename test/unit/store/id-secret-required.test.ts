// The store is never opened without the id secret: its lookups and erasure subjects are keyed
// HMACs, and a plain hash of a normalised email would let anyone holding a copy of the database
// confirm a guessed address offline.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config-error.js';
import {
  createSealer,
  openStoreFromEnv,
  openStoreFromSettings,
  storeSealerFromSettings,
} from '../../../src/store/index.js';
import type { IdSecret } from '../../../src/codec/idempotency.js';

const key = randomBytes(32).toString('base64');

function settings(extra: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-id-secret-'));
  const path = join(dir, 'store.sqlite');
  return {
    path,
    s: {
      PCDS_ENCRYPTION: 'on' as const,
      PCDS_ENCRYPTION_KEY: key,
      PCDS_ENCRYPTION_KEY_ID: 'k1',
      PCDS_STORE_URL: `sqlite:${path}`,
      PCDS_DATA_DIR: dir,
      ...extra,
    },
  };
}

describe('the store needs the id secret', () => {
  it('refuses to open from settings or the environment without it, encryption on or off, and makes no file', async () => {
    for (const extra of [{}, { PCDS_ENCRYPTION: 'off' }] as Record<string, string>[]) {
      const { path, s } = settings(extra);
      await expect(openStoreFromSettings(s as never)).rejects.toThrow(ConfigError);
      await expect(openStoreFromSettings(s as never)).rejects.toThrow(
        /id secret.*never with a plain hash: set PCDS_ID_SECRET/,
      );
      await expect(openStoreFromEnv(s)).rejects.toThrow(/PCDS_ID_SECRET_FILE/);
      expect(() => storeSealerFromSettings(s as never)).toThrow(/PCDS_ID_SECRET/);
      expect(existsSync(path)).toBe(false);
    }
  });

  it('opens with it, and two secrets key the same email differently', async () => {
    const { s } = settings({ PCDS_ID_SECRET: 'a'.repeat(32) });
    const store = await openStoreFromSettings(s);
    await store.close();
    const one = createSealer(undefined, { key: Buffer.from('a'.repeat(32)) });
    const two = createSealer(undefined, { key: Buffer.from('b'.repeat(32)) });
    const params = { email: 'ada@example.com' };
    expect(one.lookup('person_enrichment', params)).not.toBe(
      two.lookup('person_enrichment', params),
    );
    expect(one.subject('ada@example.com')).not.toBe(two.subject('ada@example.com'));
  });

  it('a sealer without a secret is refused, never an unkeyed hash', () => {
    expect(() => createSealer(undefined, undefined as unknown as IdSecret)).toThrow(
      /needs the id secret/,
    );
  });
});
