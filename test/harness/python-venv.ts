// Python tools for the test suites (Schemathesis, the MCP Python SDK): each pinned PyPI package in
// its own venv under the project's .tools folder, installed on first use the way the temporal CLI
// is (this machine reaches package registries only; Python 3 is a stated prerequisite).
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../src/temporal/cli-binary.js';

const run = promisify(execFile);

const executable = (path: string) =>
  access(path, constants.X_OK).then(
    () => true,
    () => false,
  );

/** The venv folder holding `pkg==version`, created and installed when absent or other. */
export async function pinnedVenv(
  venvName: string,
  pkg: string,
  version: string,
  root = projectRoot(),
): Promise<string> {
  const venv = join(root, '.tools', venvName);
  const pip = join(venv, 'bin', 'pip');
  if (await executable(pip)) {
    const { stdout } = await run(pip, ['show', pkg]).catch(() => ({ stdout: '' }));
    if (stdout.includes(`Version: ${version}`)) return venv;
  }
  await mkdir(join(root, '.tools'), { recursive: true });
  await run('python3', ['-m', 'venv', venv]);
  await run(
    pip,
    [
      'install',
      '--disable-pip-version-check',
      '--no-input',
      '--progress-bar',
      'off',
      `${pkg}==${version}`,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  return venv;
}
