// The file root of `pcds mcp` on a real file system: paths resolve inside it after `..` and
// symlinks or are refused with one message whether the file exists or not; outputs are claimed
// without ever opening a file the tool did not create.
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PcdsUsageError } from '../../../src/client-errors.js';
import {
  callerFilesDir,
  claimOutput,
  FileRoot,
  fileRootDir,
  OUTSIDE_FILE_ROOT,
  writtenFilesOf,
} from '../../../src/mcp-server/file-root.js';
import { withShownPaths } from '../../../src/mcp-server/shown-paths.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'pcds-file-root-')));
const rootDir = join(base, 'root');
const outsideDir = join(base, 'outside');
mkdirSync(outsideDir);
const secret = join(outsideDir, 'secret.csv');
writeFileSync(secret, 'AKIA,wJal\n');
const files = new FileRoot(rootDir);

async function refusal(p: Promise<unknown>): Promise<PcdsUsageError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PcdsUsageError);
  return err as PcdsUsageError;
}

describe('the file root of pcds mcp', () => {
  it('is PCDS_MCP_FILES, else <PCDS_DATA_DIR>/files, made 0700 on first use', async () => {
    expect(fileRootDir({ PCDS_MCP_FILES: '/srv/pcds-files', PCDS_DATA_DIR: '/x' })).toBe(
      '/srv/pcds-files',
    );
    expect(fileRootDir({ PCDS_DATA_DIR: '/var/pcds' })).toBe('/var/pcds/files');
    expect(fileRootDir({})).toBe(join(process.cwd(), '.data', 'files'));
    expect(await files.resolve('a.csv', 'input')).toBe(join(rootDir, 'a.csv'));
    expect(statSync(rootDir).mode & 0o777).toBe(0o700);
  });

  it('resolves relative paths against the root and takes absolute paths inside it', async () => {
    mkdirSync(join(rootDir, 'in'), { recursive: true });
    expect(await files.resolve('in/../in/people.csv', 'input')).toBe(
      join(rootDir, 'in', 'people.csv'),
    );
    expect(await files.resolve(join(rootDir, 'in', 'x.jsonl'), 'output')).toBe(
      join(rootDir, 'in', 'x.jsonl'),
    );
    // A folder not made yet resolves through the part that exists.
    expect(await files.resolve('new/sub/out.jsonl', 'output')).toBe(
      join(rootDir, 'new', 'sub', 'out.jsonl'),
    );
  });

  it('refuses `..` out of the root, absolute paths outside it and the root itself, with one message whether the file exists or not', async () => {
    const messages = new Set<string>();
    for (const p of [
      '../outside/secret.csv',
      '../outside/missing.csv',
      secret,
      join(outsideDir, 'missing.csv'),
      '/etc/passwd',
      '/etc/no-such-file',
      `${rootDir}/../outside/secret.csv`,
      '.',
      rootDir,
      'a\0b',
    ]) {
      const err = await refusal(files.resolve(p, 'input'));
      expect(err.code).toBe('path_not_allowed');
      messages.add(err.message);
    }
    expect([...messages]).toEqual([
      'input: not a path inside the file root of pcds mcp (PCDS_MCP_FILES): give a path relative to it',
    ]);
  });

  it('follows symlinks: a link in the root leading out is refused, one leading to a file in the root is taken as its target', async () => {
    symlinkSync(secret, join(rootDir, 'leak.csv'));
    symlinkSync(outsideDir, join(rootDir, 'outdir'));
    symlinkSync(join(outsideDir, 'not-yet'), join(rootDir, 'dangling.jsonl'));
    writeFileSync(join(rootDir, 'real.csv'), 'email\n');
    symlinkSync(join(rootDir, 'real.csv'), join(rootDir, 'alias.csv'));
    for (const p of ['leak.csv', 'outdir/secret.csv', 'outdir/new.jsonl', 'dangling.jsonl'])
      expect((await refusal(files.resolve(p, 'output'))).code).toBe('path_not_allowed');
    expect(await files.resolve('alias.csv', 'input')).toBe(join(rootDir, 'real.csv'));
  });

  it('claims a new output (0600) and refuses an existing one, even empty, unless overwrite; undo removes what it made', async () => {
    const out = await files.resolve('claims/out.jsonl', 'output');
    const undo = await files.claim([out], false);
    expect(statSync(out).size).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const again = await refusal(files.claim([out], false));
    expect(again.code).toBe('output_exists');
    await undo();
    expect(existsSync(out)).toBe(false);

    const kept = join(rootDir, 'claims', 'kept.jsonl');
    writeFileSync(kept, 'old line\n');
    expect((await refusal(files.claim([kept], false))).code).toBe('output_exists');
    expect(readFileSync(kept, 'utf8')).toBe('old line\n');
    // With overwrite the file is left to the launcher, which truncates it once its checks pass.
    await (
      await files.claim([kept], true)
    )();
    expect(readFileSync(kept, 'utf8')).toBe('old line\n');
  });

  it('never writes through a link: a claim finds it there, and overwrite refuses one leading out', async () => {
    const link = join(rootDir, 'claims', 'through.jsonl');
    symlinkSync(join(outsideDir, 'created-through-link.jsonl'), link);
    expect((await refusal(files.claim([link], false))).code).toBe('output_exists');
    expect((await refusal(files.claim([link], true))).code).toBe('path_not_allowed');
    expect(existsSync(join(outsideDir, 'created-through-link.jsonl'))).toBe(false);
  });

  it('claims what a batch writes beside its output: the CSV stream and the summary, and checks the summary temporary file', async () => {
    expect(writtenFilesOf('/r/out.csv')).toEqual({
      claimed: ['/r/out.csv', '/r/out.csv.jsonl', '/r/out.csv.summary.json'],
      checked: ['/r/out.csv.summary.json.tmp'],
    });
    mkdirSync(join(rootDir, 'side'));
    symlinkSync(join(outsideDir, 'x'), join(rootDir, 'side', 'r.jsonl.summary.json.tmp'));
    expect((await refusal(claimOutput(files, 'side/r.jsonl', false))).code).toBe(
      'path_not_allowed',
    );
    writeFileSync(join(rootDir, 'side', 'b.csv.jsonl'), 'stream of an earlier batch\n');
    expect((await refusal(claimOutput(files, 'side/b.csv', false))).code).toBe('output_exists');
    // A refused claim leaves nothing behind.
    expect(existsSync(join(rootDir, 'side', 'b.csv'))).toBe(false);
    const { output, undo } = await claimOutput(files, 'side/c.csv', false);
    expect(output).toBe(join(rootDir, 'side', 'c.csv'));
    expect(existsSync(join(rootDir, 'side', 'c.csv.summary.json'))).toBe(true);
    await undo();
    expect(existsSync(join(rootDir, 'side', 'c.csv.jsonl'))).toBe(false);
  });
});

