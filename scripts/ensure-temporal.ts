// Makes sure a temporal CLI is available (installing the pinned one if needed) and prints its
// path, so CI pays the install once, visibly, before the tests start.
import { execFileSync } from 'node:child_process';
import { findOrInstallTemporalCli } from '../src/temporal/cli-binary.js';

try {
  const cliPath = await findOrInstallTemporalCli();
  const version = execFileSync(cliPath, ['--version'], { encoding: 'utf8' }).trim();
  process.stdout.write(`${cliPath}\n`);
  process.stderr.write(`${version}\n`);
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
