// Ordered exports from files: one CSV row per input row in row order whatever the file order,
// the input's own columns first, rows with no line kept and reported, stray lines left out, a
// line being written not read, and a JSONL copy sorted or as it is.
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { exportBatchOutput } from '../../../src/batch-io/export.js';
import type { ResultLine } from '../../../src/batch/types.js';

const dir = mkdtempSync(join(tmpdir(), 'pcds-export-'));
let n = 0;
const file = (name: string, text: string) => {
  const path = join(dir, `${++n}-${name}`);
  writeFileSync(path, text);
  return path;
};
const jsonl = (lines: unknown[]) => lines.map((l) => JSON.stringify(l) + '\n').join('');
const readCsv = (path: string): string[][] => parse(readFileSync(path, 'utf8'));

// Lines in completion order, not row order; row 4 has none.
const lines: ResultLine[] = [
  { row: 3, key: { email: 'c@example.com' }, outcome: 'empty', requestId: 'r3' },
  {
    row: 1,
    key: { email: 'a@example.com' },
    outcome: 'found',
    requestId: 'r1',
    result: { full_name: 'Ann, "A"', social_profiles: { linkedin: { url: 'https://l/a' } } },
  },
  {
    row: 2,
    key: {},
    outcome: 'failed',
    code: 'invalid_row',
    message: 'email must be an email address',
  },
  {
    row: 5,
    key: { email: 'e@example.com' },
    outcome: 'found',
    result: { skills: ['x', 'y'], full_name: 'Émile\nNewline', extra: null },
  },
];
const csvInput = () =>
  file(
    'in.csv',
    'email, Full Name ,segment\n' +
      'a@example.com,Ann,"north, east"\n' +
      'not-an-email,Bob,south\n' +
      '\n' +
      'c@example.com,Cy,west\n' +
      'd@example.com,Di,"multi\nline"\n' +
      'e@example.com,Em,\n',
  );