describe('a search export’s output', () => {
  it('must end in .jsonl, refused before anything is claimed; it claims the output and its summary only', async () => {
    const err = await refusal(claimOutput(files, 'exports/x.csv', false, 'export'));
    expect(err.code).toBe('output_not_jsonl');
    for (const f of ['x.csv', 'x.csv.jsonl', 'x.csv.summary.json'])
      expect(existsSync(join(rootDir, 'exports', f))).toBe(false);
    expect(writtenFilesOf('/r/x.jsonl', 'export')).toEqual({
      claimed: ['/r/x.jsonl', '/r/x.jsonl.summary.json'],
      checked: ['/r/x.jsonl.summary.json.tmp'],
    });
    const { output, undo } = await claimOutput(files, 'exports/x.JSONL', false, 'export');
    expect(output).toBe(join(rootDir, 'exports', 'x.JSONL'));
    await undo();
    // A path out of the root is refused as such first, whatever its name.
    expect((await refusal(claimOutput(files, '../outside/v.json', true, 'export'))).code).toBe(
      'path_not_allowed',
    );
  });
});

describe('callerFilesDir', () => {
  const token = 'x'.repeat(32);
  const two = [
    { id: 'alice', token },
    { id: 'bob', token: `${token}b` },
  ];

  it('keeps the root itself for the operator’s lone `default` token only', () => {
    expect(callerFilesDir('/r', [{ id: 'default', token }], { tokenId: 'default' })).toBe('/r');
    expect(callerFilesDir('/r', [{ id: 'ci', token }], { tokenId: 'ci' })).toBe('/r/ci');
    expect(callerFilesDir('/r', two, { tokenId: 'bob' })).toBe('/r/bob');
  });

  it('with several tokens, one caller can neither overwrite, probe nor read another’s file', async () => {
    const shared = join(base, 'shared');
    const alice = new FileRoot(callerFilesDir(shared, two, { tokenId: 'alice' }));
    const bob = new FileRoot(callerFilesDir(shared, two, { tokenId: 'bob' }));
    const { output } = await claimOutput(alice, 'alice-results.jsonl', false);
    writeFileSync(output, '{"row":1}\n');
    expect(statSync(join(shared, 'alice')).mode & 0o777).toBe(0o700);

    // The same relative name is bob's own file, and overwriting it leaves alice's alone.
    const mine = await claimOutput(bob, 'alice-results.jsonl', true);
    expect(mine.output).toBe(join(shared, 'bob', 'alice-results.jsonl'));
    writeFileSync(mine.output, '');
    expect(readFileSync(output, 'utf8')).toBe('{"row":1}\n');
    // Climbing out or naming her folder gets the one refusal, whether the file exists or not.
    for (const path of ['../alice/alice-results.jsonl', '../alice/none.jsonl', output])
      expect((await refusal(bob.resolve(path, 'input'))).code).toBe('path_not_allowed');
    expect((await refusal(claimOutput(bob, '../alice/alice-results.jsonl', true))).code).toBe(
      'path_not_allowed',
    );
  });
});

describe('files as answers show them', () => {
  it('names files relative to the root, and a file elsewhere by no path at all', async () => {
    const files = new FileRoot(join(base, 'shown-root'));
    const real = await files.resolve('runs/out.csv', 'output');
    const shown = await withShownPaths(
      {
        batchId: 'b1',
        output: `${real}.jsonl`,
        csvOutput: real,
        source: { path: secret, format: 'csv' },
        csv: { path: real, written: 3 },
        csvError: `the CSV could not be written: EACCES: permission denied, open '${real}'`,
        found: 3,
      },
      files,
    );
    expect(shown).toEqual({
      batchId: 'b1',
      output: join('runs', 'out.csv.jsonl'),
      csvOutput: join('runs', 'out.csv'),
      source: { path: OUTSIDE_FILE_ROOT, format: 'csv' },
      csv: { path: join('runs', 'out.csv'), written: 3 },
      csvError: 'the CSV could not be written (EACCES)',
      found: 3,
    });
    expect(JSON.stringify(shown)).not.toContain(base);
    // Anything but a document is left as it is.
    expect(await withShownPaths(undefined, files)).toBeUndefined();
  });
});
