// A batch with a CSV output, against the emulator: when it ends the CSV its caller writes from the
// store holds exactly one row per input row in row order (input columns first, bad rows with
// their code), also across continue-as-new, and the summary beside it lists the lowest failed
// rows. A cancelled batch gets its CSV too, the rows it never ran marked and counted. Cells that
// start like a formula are neutralised unless raw cells are asked for, and the files are 0600.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { expect, it } from 'vitest';
import type { BatchSummary } from '../../src/batch/types.js';
import { sampleRows } from '../../src/emulator/index.js';
import { outputsOf, writeBatchOutputs } from '../../src/store/outputs.js';
import { withWorker } from '../harness/temporal.js';
import { couldRunAsFormula, FORMULA_PAYLOADS } from '../unit/batch/formula-payloads.js';
import {
  batchTestStore,
  readOutput,
  sharedBatchEnv,
  startBatch,
  startCsvBatch,
  tempDir,
  uniqueBatchId,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

const env = sharedBatchEnv();
const dir = tempDir('csv-output');

// Half the rows are bad, so more fail than the summary lists.
const rows = sampleRows({ rows: 26, unknownShare: 0.15, badShare: 0.5, withName: true });
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);
const isBad = (r: { email: string }) => !r.email || r.email.startsWith('not-an-email');

/** What a caller does once its batch ended: the files written from the store, the summary beside. */
async function writtenOutputs(batchId: string, ended: BatchSummary): Promise<BatchSummary> {
  return (await writeBatchOutputs(await batchTestStore(), batchId, outputsOf(ended), ended))!;
}

it(
  'writes the CSV in row order when it ends, across continue-as-new, with the failed rows in the summary',
  { timeout: 120_000 },
  async () => {
    const csvOutput = join(dir, 'enriched.csv');
    const summary = await withWorker(
      { activities: env.worker.activities },
      async ({ client, taskQueue }) => {
        const { handle, batchId } = await startCsvBatch(client, taskQueue, 'csv-output', input, {
          csvOutput,
          window: 4,
          chunkSize: 7,
          historyThreshold: 60,
          pollIntervalMs: 50,
        });
        return writtenOutputs(batchId, await handle.result());
      },
    );
    expect(summary.runs).toBeGreaterThan(1);
    expect(summary).toMatchObject({
      state: 'done',
      done: rows.length,
      source: { path: input, format: 'csv' },
      csvOutput,
      csv: {
        path: csvOutput,
        format: 'csv',
        sorted: true,
        inputRows: rows.length,
        written: rows.length,
        withoutLine: 0,
        firstWithoutLine: [],
        strayLines: 0,
      },
    });
    expect(summary.csvError).toBeUndefined();

    const badRows = rows.flatMap((r, i) => (isBad(r) ? [i + 1] : []));
    expect(badRows.length).toBeGreaterThan(10);
    expect(summary.failed).toBe(badRows.length);
    // The ten lowest failed rows, whatever order they finished in and across runs.
    expect(summary.failedRows).toEqual(
      badRows.slice(0, 10).map((row) => ({ row, code: 'invalid_row' })),
    );
    const written = JSON.parse(readFileSync(`${csvOutput}.summary.json`, 'utf8')) as BatchSummary;
    expect(written).toEqual(summary);

    const [header, ...cells]: string[][] = parse(readFileSync(csvOutput, 'utf8'));
    expect(header.slice(0, 5)).toEqual(['email', 'name', 'outcome', 'code', 'message']);
    expect(header).toContain('displayname');
    expect(header.some((h) => h.startsWith('social_profiles.'))).toBe(true);
    expect(new Set(header).size).toBe(header.length);
    const col = (name: string) => header.indexOf(name);

    // Exactly one row per input row, in input order, agreeing with the streamed JSONL.
    expect(cells).toHaveLength(rows.length);
    const lines = new Map((await readOutput(summary.output)).map((l) => [l.row, l]));
    cells.forEach((cell, i) => {
      const src = rows[i];
      const line = lines.get(i + 1)!;
      expect(cell).toHaveLength(header.length);
      expect(cell[col('email')]).toBe(src.email);
      expect(cell[col('name')]).toBe(src.name ?? '');
      expect(cell[col('outcome')]).toBe(line.outcome);
      expect(cell[col('code')]).toBe(line.code ?? '');
      if (isBad(src)) {
        expect(cell.slice(2, 4)).toEqual(['failed', 'invalid_row']);
        expect(cell[col('message')]).toMatch(/email|needs at least one of/);
      } else if (src.email.endsWith('@unknown.pcds.dev')) {
        expect(cell[col('outcome')]).toBe('empty');
        expect(cell[col('displayname')]).toBe('');
      } else {
        expect(cell[col('outcome')]).toBe('found');
        expect(cell[col('displayname')]).toBe((line.result as { displayname: string }).displayname);
      }
    });
  },
);