describe('exportBatchOutput to CSV', () => {
  it('writes one row per input row in row order, input columns first, result flattened', async () => {
    const source = { path: csvInput(), format: 'csv' as const };
    const out = file('lines.jsonl', jsonl(lines));
    const target = join(dir, 'out.csv');
    const report = await exportBatchOutput({
      source,
      lines: out,
      target,
      format: 'csv',
      noLine: 'missing',
    });
    expect(report).toEqual({
      path: target,
      format: 'csv',
      sorted: true,
      inputRows: 5,
      written: 5,
      withoutLine: 1,
      firstWithoutLine: [4],
      strayLines: 0,
    });
    const [header, ...rows] = readCsv(target);
    // Result columns in the order of row 1's result, then row 5's new ones.
    expect(header).toEqual([
      'email',
      'Full Name',
      'segment',
      'outcome',
      'code',
      'message',
      'full_name',
      'social_profiles.linkedin.url',
      'skills',
      'extra',
    ]);
    expect(rows).toEqual([
      ['a@example.com', 'Ann', 'north, east', 'found', '', '', 'Ann, "A"', 'https://l/a', '', ''],
      [
        'not-an-email',
        'Bob',
        'south',
        'failed',
        'invalid_row',
        'email must be an email address',
        '',
        '',
        '',
        '',
      ],
      ['c@example.com', 'Cy', 'west', 'empty', '', '', '', '', '', ''],
      ['d@example.com', 'Di', 'multi\nline', 'missing', '', '', '', '', '', ''],
      ['e@example.com', 'Em', '', 'found', '', '', 'Émile\nNewline', '', '["x","y"]', ''],
    ]);
    // No temporary file is left beside the target.
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('gives the same file whatever the order of the lines, and again on a rerun', async () => {
    const source = { path: csvInput(), format: 'csv' as const };
    const a = join(dir, 'a.csv');
    const b = join(dir, 'b.csv');
    await exportBatchOutput({
      source,
      lines: file('fwd.jsonl', jsonl(lines)),
      target: a,
      format: 'csv',
      noLine: 'missing',
    });
    const first = readFileSync(a, 'utf8');
    await exportBatchOutput({
      source,
      lines: file('rev.jsonl', jsonl([...lines].reverse())),
      target: b,
      format: 'csv',
      noLine: 'missing',
    });
    expect(readFileSync(b, 'utf8')).toBe(first);
    await exportBatchOutput({
      source,
      lines: file('again.jsonl', jsonl(lines)),
      target: a,
      format: 'csv',
      noLine: 'missing',
    });
    expect(readFileSync(a, 'utf8')).toBe(first);
  });

  it("takes a JSONL input's keys in first-seen order as its columns", async () => {
    const source = {
      path: file(
        'in.jsonl',
        jsonl([{ email: 'a@example.com' }, 'not an object', { phone: '+1 555', email: 'c@x.io' }]) +
          '\n' +
          jsonl([{ email: 'd@x.io', tags: ['a', 'b'], n: 3 }]),
      ),
      format: 'jsonl' as const,
    };
    const target = join(dir, 'from-jsonl.csv');
    const report = await exportBatchOutput({
      source,
      lines: file('l.jsonl', jsonl([{ row: 2, key: {}, outcome: 'failed', code: 'invalid_row' }])),
      target,
      format: 'csv',
      noLine: 'pending',
    });
    expect(report).toMatchObject({ inputRows: 4, written: 4, withoutLine: 3 });
    expect(report.firstWithoutLine).toEqual([1, 3, 4]);
    expect(readCsv(target)).toEqual([
      ['email', 'phone', 'tags', 'n', 'outcome', 'code', 'message'],
      ['a@example.com', '', '', '', 'pending', '', ''],
      ['', '', '', '', 'failed', 'invalid_row', ''],
      // A cell starting with + is neutralised like a formula (safe-files.test.ts).
      ['c@x.io', "'+1 555", '', '', 'pending', '', ''],
      ['d@x.io', '', '["a","b"]', '3', 'pending', '', ''],
    ]);
  });

  it('leaves out and counts lines of rows the input does not have, or a row twice', async () => {
    const source = { path: csvInput(), format: 'csv' as const };
    const target = join(dir, 'stray.csv');
    const out = file(
      'stray.jsonl',
      jsonl([...lines, { row: 9, key: {}, outcome: 'empty' }, { ...lines[0], outcome: 'found' }]) +
        'not json\n',
    );
    const report = await exportBatchOutput({
      source,
      lines: out,
      target,
      format: 'csv',
      noLine: 'missing',
    });
    expect(report).toMatchObject({ inputRows: 5, written: 5, strayLines: 3 });
    const rows = readCsv(target).slice(1);
    expect(rows.map((r) => r[3])).toEqual(['found', 'failed', 'empty', 'missing', 'found']);
  });

  it('ignores a line still being written and an output not yet created', async () => {
    const source = { path: csvInput(), format: 'csv' as const };
    const out = file('partial.jsonl', jsonl(lines.slice(0, 2)));
    appendFileSync(out, '{"row":2,"key":{},"outc');
    const target = join(dir, 'partial.csv');
    const report = await exportBatchOutput({
      source,
      lines: out,
      target,
      format: 'csv',
      noLine: 'pending',
    });
    expect(report).toMatchObject({ written: 5, withoutLine: 3, firstWithoutLine: [2, 4, 5] });
    expect(readCsv(target)[2][3]).toBe('pending');

    const none = await exportBatchOutput({
      source,
      lines: join(dir, 'no-such.jsonl'),
      target: join(dir, 'none.csv'),
      format: 'csv',
      noLine: 'pending',
    });
    expect(none).toMatchObject({ written: 5, withoutLine: 5, strayLines: 0 });
    expect(readCsv(join(dir, 'none.csv'))[0]).toEqual([
      'email',
      'Full Name',
      'segment',
      'outcome',
      'code',
      'message',
    ]);
  });

  it('fails on a missing input without leaving a file', async () => {
    const target = join(dir, 'never.csv');
    await expect(
      exportBatchOutput({
        source: { path: join(dir, 'no-input.csv'), format: 'csv' },
        lines: file('x.jsonl', jsonl(lines)),
        target,
        format: 'csv',
        noLine: 'missing',
      }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
    expect(existsSync(target)).toBe(false);
  });
});

describe('exportBatchOutput to JSONL', () => {
  const rowsOf = (path: string) =>
    readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as ResultLine).row);

  it('sorted: the lines in row order, byte for byte, rows without a line reported', async () => {
    const source = { path: csvInput(), format: 'csv' as const };
    const out = file('s.jsonl', jsonl([...lines, { row: 8, key: {}, outcome: 'empty' }]));
    const target = join(dir, 'sorted.jsonl');
    const report = await exportBatchOutput({
      source,
      lines: out,
      target,
      format: 'jsonl',
      sorted: true,
      noLine: 'missing',
    });
    expect(report).toMatchObject({
      sorted: true,
      inputRows: 5,
      written: 4,
      withoutLine: 1,
      firstWithoutLine: [4],
      strayLines: 1,
    });
    expect(rowsOf(target)).toEqual([1, 2, 3, 5]);
    const original = new Set(readFileSync(out, 'utf8').split('\n'));
    for (const l of readFileSync(target, 'utf8').split('\n').filter(Boolean))
      expect(original.has(l)).toBe(true);
  });

  it('unsorted: a copy of the complete lines in file order', async () => {
    const source = { path: csvInput(), format: 'csv' as const };
    const out = file('u.jsonl', jsonl(lines));
    appendFileSync(out, '{"row":4,');
    const target = join(dir, 'copy.jsonl');
    const report = await exportBatchOutput({
      source,
      lines: out,
      target,
      format: 'jsonl',
      noLine: 'pending',
    });
    expect(report).toMatchObject({ sorted: false, written: 4, withoutLine: 1 });
    expect(readFileSync(target, 'utf8')).toBe(jsonl(lines));
  });
});
