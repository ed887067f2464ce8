// The README's way to get `pcds` outside the clone: a global install of the clone, run from
// another folder (into a scratch prefix, offline: it links the clone, nothing is downloaded).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { tempDir } from '../batch/fixtures.js';

const run = promisify(execFile);
const root = projectRoot();

it('rule: the README installs the command from the clone, and that command runs from any folder', async () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const documented = /^npm install -g (\/path\/to\/pcds-orchestrator)\b/m.exec(readme);
  expect(documented, 'the README says how to install pcds outside the clone').not.toBeNull();
  const prefix = tempDir('pcds-global');
  const elsewhere = tempDir('pcds-elsewhere');
  await run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--offline', '--ignore-scripts', '--no-audit', root],
    { cwd: elsewhere, timeout: 120_000 },
  );
  const { stdout } = await run(join(prefix, 'bin', 'pcds'), ['call', '--help'], {
    cwd: elsewhere,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });
  expect(stdout).toMatch(/^Usage: pcds call <endpoint>/);
  expect(stdout).toContain('person_search');
});
