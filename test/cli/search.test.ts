// `pcds search export` as a child process against the emulator and a worker: the file is written
// with one numbered line per result, and a used id or a non-empty output is refused (exit 2).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { sharedCliEnv, STACK_FRAME, tempDir } from './cli-env.js';

const shared = sharedCliEnv();
const { pcds } = shared;

const dir = tempDir('search');
const exportId = `cli-export-${process.pid}-${Date.now().toString(36)}`;

it('exports up to --max results into the output file, one numbered line each', async () => {
  const output = join(dir, 'engineers.jsonl');
  const r = await pcds(
    'search',
    'export',
    '-q',
    'engineer',
    '--max',
    '12',
    '--page-size',
    '5',
    '-o',
    output,
    '--id',
    exportId,
  );
  expect(r.stderr).toContain('exported 12 rows in 3 pages');
  expect(r.code).toBe(0);
  expect(r.stdout).toBe(`export ${exportId}\n`);
  const rows = readFileSync(output, 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { row: number }).row);
  expect(rows).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
});

it('refuses a used id and a non-empty output with exit 2, naming the fix', async () => {
  const used = await pcds(
    'search',
    'export',
    '-q',
    'engineer',
    '--max',
    '5',
    '-o',
    join(dir, 'again.jsonl'),
    '--id',
    exportId,
  );
  expect(used.code).toBe(2);
  expect(used.stderr).toContain('export_exists');
  expect(used.stderr).not.toMatch(STACK_FRAME);

  const output = join(dir, 'kept.jsonl');
  writeFileSync(output, 'keep me\n');
  const exists = await pcds('search', 'export', '-q', 'engineer', '--max', '5', '-o', output);
  expect(exists.code).toBe(2);
  expect(exists.stderr).toContain('output_exists');
  expect(readFileSync(output, 'utf8')).toBe('keep me\n');
});
