// What a `pcds mcp` tool error says: the project's own errors as they are, any other error (a
// Node file error names its path) by its errno code alone; batch files named by role, not path.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchSetupError, prepareBatch } from '../../../src/client/batch-launch.js';
import { PcdsUsageError } from '../../../src/client-errors.js';
import { TemporalUnreachableError } from '../../../src/cli/temporal-connection.js';
import { answer } from '../../../src/mcp-server/answers.js';

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'pcds-mcp-answers-')));
const errorOf = async (work: () => Promise<unknown>) => {
  const r = await answer(work);
  expect(r.isError).toBe(true);
  return (r.structuredContent as { error: { code: string; message: string } }).error;
};

describe('answer', () => {
  it('gives a file error by its errno code, never its path', async () => {
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    const error = await errorOf(() => open(sub, 'r+'));
    expect(error).toEqual({ code: 'io_error', message: 'the file operation failed (EISDIR)' });
  });

  it('passes on the project’s own errors with their code', async () => {
    expect(
      await errorOf(() => Promise.reject(new PcdsUsageError('output_exists', 'x message'))),
    ).toEqual({
      code: 'output_exists',
      message: 'x message',
    });
    const unreachable = new TemporalUnreachableError('cannot reach Temporal');
    expect((await errorOf(() => Promise.reject(unreachable))).code).toBe('temporal_unreachable');
  });

  it('gives any other error, even one with a code, as a generic failure', async () => {
    const foreign = Object.assign(new Error(`failed at ${dir}/secret.csv`), { code: 'custom' });
    expect(await errorOf(() => Promise.reject(foreign))).toEqual({
      code: 'internal_error',
      message: 'The tool failed unexpectedly.',
    });
  });
});

describe('batch files named by role', () => {
  const output = join(dir, 'out.jsonl');
  const refusal = async (input: string, filesByRole?: boolean) => {
    const err = await prepareBatch({ input, output, ...(filesByRole ? { filesByRole } : {}) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BatchSetupError);
    return err as BatchSetupError;
  };

  it('by role: no path of the server in the message', async () => {
    const missing = join(dir, 'nofile.csv');
    const none = await refusal(missing, true);
    expect(none.message).toBe('cannot read the input file: no such file');
    const folder = join(dir, 'folder.csv');
    mkdirSync(folder);
    expect((await refusal(folder, true)).message).toBe('the input is not a file');
    const empty = join(dir, 'empty.csv');
    writeFileSync(empty, '');
    const emptyErr = await refusal(empty, true);
    expect(emptyErr.message).toBe('the input file: the file is empty (a CSV needs a header row)');
    const unnamed = join(dir, 'people.txt');
    writeFileSync(unnamed, 'email\n');
    expect((await refusal(unnamed, true)).message).toMatch(
      /^cannot tell the format of the input file/,
    );
    for (const err of [none, emptyErr]) expect(err.message).not.toContain(dir);
  });

  it('by default (the CLI) the path its user gave', async () => {
    const missing = join(dir, 'nofile.csv');
    expect((await refusal(missing)).message).toBe(
      `cannot read the input file ${missing}: no such file`,
    );
  });
});
