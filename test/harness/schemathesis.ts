// Locates Schemathesis (the OpenAPI fuzzer) for the emulator's fuzz suite, installing a pinned
// copy from PyPI into the project's .tools folder when none is there, the way the temporal CLI is
// installed (this machine reaches package registries only). PCDS_SCHEMATHESIS_CLI overrides it.
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../src/temporal/cli-binary.js';

const run = promisify(execFile);

export const SCHEMATHESIS_VERSION = '4.32.5';

const executable = (path: string) =>
  access(path, constants.X_OK).then(
    () => true,
    () => false,
  );

/** Absolute path of the `st` command: PCDS_SCHEMATHESIS_CLI, the local install, or a new one. */
export async function findOrInstallSchemathesis(root = projectRoot()): Promise<string> {
  const fromEnv = process.env.PCDS_SCHEMATHESIS_CLI;
  if (fromEnv) {
    if (!(await executable(fromEnv)))
      throw new Error(`PCDS_SCHEMATHESIS_CLI is set to ${fromEnv}, which is not executable.`);
    return fromEnv;
  }
  const venv = join(root, '.tools', 'schemathesis-venv');
  const st = join(venv, 'bin', 'st');
  if ((await executable(st)) && (await executable(join(venv, 'bin', 'python')))) {
    const { stdout } = await run(join(venv, 'bin', 'pip'), ['show', 'schemathesis']).catch(() => ({
      stdout: '',
    }));
    if (stdout.includes(`Version: ${SCHEMATHESIS_VERSION}`)) return st;
  }
  await mkdir(join(root, '.tools'), { recursive: true });
  await run('python3', ['-m', 'venv', venv]);
  await run(
    join(venv, 'bin', 'pip'),
    [
      'install',
      '--disable-pip-version-check',
      '--no-input',
      '--progress-bar',
      'off',
      `schemathesis==${SCHEMATHESIS_VERSION}`,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return st;
}
