// A batch whose worker keeps no workflow in its cache replays its whole history at every task:
// any decision that does not follow from the history alone (nondeterminism) fails a task there
// and the batch stops. Both modes, with duplicates (leaders and their followers) and runs that
// continue as new, end with one line per row.
import { describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import { readOutput, sharedBatchEnv, startCsvBatch, tempDir, writeCsv } from './fixtures.js';

const env = sharedBatchEnv({ latency: { queuedMs: 50, processingMs: 200 } });
const dir = tempDir('replay-every-task');

/** 40 distinct rows, then 20 that repeat earlier ones: duplicates whose leaders run first. */
function rowsWithDuplicates(): Record<string, string>[] {
  const rows = sampleRows({ rows: 40, unknownShare: 0.25 }) as unknown as Record<string, string>[];
  return [...rows, ...rows.filter((_, i) => i % 2 === 0)];
}

describe('a batch replayed at every workflow task', () => {
  for (const compact of [true, false])
    it(`${compact ? 'compact' : 'row workflows'}: ends with one line per row`, async () => {
      const rows = rowsWithDuplicates();
      const input = writeCsv(dir, `rows-${compact}.csv`, rows, ['email']);
      await withWorker(
        { activities: env.worker.activities, workerOptions: { maxCachedWorkflows: 0 } },
        async ({ client, taskQueue }) => {
          const { handle, output } = await startCsvBatch(client, taskQueue, 'replayed', input, {
            window: 6,
            pollIntervalMs: 100,
            historyThreshold: 80,
            compact,
          });
          const summary = await handle.result();
          expect(summary).toMatchObject({ state: 'done', done: rows.length });
          expect(summary.runs).toBeGreaterThanOrEqual(2);
          const lines = await readOutput(output);
          expect(lines).toHaveLength(rows.length);
          expect(new Set(lines.map((l) => l.row)).size).toBe(rows.length);
        },
      );
    }, 240_000);
});
