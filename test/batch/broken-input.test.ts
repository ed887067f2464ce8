// Batches over broken and oversized input, against the real dev server and the emulator over
// HTTP: every data row gets exactly one output line (bad ones failed with their code, none
// carrying a value too big or a cell quoted in a message), blank lines are counted into the
// summary across continue-as-new, and a job result over the bound fails its row after one submit.
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { summaryText } from '../../src/cli/batch/text.js';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import {
  batchTestStore,
  activitiesFor,
  configFor,
  readOutput,
  sharedBatchEnv,
  startCsvBatch,
  tempDir,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

const env = sharedBatchEnv();
const dir = tempDir('broken-input');

const known = sampleRows({ rows: 6, withName: true });
const HUGE = 'h'.repeat(3 * 1024 * 1024);

// [line, expected code (undefined: found)]; null lines are blank.
const LINES: [string | Buffer, string | undefined][] = [
  [`${known[0].email},${known[0].name}`, undefined],
  [`${known[1].email},O"Brien`, 'invalid_row'], // stray quote
  // Not UTF-8: read as Windows-1252 (a spreadsheet's CSV on Windows), so it is sent.
  [Buffer.from([...Buffer.from(`${known[2].email},Ren`), 0xe9, 0x0a]), undefined],
  [`${known[3].email},${HUGE}`, 'row_too_large'],
  [`\uFEFF${known[4].email},Bom`, 'invalid_row'], // byte-order mark mid-file
  [`"${known[5].email},Unclosed`, 'invalid_row'], // quote never closed
  [`${known[2].email},${known[2].name}`, undefined],
  [`${known[3].email},${known[3].name}`, undefined],
];
const BLANKS = ['', '   ', '\r', ''];

/** The header, the data rows with blank lines between them, as bytes. */
function brokenCsv(): string {
  const parts: Buffer[] = [Buffer.from('\uFEFFemail,name\n')];
  LINES.forEach(([line], i) => {
    parts.push(typeof line === 'string' ? Buffer.from(`${line}\n`) : line);
    if (i < BLANKS.length) parts.push(Buffer.from(`${BLANKS[i]}\n`));
  });
  const path = join(dir, 'broken.csv');
  writeFileSync(path, Buffer.concat(parts));
  return path;
}

describe('batch over broken input', () => {
  it('writes one line per data row, fails the bad ones with their codes and counts blank lines', async () => {
    const input = brokenCsv();
    expect(statSync(input).size).toBeGreaterThan(3 * 1024 * 1024);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const { handle, output, batchId } = await startCsvBatch(client, taskQueue, 'broken', input, {
        window: 2,
        chunkSize: 3,
        // Continue as new every few rows: the blank lines stay counted once.
        historyThreshold: 30,
        pollIntervalMs: 50,
      });
      const progress = await waitForProgress(client, batchId, (p) => p.total > 0);
      expect(progress.blankLines).toBe(BLANKS.length);
      const summary = await handle.result();
      expect(summary.runs).toBeGreaterThan(1);

      const lines = await readOutput(output);
      expect(lines.map((l) => l.row).sort((a, b) => a - b)).toEqual(LINES.map((_, i) => i + 1));
      for (const line of lines) {
        const code = LINES[line.row - 1][1];
        if (code) expect(line, `row ${line.row}`).toMatchObject({ outcome: 'failed', code });
        else expect(line, `row ${line.row}`).toMatchObject({ outcome: 'found' });
      }
      // No bad row carries its cells, in its key or its message.
      const bad = JSON.stringify(lines.filter((l) => l.outcome === 'failed'));
      for (const value of ['O"Brien', 'O\\"Brien', 'Ren', 'Bom', 'Unclosed', 'hhhh'])
        expect(bad).not.toContain(value);
      // The oversized row's cells are not carried into its result.
      expect(JSON.stringify(lines).length).toBeLessThan(256 * 1024);

      expect(summary).toMatchObject({
        state: 'done',
        total: LINES.length,
        done: LINES.length,
        found: 4,
        failed: 4,
        failedByCode: { invalid_row: 3, row_too_large: 1 },
        blankLines: BLANKS.length,
      });
      // The summary kept with the batch's record in the store.
      const written = (await (await batchTestStore()).summary(batchId)) as { blankLines: number };
      expect(written.blankLines).toBe(BLANKS.length);
      expect(summaryText(summary)).toContain(`${BLANKS.length} blank lines skipped`);
    });
  });

  it('fails a row whose job result is over the bound with result_too_large, its request id and one submit', async () => {
    const small = activitiesFor(configFor(env.emu, { PCDS_MAX_RESULT_BYTES: '200' }));
    const rows = sampleRows({ rows: 4, unknownShare: 0.25 });
    const input = writeCsv(dir, 'big-results.csv', rows as unknown as Record<string, string>[], [
      'email',
    ]);
    try {
      await withWorker({ activities: small.activities }, async ({ client, taskQueue }) => {
        const before = env.emu.stats().jobsSubmitted;
        const { handle, output } = await startCsvBatch(client, taskQueue, 'big-results', input, {
          window: 4,
          pollIntervalMs: 50,
        });
        const summary = await handle.result();
        expect(summary).toMatchObject({
          done: 4,
          empty: 1,
          failed: 3,
          failedByCode: { result_too_large: 3 },
        });
        // Each row was submitted once: a result too large is not a reason to ask again.
        expect(env.emu.stats().jobsSubmitted - before).toBe(4);
        const lines = (await readOutput(output)).sort((a, b) => a.row - b.row);
        expect(lines).toHaveLength(4);
        for (const line of lines.filter((l) => l.outcome === 'failed')) {
          expect(line.requestId).toMatch(/_\d+_\d+$/);
          expect(line.message).toContain(line.requestId);
          expect(line.message).toMatch(/over the bound of 200 /);
          expect(line.result).toBeUndefined();
        }
      });
    } finally {
      await small.close();
    }
  });
});
