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

describe('a column map is no oracle of the header (by role)', () => {
  const csv = (name: string, header: string) => {
    const path = join(dir, name);
    writeFileSync(
      path,
      `${header}\n${header
        .split(',')
        .map((_, i) => (i === 0 ? 'ada@example.com' : 'x'))
        .join(',')}\n`,
    );
    return path;
  };
  const secret = csv('secret-header.csv', 'email,Salary Band,Notes');
  const plain = csv('plain-header.csv', 'email,name');
  const fits = csv('fits-header.csv', 'email,Full Name');
  const refusedWith = async (input: string, map: string, filesByRole: boolean) => {
    const err = await prepareBatch({
      input,
      output: join(dir, 'mapped.jsonl'),
      map,
      ...(filesByRole ? { filesByRole } : {}),
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BatchSetupError);
    return (err as BatchSetupError).message;
  };

  it('answers a guess that is in the header and one that is not the same way', async () => {
    const answers = [
      // Salary Band is in the header (Notes is no parameter: the header does not fit).
      await refusedWith(secret, 'name=Salary Band', true),
      await refusedWith(secret, 'name=Salary', true),
      await refusedWith(plain, 'name=Salary Band', true),
      await refusedWith(plain, 'email=name', true),
    ];
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).toMatch(/^the input's header does not fit person_enrichment with this map/);
    expect(answers[0]).not.toMatch(/Salary|column \d/);
    // Without a map, a header that does not fit gets the same words, less the map.
    expect(await refusedWith(secret, '', true)).toBe(answers[0].replace(' with this map', ''));
    // A map that fits is taken.
    await expect(
      prepareBatch({
        input: fits,
        output: join(dir, 'fits.jsonl'),
        map: 'name=Full Name',
        filesByRole: true,
      }),
    ).resolves.toBeDefined();
  });

  it('names what the map alone gets wrong, before the file is read', async () => {
    const missing = join(dir, 'no-such-file.csv');
    for (const byRole of [true, false]) {
      expect(await refusedWith(secret, 'nickname=Salary Band', byRole)).toBe(
        '--map: "nickname" is not a parameter of person_enrichment',
      );
      expect(await refusedWith(secret, 'callback_url=x', byRole)).toMatch(
        /^--map: callback_url is set by --webhooks/,
      );
    }
    expect(await refusedWith(missing, 'nickname=x', true)).toMatch(/^cannot read the input file/);
  });

  it('the CLI, whose user reads the file, is told which column', async () => {
    expect(await refusedWith(secret, 'name=Salary', false)).toMatch(
      /--map: column "Salary" is not in the input's header/,
    );
  });
});
