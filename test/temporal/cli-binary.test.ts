// The lookup order of the temporal CLI, checked with fake binaries in a scratch folder.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { findOrInstallTemporalCli, localCliPaths } from '../../src/temporal/cli-binary.js';

describe('findOrInstallTemporalCli', () => {
  let root: string;
  const quiet = () => {};

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'pcds-cli-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function fakeBinary(path: string): Promise<string> {
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, '#!/bin/sh\necho fake\n');
    await chmod(path, 0o755);
    return path;
  }

  it('prefers PCDS_TEMPORAL_CLI over PATH and the local install', async () => {
    const chosen = await fakeBinary(join(root, 'chosen', 'temporal'));
    await fakeBinary(join(root, 'onpath', 'temporal'));
    await fakeBinary(localCliPaths(root).venv);
    const env = { PCDS_TEMPORAL_CLI: chosen, PATH: join(root, 'onpath') };
    await expect(findOrInstallTemporalCli({ projectRoot: root, env, log: quiet })).resolves.toBe(
      chosen,
    );
  });

  it('names the variable when PCDS_TEMPORAL_CLI is not an executable file', async () => {
    const env = { PCDS_TEMPORAL_CLI: join(root, 'missing'), PATH: '' };
    await expect(
      findOrInstallTemporalCli({ projectRoot: root, env, log: quiet }),
    ).rejects.toMatchObject({
      code: 'TEMPORAL_CLI_ENV_INVALID',
      message: expect.stringContaining('PCDS_TEMPORAL_CLI'),
    });
  });

  it('uses temporal on PATH before the local install', async () => {
    const onPath = await fakeBinary(join(root, 'onpath', 'temporal'));
    await fakeBinary(localCliPaths(root).venv);
    const env = { PATH: `/nonexistent:${join(root, 'onpath')}` };
    await expect(findOrInstallTemporalCli({ projectRoot: root, env, log: quiet })).resolves.toBe(
      onPath,
    );
  });

  it('falls back to the project-local install, then to the go-built one', async () => {
    const env = { PATH: '' };
    const goBin = await fakeBinary(localCliPaths(root).goBin);
    await expect(findOrInstallTemporalCli({ projectRoot: root, env, log: quiet })).resolves.toBe(
      goBin,
    );
    const venv = await fakeBinary(localCliPaths(root).venv);
    await expect(findOrInstallTemporalCli({ projectRoot: root, env, log: quiet })).resolves.toBe(
      venv,
    );
  });

  it('explains the fix when nothing is found and installing is off', async () => {
    await expect(
      findOrInstallTemporalCli({
        projectRoot: root,
        env: { PATH: '' },
        install: false,
        log: quiet,
      }),
    ).rejects.toMatchObject({
      code: 'TEMPORAL_CLI_INSTALL_FAILED',
      message: expect.stringContaining('set PCDS_TEMPORAL_CLI'),
    });
  });
});
