// Exports from the store: the same CSV as the file export gives for the same rows and results,
// JSONL lines in row order, a typed Parquet file read back by another reader, and results paged
// in row or completion order.
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'csv-parse/sync';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { exportBatchOutput } from '../../../src/batch-io/export.js';
import { appendResultLines } from '../../../src/batch-io/result-writer.js';
import type { ResultLine } from '../../../src/batch/types.js';
import { BatchStore } from '../../../src/store/index.js';
import { batchResultPages, batchResults, exportBatchFromStore } from '../../../src/store/export.js';
import { tempStore } from './temp-store.js';
import {
  couldRunAsFormula,
  FORMULA_PAYLOADS,
  PLAIN_CELLS,
  RESULT_ONLY_PAYLOADS,
} from '../batch/formula-payloads.js';

async function storeIn(dir: string): Promise<BatchStore> {
  const store = await tempStore(dir);
  return new BatchStore(store);
}

const COLUMNS = ['email', 'name', 'notes'];
// The input as a file (one blank line: not a row) and as the loader stores it (row, cells).
const INPUT_CSV =
  'email,name,notes\n' +
  'ada@example.org,Ada,"=HYPERLINK(""http://x"")"\n' +
  'not-an-email,Bob,+1 555 0100\n' +
  '\n' +
  'ada@example.org,Ada again,"multi\nline, quoted"\n' +
  'cy@example.org,Cy,@cy\n' +
  'di@example.org,Di,-5\n' +
  'em@example.org,Em,\n' +
  'fay@example.org,Fay,plain\n';
const CSV_RECORDS: Record<string, string>[] = parse(INPUT_CSV, {
  columns: true,
  skip_empty_lines: true,
});
const ROWS = CSV_RECORDS.map((cells, i) => ({ row: i + 1, cells }));

// Results as the batch gives them, in completion order; row 4 has none, row 3 shares row 1's call.
const LEADERS: ResultLine[] = [
  {
    row: 5,
    key: { email: 'di@example.org' },
    outcome: 'found',
    requestId: 'req_5',
    result: { full_name: '-Di', age: 41.5, followers: 7, active: false, verified: 'yes' },
  },
  {
    row: 1,
    key: { email: 'ada@example.org' },
    outcome: 'found',
    requestId: 'req_1',
    result: {
      full_name: 'Ada, "A"',
      age: 36,
      followers: 120,
      active: true,
      verified: true,
      skills: ['math', 'engines'],
      social: { linkedin: { url: 'https://l/ada' } },
      title: '=cmd|x',
      nothing: null,
    },
  },
  {
    row: 2,
    key: {},
    outcome: 'failed',
    code: 'invalid_row',
    message: 'email: not an email address',
  },
];
const LATER: ResultLine[] = [
  { row: 3, key: { email: 'ada@example.org' }, outcome: 'found', duplicateOf: 1 },
  { row: 6, key: { email: 'em@example.org' }, outcome: 'empty', requestId: 'req_6' },
  {
    row: 7,
    key: { email: 'fay@example.org' },
    outcome: 'failed',
    code: 'timeout',
    message: 'the job did not finish',
  },
];

