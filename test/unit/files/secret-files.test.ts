// Every file that holds a secret is refused when other users can read it, as a token file is:
// the id secret, the payload key and (test/unit/temporal/connection.test.ts) a TLS client key.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keyringFromSettings } from '../../../src/codec/settings.js';
import { ConfigError } from '../../../src/config-error.js';
import { loadConfig } from '../../../src/config.js';
import { readSecretFile } from '../../../src/files/secret-file.js';
import { idSecretFromSettings } from '../../../src/codec/idempotency.js';

const dir = mkdtempSync(join(tmpdir(), 'pcds-secret-files-'));
const ID_SECRET = randomBytes(32).toString('base64');
const KEY = randomBytes(32).toString('base64');

function secretFile(name: string, text: string, mode: number): string {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  chmodSync(path, mode);
  return path;
}

const messageOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('not refused');
};

const readers = {
  PCDS_ID_SECRET_FILE: (path: string) =>
    idSecretFromSettings(loadConfig({ PCDS_ID_SECRET_FILE: path })),
  PCDS_ENCRYPTION_KEY_FILE: (path: string) =>
    keyringFromSettings(loadConfig({ PCDS_ENCRYPTION_KEY_FILE: path })),
};
const contents = { PCDS_ID_SECRET_FILE: ID_SECRET, PCDS_ENCRYPTION_KEY_FILE: KEY };

describe('secret files', () => {
  for (const setting of ['PCDS_ID_SECRET_FILE', 'PCDS_ENCRYPTION_KEY_FILE'] as const) {
    it(`${setting}: refused when other users may read or write it, taken when it is 0600 or 0400`, () => {
      for (const mode of [0o644, 0o640, 0o604, 0o620]) {
        const path = secretFile(`${setting}-${mode.toString(8)}`, contents[setting], mode);
        const message = messageOf(() => readers[setting](path));
        expect(message).toBe(
          `${setting}: ${path} is open to other users (mode 0${mode.toString(8)}): a secret file must be its owner's only: chmod 600 it (on Kubernetes, mount the secret with defaultMode 0400)`,
        );
        expect(message).not.toContain(contents[setting]);
      }
      for (const mode of [0o600, 0o400]) {
        const path = secretFile(`${setting}-ok-${mode.toString(8)}`, contents[setting], mode);
        expect(readers[setting](path)).toBeDefined();
      }
    });
  }

  it('names a file that is missing or not a file, never its content', () => {
    expect(messageOf(() => readSecretFile(join(dir, 'none'), 'PCDS_ID_SECRET_FILE'))).toBe(
      `PCDS_ID_SECRET_FILE: cannot read ${join(dir, 'none')} (ENOENT)`,
    );
    const folder = join(dir, 'folder');
    mkdirSync(folder, { mode: 0o700 });
    expect(messageOf(() => readSecretFile(folder, 'PCDS_ENCRYPTION_KEY_FILE'))).toBe(
      `PCDS_ENCRYPTION_KEY_FILE: ${folder} is not a file`,
    );
  });
});
