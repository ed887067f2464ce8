// A batch over a file of good and bad rows against the emulator: one line per row, each with
// the right outcome, and the same output when the batch continues-as-new every few rows.
import { describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import { readOutput, sharedBatchEnv, startCsvBatch, tempDir, writeCsv } from './fixtures.js';

const env = sharedBatchEnv();
const dir = tempDir('batch');

const rows = sampleRows({ rows: 30, unknownShare: 0.2, badShare: 0.1, withName: true });
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

async function expectOneLinePerRow(path: string) {
  const lines = await readOutput(path);
  expect(lines.map((l) => l.row).sort((a, b) => a - b)).toEqual(rows.map((_, i) => i + 1));
  for (const line of lines) {
    const src = rows[line.row - 1];
    if (!src.email || src.email.startsWith('not-an-email')) {
      expect(line).toMatchObject({ outcome: 'failed', code: 'invalid_row' });
      expect(line.message).toMatch(/email|needs at least one of/);
    } else if (src.email.endsWith('@unknown.pcds.dev')) {
      expect(line).toMatchObject({ outcome: 'empty', key: { email: src.email } });
    } else {
      expect(line).toMatchObject({ outcome: 'found', key: { email: src.email } });
      expect(line.result).toBeTypeOf('object');
    }
  }
  return lines;
}

describe('batch workflow', () => {
  it('writes one line per row: found, empty, and bad rows with their reason', async () => {
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const { handle, output } = await startCsvBatch(client, taskQueue, 'good-and-bad', input, {
        window: 8,
        pollIntervalMs: 50,
      });
      const summary = await handle.result();
      console.log('summary', JSON.stringify(summary));
      const lines = await expectOneLinePerRow(output);
      const count = (o: string) => lines.filter((l) => l.outcome === o).length;
      expect(summary).toMatchObject({
        state: 'done',
        total: 30,
        done: 30,
        found: count('found'),
        empty: count('empty'),
        failed: count('failed'),
        failedByCode: { invalid_row: 3 },
      });
      expect(count('empty')).toBe(6);
    });
  });

  it('gives the same output when it continues as new every few rows', async () => {
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const { handle, output } = await startCsvBatch(client, taskQueue, 'continue-as-new', input, {
        window: 4,
        chunkSize: 7,
        historyThreshold: 40,
        pollIntervalMs: 50,
      });
      const summary = await handle.result();
      expect(summary.runs).toBeGreaterThan(2);
      expect(summary.done).toBe(30);
      await expectOneLinePerRow(output);
    });
  });
});