it(
  'a cancelled batch writes its CSV with the rows it did not run marked not_run',
  { timeout: 120_000 },
  async () => {
    const csvOutput = join(dir, 'cancelled.csv');
    const { summary, done } = await withWorker(
      { activities: env.worker.activities },
      async ({ client, taskQueue }) => {
        const { handle, batchId } = await startCsvBatch(client, taskQueue, 'csv-cancel', input, {
          csvOutput,
          window: 1,
          pollIntervalMs: 50,
        });
        await waitForProgress(client, batchId, (p) => p.done >= 3, 60_000);
        await handle.cancel();
        const summary = await writtenOutputs(batchId, await handle.result());
        return { summary, done: summary.done };
      },
    );
    expect(summary.state).toBe('cancelled');
    expect(done).toBeLessThan(rows.length);
    const notRun = rows.length - done;
    expect(summary.csv).toMatchObject({
      inputRows: rows.length,
      written: rows.length,
      withoutLine: notRun,
    });
    // The row in flight when the batch was cancelled has no line, nor have the rows after it.
    const lines = new Map((await readOutput(summary.output)).map((l) => [l.row, l]));
    expect(lines.size).toBe(done);
    const expectedNotRun = rows.flatMap((_, i) => (lines.has(i + 1) ? [] : [i + 1]));
    expect(expectedNotRun).toHaveLength(notRun);
    expect(summary.csv?.firstWithoutLine).toEqual(expectedNotRun.slice(0, 10));
    const cells: string[][] = parse(readFileSync(csvOutput, 'utf8'));
    expect(cells.slice(1).map((c) => c[2])).toEqual(
      rows.map((_, i) => lines.get(i + 1)?.outcome ?? 'not_run'),
    );
    expect(JSON.parse(readFileSync(`${csvOutput}.summary.json`, 'utf8'))).toEqual(summary);
  },
);

/** Cells a spreadsheet runs as formulas (OWASP's and their variants) and a plain value. */
const PAYLOADS = [...FORMULA_PAYLOADS.map(([cell]) => cell), 'plain value'];
const SHOWN = [...FORMULA_PAYLOADS.map(([, shown]) => shown), 'plain value'];
const modeOf = (path: string) => statSync(path).mode & 0o777;

/** Found rows whose `note` column (left out of the call, kept in the CSV) holds the payloads. */
const payloadInput = join(dir, 'payloads.csv');
writeFileSync(
  payloadInput,
  [
    'email,note',
    ...sampleRows({ rows: PAYLOADS.length, unknownShare: 0, badShare: 0 }).map(
      // Every note quoted: a bare CR would end the record.
      (r, i) => `${r.email},"${PAYLOADS[i].replace(/"/g, '""')}"`,
    ),
  ].join('\n') + '\n',
);

async function payloadBatch(name: string, raw: boolean) {
  // A folder the batch makes itself.
  const csvOutput = join(dir, name, 'private', 'out.csv');
  const summary = await withWorker(
    { activities: env.worker.activities },
    async ({ client, taskQueue }) => {
      const batchId = uniqueBatchId(name);
      const handle = await startBatch(client, taskQueue, {
        batchId,
        endpoint: 'person_enrichment',
        source: { path: payloadInput, format: 'csv', ignoreColumns: ['note'] },
        output: `${csvOutput}.jsonl`,
        csvOutput,
        ...(raw ? { csvRawCells: true } : {}),
        pollIntervalMs: 50,
      });
      return writtenOutputs(batchId, await handle.result());
    },
  );
  expect(summary).toMatchObject({ state: 'done', done: PAYLOADS.length, found: PAYLOADS.length });
  const [header, ...rows]: string[][] = parse(readFileSync(csvOutput, 'utf8'));
  return { csvOutput, summary, header, rows };
}

it(
  'neutralises CSV cells that start like a formula (OWASP), and the files and folders it made are private',
  { timeout: 120_000 },
  async () => {
    const { csvOutput, summary, header, rows } = await payloadBatch('csv-formulas', false);
    expect(header.slice(0, 2)).toEqual(['email', 'note']);
    expect(rows.map((r) => r[1])).toEqual(SHOWN);
    // No cell of the file, the service's results included, would run as a formula.
    expect([header, ...rows].flat().filter(couldRunAsFormula)).toEqual([]);
    // The streamed JSONL keeps every value as it is.
    expect((await readOutput(summary.output)).every((l) => l.outcome === 'found')).toBe(true);

    for (const file of [csvOutput, summary.output, `${csvOutput}.summary.json`])
      expect(modeOf(file), file).toBe(0o600);
    expect(modeOf(dirname(csvOutput))).toBe(0o700);
    expect(modeOf(dirname(dirname(csvOutput)))).toBe(0o700);
  },
);

it('with csvRawCells writes the cells exactly as they are', { timeout: 120_000 }, async () => {
  const { csvOutput, rows } = await payloadBatch('csv-raw-cells', true);
  expect(rows.map((r) => r[1])).toEqual(PAYLOADS);
  expect(modeOf(csvOutput)).toBe(0o600);
});