/** The same batch twice: as the files today's export reads, and in a store. */
async function fixture(opts: { results?: ResultLine[][] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-store-export-'));
  const input = join(dir, 'in.csv');
  writeFileSync(input, INPUT_CSV);
  const lines = join(dir, 'out.jsonl');
  const store = await storeIn(dir);
  await store.beginLoad('b1', 'person_enrichment', COLUMNS);
  await store.addRows(
    'b1',
    'person_enrichment',
    ROWS.map(({ row, cells }) =>
      row === 2
        ? { row, problem: 'email: not an email address', key: {}, cells }
        : { row, params: { email: cells.email }, key: { email: cells.email }, cells },
    ),
  );
  await store.finishLoad('b1', { blankLines: 1, dedupe: true });
  for (const batch of opts.results ?? [LEADERS, LATER]) {
    await appendResultLines(lines, batch);
    await store.writeResults('b1', batch);
    // Another millisecond: completion order is by the time a write landed.
    await sleep(5);
  }
  return { dir, input, lines, store };
}

const readCsv = (path: string): string[][] => parse(readFileSync(path, 'utf8'));

describe('exportBatchFromStore', () => {
  it('writes the same CSV as the file export, neutralised by default and raw on request', async () => {
    const f = await fixture();
    for (const rawCells of [false, true]) {
      const fromFiles = join(f.dir, `files-${rawCells}.csv`);
      const fromStore = join(f.dir, `store-${rawCells}.csv`);
      const old = await exportBatchOutput({
        source: { path: f.input, format: 'csv' },
        lines: f.lines,
        target: fromFiles,
        format: 'csv',
        noLine: 'pending',
        rawCells,
      });
      const report = await exportBatchFromStore(f.store, {
        batchId: 'b1',
        format: 'csv',
        target: fromStore,
        noLine: 'pending',
        rawCells,
        pageSize: 2,
      });
      expect(readFileSync(fromStore, 'utf8')).toBe(readFileSync(fromFiles, 'utf8'));
      expect(report).toEqual({ ...old, path: fromStore });
      expect(report).toMatchObject({
        inputRows: 7,
        written: 7,
        withoutLine: 1,
        firstWithoutLine: [4],
        strayLines: 0,
      });
      expect(statSync(fromStore).mode & 0o777).toBe(0o600);
    }
    const [header, ...rows] = readCsv(join(f.dir, 'store-false.csv'));
    expect(header.slice(0, 6)).toEqual([...COLUMNS, 'outcome', 'code', 'message']);
    const at = (name: string) => header.indexOf(name);
    // Formula-like cells are quoted; the raw file keeps them.
    expect(rows[0][at('notes')]).toBe(`'=HYPERLINK("http://x")`);
    expect(rows[0][at('title')]).toBe(`'=cmd|x`);
    expect(rows[4][at('full_name')]).toBe(`'-Di`);
    const raw = readCsv(join(f.dir, 'store-true.csv')).slice(1);
    expect(raw[0][at('notes')]).toBe('=HYPERLINK("http://x")');
    expect(raw[3][at('notes')]).toBe('@cy');
    // The duplicate row has its leader's result; the row with no result is pending.
    expect(raw[2][at('full_name')]).toBe('Ada, "A"');
    expect(raw[2][at('message')]).toBe('shares the call of row 1 (same parameters)');
    expect(raw[3][at('outcome')]).toBe('pending');
    expect(raw[1].slice(3, 6)).toEqual(['failed', 'invalid_row', 'email: not an email address']);
    expect(readdirSync(f.dir).filter((n) => n.endsWith('.tmp') || n.startsWith('.pcds'))).toEqual(
      [],
    );
  });

  it('writes the same CSV as the file export for a JSONL input', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-store-export-'));
    const objects = [
      { email: 'a@example.org', score: 3, tags: ['x'] },
      { email: 'b@example.org', extra: '=1+1' },
      { email: 'c@example.org', score: null },
    ];
    const input = join(dir, 'in.jsonl');
    writeFileSync(input, objects.map((o) => JSON.stringify(o) + '\n').join(''));
    const store = await storeIn(dir);
    await store.beginLoad('j1', 'person_enrichment', ['email', 'score', 'tags', 'extra']);
    await store.addRows(
      'j1',
      'person_enrichment',
      objects.map((cells, i) => ({
        row: i + 1,
        params: { email: cells.email },
        key: { email: cells.email },
        cells,
      })),
    );
    await store.finishLoad('j1', { blankLines: 0, dedupe: true });
    const results: ResultLine[] = [
      { row: 2, key: {}, outcome: 'found', requestId: 'r2', result: { n: 1 } },
      { row: 1, key: {}, outcome: 'empty', requestId: 'r1' },
    ];
    const lines = join(dir, 'out.jsonl');
    await appendResultLines(lines, results);
    await store.writeResults('j1', results);
    await exportBatchOutput({
      source: { path: input, format: 'jsonl' },
      lines,
      target: join(dir, 'files.csv'),
      format: 'csv',
      noLine: 'missing',
    });
    await exportBatchFromStore(store, {
      batchId: 'j1',
      format: 'csv',
      target: join(dir, 'store.csv'),
      noLine: 'missing',
    });
    expect(readFileSync(join(dir, 'store.csv'), 'utf8')).toBe(
      readFileSync(join(dir, 'files.csv'), 'utf8'),
    );
  });

  it('writes every cell a spreadsheet could run as text it shows: input cells, results and header', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-store-export-'));
    const store = await storeIn(dir);
    const payloads = [...FORMULA_PAYLOADS, ...RESULT_ONLY_PAYLOADS];
    const cells = [...payloads.map(([cell]) => cell), ...PLAIN_CELLS];
    const shown = [...payloads.map(([, s]) => s), ...PLAIN_CELLS];
    await store.beginLoad('f1', 'person_enrichment', ['email', '=note']);
    await store.addRows(
      'f1',
      'person_enrichment',
      cells.map((note, i) => {
        const email = `p${i}@example.org`;
        return { row: i + 1, params: { email }, key: { email }, cells: { email, '=note': note } };
      }),
    );
    await store.finishLoad('f1', { blankLines: 0, dedupe: true });
    await store.writeResults(
      'f1',
      cells.map((title, i) => ({
        row: i + 1,
        key: {},
        outcome: 'found' as const,
        requestId: `r${i}`,
        result: { title, [' =1+1']: 'x' },
      })),
    );
    const target = join(dir, 'safe.csv');
    await exportBatchFromStore(store, { batchId: 'f1', format: 'csv', target, noLine: 'missing' });
    const [header, ...rows] = readCsv(target);
    expect(header).toEqual(['email', "'=note", 'outcome', 'code', 'message', 'title', "' =1+1"]);
    expect(rows.map((r) => r[1])).toEqual(shown);
    expect(rows.map((r) => r[header.indexOf('title')])).toEqual(shown);
    expect([header, ...rows].flat().filter(couldRunAsFormula)).toEqual([]);
  });

  it('writes JSONL lines in row order, as the file export sorts them', async () => {
    const f = await fixture();
    const fromFiles = join(f.dir, 'files.jsonl');
    const fromStore = join(f.dir, 'store.jsonl');
    await exportBatchOutput({
      source: { path: f.input, format: 'csv' },
      lines: f.lines,
      target: fromFiles,
      format: 'jsonl',
      sorted: true,
      noLine: 'pending',
    });
    const report = await exportBatchFromStore(f.store, {
      batchId: 'b1',
      format: 'jsonl',
      target: fromStore,
      noLine: 'pending',
    });
    const parsed = (path: string) =>
      readFileSync(path, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as ResultLine);
    const got = parsed(fromStore);
    expect(got).toEqual(parsed(fromFiles));
    expect(got.map((l) => l.row)).toEqual([1, 2, 3, 5, 6, 7]);
    expect(got[2]).toEqual({
      row: 3,
      key: { email: 'ada@example.org' },
      outcome: 'found',
      message: 'shares the call of row 1 (same parameters)',
      requestId: 'req_1',
      result: LEADERS[1].result,
      duplicateOf: 1,
    });
    expect(report).toMatchObject({ format: 'jsonl', written: 6, withoutLine: 1, inputRows: 7 });
    expect(statSync(fromStore).mode & 0o777).toBe(0o600);
  });

  it('writes a typed Parquet file that another reader reads back as the CSV shows it', async () => {
    const f = await fixture();
    const csvPath = join(f.dir, 'raw.csv');
    const target = join(f.dir, 'out.parquet');
    await exportBatchFromStore(f.store, {
      batchId: 'b1',
      format: 'csv',
      target: csvPath,
      noLine: 'pending',
      rawCells: true,
    });
    const report = await exportBatchFromStore(f.store, {
      batchId: 'b1',
      format: 'parquet',
      target,
      noLine: 'pending',
      pageSize: 3,
    });
    expect(report).toMatchObject({ format: 'parquet', written: 7, withoutLine: 1 });
    expect(statSync(target).mode & 0o777).toBe(0o600);
    expect(readdirSync(f.dir).filter((n) => n.startsWith('.'))).toEqual([]);

    const file = await asyncBufferFromFile(target);
    const meta = await parquetMetadataAsync(file);
    const types = Object.fromEntries(
      meta.schema.slice(1).map((s) => [s.name, s.type as string | undefined]),
    );
    expect(types).toMatchObject({
      email: 'BYTE_ARRAY',
      row: 'INT32',
      outcome: 'BYTE_ARRAY',
      request_id: 'BYTE_ARRAY',
      duplicate_of: 'INT32',
      full_name: 'BYTE_ARRAY',
      age: 'DOUBLE',
      followers: 'INT64',
      active: 'BOOLEAN',
      verified: 'BYTE_ARRAY',
      skills: 'BYTE_ARRAY',
      'social.linkedin.url': 'BYTE_ARRAY',
      nothing: 'BYTE_ARRAY',
    });

    const rows = await parquetReadObjects({ file });
    const [header, ...cells] = readCsv(csvPath);
    expect(rows).toHaveLength(cells.length);
    // Every CSV column is in the Parquet file, its value the cell's text (null for an empty cell).
    expect(Object.keys(rows[0])).toEqual([
      ...COLUMNS,
      'row',
      'outcome',
      'code',
      'message',
      'request_id',
      'duplicate_of',
      ...header.slice(COLUMNS.length + 3),
    ]);
    rows.forEach((r, i) => {
      header.forEach((name, j) => {
        // Text, a number, a bigint (INT64) or a boolean: what the cell shows of it.
        const v = r[name] as string | number | bigint | boolean | null | undefined;
        const asCell = v === null || v === undefined ? '' : String(v);
        expect([i + 1, name, asCell]).toEqual([i + 1, name, cells[i][j]]);
      });
    });
    expect(rows.map((r) => r.row)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(rows.map((r) => r.duplicate_of)).toEqual([null, null, 1, null, null, null, null]);
    expect(rows.map((r) => r.request_id)).toEqual([
      'req_1',
      null,
      'req_1',
      null,
      'req_5',
      'req_6',
      null,
    ]);
    expect(rows[0]).toMatchObject({ age: 36, followers: 120n, active: true, verified: 'true' });
    expect(rows[4]).toMatchObject({ age: 41.5, followers: 7n, active: false, full_name: '-Di' });
    expect(rows[0].notes).toBe('=HYPERLINK("http://x")');
  });

  it('names a Parquet column apart where an input column takes a row column or a result name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-store-export-'));
    const store = await storeIn(dir);
    await store.beginLoad('n1', 'person_enrichment', ['Row', 'email']);
    await store.addRows('n1', 'person_enrichment', [
      {
        row: 1,
        params: { email: 'a@example.org' },
        key: {},
        cells: { Row: '9', email: 'a@example.org' },
      },
    ]);
    await store.finishLoad('n1', { blankLines: 0, dedupe: true });
    await store.writeResults('n1', [
      { row: 1, key: {}, outcome: 'found', result: { Email: 'A@example.org', message: 'hi' } },
    ]);
    const target = join(dir, 'n.parquet');
    await exportBatchFromStore(store, {
      batchId: 'n1',
      format: 'parquet',
      target,
      noLine: 'missing',
    });
    const [row] = await parquetReadObjects({ file: await asyncBufferFromFile(target) });
    expect(row).toEqual({
      'input.Row': '9',
      email: 'a@example.org',
      row: 1,
      outcome: 'found',
      code: null,
      message: null,
      request_id: null,
      duplicate_of: null,
      'result.Email': 'A@example.org',
      'result.message': 'hi',
    });
  });

  it('refuses a batch whose rows are still loading', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-store-export-'));
    const store = await storeIn(dir);
    await store.beginLoad('l1', 'person_enrichment', ['email']);
    await expect(
      exportBatchFromStore(store, {
        batchId: 'l1',
        format: 'csv',
        target: join(dir, 'x.csv'),
        noLine: 'pending',
      }),
    ).rejects.toMatchObject({ code: 'batch_not_loaded' });
  });
});

