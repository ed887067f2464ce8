// `pcds batch start -o x.csv` and `pcds batch export` run as child processes against the emulator
// and a worker: the CSV has one row per input row in input order with the input's own columns
// first; exports of a paused (running) batch mark the rows still to come, exports of a finished
// one are complete and agree with the batch's own files. Cells that start like a formula are
// neutralised unless --csv-raw-cells, and the files written are 0600.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { expect, it } from 'vitest';
import type { ExportReport, ResultLine } from '../../src/batch/types.js';
import { batchWorkflowId } from '../../src/contract/workflow-ids.js';
import { sampleRows } from '../../src/emulator/index.js';
import { waitForProgress } from '../batch/fixtures.js';
import { sharedCliEnv, STACK_FRAME, tempDir } from './cli-env.js';
import { FORMULA_PAYLOADS } from '../unit/batch/formula-payloads.js';

const shared = sharedCliEnv();
const { pcds, outputs } = shared;
const dir = tempDir('batch-export');

const runId = `${process.pid}-${Date.now().toString(36)}`;

const readCsv = (path: string): string[][] => parse(readFileSync(path, 'utf8'));
const readLines = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ResultLine);

/** A CSV input whose columns are not the parameters' names, with a column left out. */
function leadsCsv(name: string, emails: string[]): string {
  const path = join(dir, name);
  const rows = emails.map((e, i) => `${e},"Lead ${i + 1}, Inc","seg ""${i % 3}"""`);
  writeFileSync(path, ['Email Address,Company,segment', ...rows].join('\n') + '\n');
  return path;
}
const MAP = ['--map', 'email=Email Address', '--ignore', 'Company,segment'];

it(
  'batch start -o x.csv: one CSV row per input row, in input order, input columns first',
  { timeout: 150_000 },
  async () => {
    const emails = sampleRows({ rows: 10 }).map((r) => r.email);
    const bad = [3, 8];
    for (const row of bad) emails[row - 1] = `not-an-email-${row}`;
    const input = leadsCsv('ten.csv', emails);
    const csv = join(dir, 'ten.csv.out.csv');
    const id = `csv-ten-${runId}`;

    const started = await pcds(
      'batch',
      'start',
      '--id',
      id,
      '-i',
      input,
      '-o',
      csv,
      ...MAP,
      '--detach',
    );
    expect(started.code, started.stderr).toBe(0);
    expect(started.stderr).toContain(`-> ${csv} (results stream to ${csv}.jsonl)`);
    expect(started.stderr).toContain(`results: pcds batch watch ${id} writes them to ${csv}.jsonl`);
    const summary = await shared.cli.client.workflow.getHandle(batchWorkflowId(id)).result();
    // Detached: the files are written by a watch (here, of the ended batch), where it runs.
    const watched = await pcds('batch', 'watch', id);
    expect(watched.code, watched.stderr).toBe(0);
    expect(summary).toMatchObject({ done: 10, failed: 2, csvOutput: csv, output: `${csv}.jsonl` });
    expect(summary.failedRows).toEqual(bad.map((row) => ({ row, code: 'invalid_row' })));

    const [header, ...rows] = readCsv(csv);
    expect(header.slice(0, 6)).toEqual([
      'Email Address',
      'Company',
      'segment',
      'outcome',
      'code',
      'message',
    ]);
    expect(header).toContain('displayname');
    expect(rows).toHaveLength(10);
    rows.forEach((r, i) => {
      expect(r.slice(0, 3)).toEqual([emails[i], `Lead ${i + 1}, Inc`, `seg "${i % 3}"`]);
      if (bad.includes(i + 1)) {
        expect(r.slice(3, 5)).toEqual(['failed', 'invalid_row']);
        expect(r[5]).toMatch(/email/);
        expect(r[5]).not.toContain('not-an-email');
      } else expect(r[3]).toBe('found');
    });

    const status = await pcds('batch', 'status', id);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('failed rows: row 3 invalid_row, row 8 invalid_row');
    expect(status.stdout).toContain(`output: ${csv} (CSV in row order`);

    // An export of the finished batch is the same CSV, from the same code.
    const copy = join(dir, 'ten-copy.csv');
    const exported = await pcds('batch', 'export', id, '--format', 'csv', '-o', copy);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toBe(`wrote 10 rows of 10 input rows to ${copy} (csv, in row order)\n`);
    expect(exported.stderr).toBe('');
    expect(readFileSync(copy, 'utf8')).toBe(readFileSync(csv, 'utf8'));
  },
);

