// `pcds ... | head -1`: a reader that closes the pipe early ends the command quietly, with no
// stack trace, through a real shell pipe.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { childEnv, STACK_FRAME } from './cli-env.js';

const run = promisify(execFile);
const PCDS = join(projectRoot(), 'bin', 'pcds.mjs');

it('rule: output into a pipe closed early (EPIPE) exits 0 without a stack trace', async () => {
  // `true` exits before pcds has started, so every write of pcds meets a closed pipe.
  for (const args of ['call --help', 'call person_search --help', 'batch --help']) {
    const script = `"${process.execPath}" "${PCDS}" ${args} | true; echo "pcds exit $\{PIPESTATUS[0]}" >&2`;
    const r = await run('bash', ['-c', script], { env: childEnv({}) });
    expect(r.stderr, args).not.toMatch(STACK_FRAME);
    expect(r.stderr, args).not.toContain('EPIPE');
    expect(r.stderr.trim(), args).toBe('pcds exit 0');
  }
});