describe('batchResults', () => {
  it('pages results in row order and in completion order, resuming from a cursor', async () => {
    const f = await fixture();
    const rowsOf = async (it: AsyncIterable<ResultLine>) => {
      const out: number[] = [];
      for await (const l of it) out.push(l.row);
      return out;
    };
    expect(await rowsOf(batchResults(f.store, 'b1', { pageSize: 2 }))).toEqual([1, 2, 3, 5, 6, 7]);
    // LEADERS were written first (one write: row order within it), then LATER.
    expect(await rowsOf(batchResults(f.store, 'b1', { order: 'completion', pageSize: 2 }))).toEqual(
      [1, 2, 5, 3, 6, 7],
    );
    expect(await rowsOf(batchResults(f.store, 'b1', { outcome: 'failed' }))).toEqual([2, 7]);
    expect(await rowsOf(batchResults(f.store, 'b1', { limit: 4, pageSize: 3 }))).toEqual([
      1, 2, 3, 5,
    ]);

    const pages = [];
    for await (const p of batchResultPages(f.store, 'b1', { order: 'completion', pageSize: 4 }))
      pages.push(p);
    expect(pages.map((p) => p.lines.map((l) => l.row))).toEqual([
      [1, 2, 5, 3],
      [6, 7],
    ]);
    const resumed = await rowsOf(
      batchResults(f.store, 'b1', { order: 'completion', after: pages[0].next }),
    );
    expect(resumed).toEqual([6, 7]);
    const afterRow3 = await rowsOf(batchResults(f.store, 'b1', { after: 3 }));
    expect(afterRow3).toEqual([5, 6, 7]);
    const first = (await batchResults(f.store, 'b1').next()).value as ResultLine;
    expect(first).toMatchObject({ row: 1, requestId: 'req_1', result: LEADERS[1].result });
    await expect(batchResults(f.store, 'nope').next()).rejects.toMatchObject({
      code: 'no_such_batch',
    });
  });
});
