// Files that hold a secret (the payload key, the id secret, a TLS client key) are read only when
// they are their owner's alone, as ssh treats a private key: a secret that other users can read
// is not one any more, and saying nothing would let a deployment run on it for years.
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { ConfigError } from '../config-error.js';

/** Group and other permission bits: a secret file has none. */
const SHARED_BITS = 0o077;

/**
 * The content of the secret file `path` named by `setting`. Refused (a ConfigError naming the
 * setting, the path and the fix, never the content) when it cannot be read, is not a regular
 * file, or other users may read or write it. The mode is checked on the open file, not the path.
 */
export function readSecretFile(
  path: string,
  setting: string,
  /** How messages name the file: its path unless the setting's convention is not to show it. */
  shown = path,
): Buffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new ConfigError(
      `${setting}: cannot read ${shown} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new ConfigError(`${setting}: ${shown} is not a file`);
    if ((st.mode & SHARED_BITS) !== 0)
      throw new ConfigError(
        `${setting}: ${shown} is open to other users (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): ` +
          "a secret file must be its owner's only: chmod 600 it (on Kubernetes, mount the secret with defaultMode 0400)",
      );
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