it(
  'batch export of a running batch marks rows to come; of the finished batch it is complete',
  { timeout: 200_000 },
  async () => {
    const N = 14;
    const emails = sampleRows({ rows: N }).map((r) => r.email);
    emails[1] = '';
    const input = leadsCsv('running.csv', emails);
    const stream = join(dir, 'running.jsonl');
    const id = `export-running-${runId}`;
    const started = await pcds(
      'batch',
      'start',
      '--id',
      id,
      '-i',
      input,
      '-o',
      stream,
      ...MAP,
      '--window',
      '1',
      '--detach',
    );
    expect(started.code, started.stderr).toBe(0);

    // Paused after a few rows: the batch is running, with rows done and rows to come.
    await waitForProgress(shared.cli.client, id, (p) => p.done >= 3, 60_000);
    expect((await pcds('batch', 'pause', id)).code).toBe(0);
    const paused = await waitForProgress(
      shared.cli.client,
      id,
      (p) => p.state === 'paused' && p.inFlight === 0,
      60_000,
    );
    expect(paused.done).toBeLessThan(N);
    expect(paused.source).toEqual({ path: input, format: 'csv' });

    const csv = join(dir, 'running-now.csv');
    const sorted = join(dir, 'running-now.jsonl');
    const [csvNow, jsonlNow] = await Promise.all([
      pcds('batch', 'export', id, '--format', 'csv', '-o', csv),
      pcds('batch', 'export', id, '--format', 'jsonl', '--sorted', '-o', sorted, '--json'),
    ]);
    expect(csvNow.code, csvNow.stderr).toBe(0);
    expect(csvNow.stderr).toMatch(
      new RegExp(`^${N - paused.done} rows have no result yet \\(the batch is running\\)`),
    );
    const rowsNow = readCsv(csv).slice(1);
    expect(rowsNow).toHaveLength(N);
    expect(rowsNow.map((r) => r[0])).toEqual(emails);
    const outcomes = rowsNow.map((r) => r[3]);
    expect(outcomes.filter((o) => o === 'pending')).toHaveLength(N - paused.done);
    expect(outcomes[1]).toBe('failed');
    expect(outcomes.slice(0, paused.done)).not.toContain('pending');

    expect(jsonlNow.code, jsonlNow.stderr).toBe(0);
    const report = JSON.parse(jsonlNow.stdout) as ExportReport;
    expect(report).toMatchObject({
      format: 'jsonl',
      sorted: true,
      inputRows: N,
      written: paused.done,
      withoutLine: N - paused.done,
      strayLines: 0,
    });
    const linesNow = readLines(sorted);
    expect(linesNow.map((l) => l.row)).toEqual(
      Array.from({ length: paused.done }, (_, i) => i + 1),
    );

    // The batch's own output, while it runs, is for a watch to write as rows finish.
    const clobber = await pcds('batch', 'export', id, '--format', 'jsonl', '-o', stream);
    expect(clobber.code).toBe(2);
    expect(clobber.stderr).toBe(
      `error: ${stream} is the batch's own output, and the batch is running: pcds batch watch ${id} writes it as rows finish (or give --output another file for a copy now)\n`,
    );

    expect((await pcds('batch', 'resume', id)).code).toBe(0);
    await shared.cli.client.workflow.getHandle(batchWorkflowId(id)).result();

    const finalCsv = join(dir, 'running-final.csv');
    const finalSorted = join(dir, 'running-final.jsonl');
    const finalCopy = join(dir, 'running-final-copy.jsonl');
    const [csvDone, sortedDone, copyDone] = await Promise.all([
      pcds('batch', 'export', id, '-o', finalCsv),
      pcds('batch', 'export', id, '--sorted', '-o', finalSorted),
      pcds('batch', 'export', id, '-o', finalCopy),
    ]);
    for (const r of [csvDone, sortedDone, copyDone]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
    }
    expect(sortedDone.stdout).toBe(
      `wrote ${N} lines of ${N} input rows to ${finalSorted} (jsonl, in row order)\n`,
    );
    const rowsDone = readCsv(finalCsv).slice(1);
    expect(rowsDone.map((r) => r[0])).toEqual(emails);
    expect(rowsDone.map((r) => r[3])).toEqual(emails.map((e) => (e ? 'found' : 'failed')));
    // The rows already exported while it ran are the same in the final export.
    rowsNow.forEach((r, i) => {
      if (r[3] !== 'pending') expect(rowsDone[i].slice(0, 6)).toEqual(r.slice(0, 6));
    });
    const linesDone = readLines(finalSorted);
    expect(linesDone.map((l) => l.row)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    expect(linesDone.slice(0, linesNow.length)).toEqual(linesNow);
    // An export from the store is in row order with or without --sorted.
    expect(readFileSync(finalCopy, 'utf8')).toBe(readFileSync(finalSorted, 'utf8'));
    // A detached batch's own output, never written (nobody watched it): once the batch ended, an
    // export to it writes it whole, as a watch would.
    expect(existsSync(stream)).toBe(false);
    const own = await pcds('batch', 'export', id, '-o', stream);
    expect(own.code, own.stderr).toBe(0);
    expect(own.stdout).toBe(
      `wrote the batch's own output, whole: ${stream} (${N} rows; summary: ${stream}.summary.json)\n`,
    );
    expect(readLines(stream)).toEqual(linesDone);
    // A watch after its end writes the same.
    const watched = await pcds('batch', 'watch', id);
    expect(watched.code, watched.stderr).toBe(0);
    expect([...readLines(stream)].sort((a, b) => a.row - b.row)).toEqual(linesDone);
  },
);

/** OWASP's payloads (cells a spreadsheet runs as formulas) and a plain value. */
const PAYLOADS = [
  '=1+1',
  '+1',
  '-1+1',
  '@SUM(1)',
  '\t=1',
  '\r=1',
  '=HYPERLINK("http://x","y")',
  'plain value',
];
// As the CSV must show each (the one table of payloads the CSV writer's own tests read).
const neutralised = PAYLOADS.map((p) => FORMULA_PAYLOADS.find(([cell]) => cell === p)?.[1] ?? p);
const modeOf = (path: string) => statSync(path).mode & 0o777;

it(
  'CSV cells that start like a formula are neutralised, in the output and in exports, unless --csv-raw-cells',
  { timeout: 150_000 },
  async () => {
    const input = join(dir, 'formulas.csv');
    const emails = sampleRows({ rows: PAYLOADS.length }).map((r) => r.email);
    // Every note quoted: a bare CR would end the record.
    const rows = emails.map((e, i) => `${e},"${PAYLOADS[i].replace(/"/g, '""')}"`);
    writeFileSync(input, ['Email Address,note', ...rows].join('\n') + '\n');
    const flags = ['-i', input, '--map', 'email=Email Address', '--ignore', 'note', '--detach'];

    const jsonlRaw = await pcds(
      'batch',
      'start',
      ...flags,
      '-o',
      join(dir, 'f.jsonl'),
      '--csv-raw-cells',
    );
    expect(jsonlRaw.code).toBe(2);
    expect(jsonlRaw.stderr).toContain('--csv-raw-cells is for a .csv --output');

    const ids = [`formulas-${runId}`, `formulas-raw-${runId}`];
    const csvs = [join(dir, 'formulas', 'out.csv'), join(dir, 'formulas-raw', 'out.csv')];
    for (const [i, id] of ids.entries()) {
      const started = await pcds(
        'batch',
        'start',
        '--id',
        id,
        ...flags,
        '-o',
        csvs[i],
        ...(i === 1 ? ['--csv-raw-cells'] : []),
      );
      expect(started.code, started.stderr).toBe(0);
    }
    for (const id of ids) {
      await shared.cli.client.workflow.getHandle(batchWorkflowId(id)).result();
      // Detached: a watch writes the CSV, with the batch's choice of cells.
      expect((await pcds('batch', 'watch', id)).code).toBe(0);
    }
    const notes = (path: string) =>
      readCsv(path)
        .slice(1)
        .map((r) => r[1]);
    expect(notes(csvs[0])).toEqual(neutralised);
    expect(notes(csvs[1])).toEqual(PAYLOADS);
    for (const csv of csvs) {
      for (const file of [csv, `${csv}.jsonl`, `${csv}.summary.json`])
        expect(modeOf(file), file).toBe(0o600);
      expect(modeOf(dirname(csv))).toBe(0o700);
    }

    // Exports of the raw batch: neutralised by default, as they are with the flag.
    const safe = join(dir, 'exports', 'formulas.csv');
    const raw = join(dir, 'exports', 'formulas-raw.csv');
    const [safeRun, rawRun, jsonlRun] = await Promise.all([
      pcds('batch', 'export', ids[1], '--format', 'csv', '-o', safe),
      pcds('batch', 'export', ids[1], '--format', 'csv', '--csv-raw-cells', '-o', raw),
      pcds(
        'batch',
        'export',
        ids[1],
        '--format',
        'jsonl',
        '--csv-raw-cells',
        '-o',
        join(dir, 'x.jsonl'),
      ),
    ]);
    expect(safeRun.code, safeRun.stderr).toBe(0);
    expect(rawRun.code, rawRun.stderr).toBe(0);
    expect(notes(safe)).toEqual(neutralised);
    expect(
      readCsv(safe)
        .flat()
        .some((c) => /^[=+\-@\t\r]/.test(c)),
    ).toBe(false);
    expect(notes(raw)).toEqual(PAYLOADS);
    for (const file of [safe, raw]) expect(modeOf(file), file).toBe(0o600);
    expect(modeOf(dirname(safe))).toBe(0o700);
    expect(jsonlRun.code).toBe(2);
    expect(jsonlRun.stderr).toContain('--csv-raw-cells is for a CSV export');
  },
);

it('no output of this file shows the API key, a stack or a row value in an error', () => {
  expect(outputs.length).toBeGreaterThanOrEqual(10);
  for (const r of outputs) {
    expect(r.stdout + r.stderr).not.toContain(shared.cli.env.PCDS_API_SECRET);
    expect(r.stdout + r.stderr).not.toContain(shared.cli.env.PCDS_API_KEY);
    expect(r.stderr).not.toMatch(STACK_FRAME);
    expect(r.stderr).not.toContain('@');
  }
});
