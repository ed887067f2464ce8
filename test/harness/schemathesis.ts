// Locates Schemathesis (the OpenAPI fuzzer) for the emulator's fuzz suite: PCDS_SCHEMATHESIS_CLI,
// else a pinned copy from PyPI in .tools/schemathesis-venv, installed on first use.
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { pinnedVenv } from './python-venv.js';

export const SCHEMATHESIS_VERSION = '4.32.5';

/** Absolute path of the `st` command. */
export async function findOrInstallSchemathesis(): Promise<string> {
  const fromEnv = process.env.PCDS_SCHEMATHESIS_CLI;
  if (fromEnv) {
    const ok = await access(fromEnv, constants.X_OK).then(
      () => true,
      () => false,
    );
    if (!ok)
      throw new Error(`PCDS_SCHEMATHESIS_CLI is set to ${fromEnv}, which is not executable.`);
    return fromEnv;
  }
  return join(
    await pinnedVenv('schemathesis-venv', 'schemathesis', SCHEMATHESIS_VERSION),
    'bin',
    'st',
  );
}
