// A batch's rows and the workflows under their ids: a batch that names its rows in the old scheme
// (`batch-<id>-row-<n>`, batches started before the current one) and meets another kind of
// workflow under a row's id (a batch named `<id>-row-2`) fails that row at once as row_id_taken,
// never waiting for the stranger nor taking its result; its other rows run.
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { pauseBatchSignal } from '../../src/batch/messages.js';
import type { BatchInput } from '../../src/batch/types.js';
import { sampleRows } from '../../src/emulator/index.js';
import { rowWorkflowId } from '../../src/contract/workflow-ids.js';
import { withWorker } from '../harness/temporal.js';
import {
  readOutput,
  sharedBatchEnv,
  startBatch,
  tempDir,
  uniqueBatchId,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

const env = sharedBatchEnv();
const dir = tempDir('row-ids');
const people = sampleRows({ rows: 3 }) as unknown as Record<string, string>[];
const input = writeCsv(dir, 'people.csv', people, ['email']);

const batchOf = (batchId: string, extra: Partial<BatchInput> = {}): BatchInput => ({
  batchId,
  endpoint: 'person_enrichment',
  source: { path: input, format: 'csv' },
  output: join(dir, `${batchId}.jsonl`),
  window: 1,
  pollIntervalMs: 100,
  ...extra,
});

it(
  'an old-scheme row that finds a workflow of another kind under its id fails row_id_taken at once, sending nothing for it',
  { timeout: 120_000 },
  async () => {
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const batchId = uniqueBatchId('oldrows');
      // A batch under the old scheme's id of row 2 of `batchId`, held paused.
      const held = await startBatch(client, taskQueue, batchOf(`${batchId}-row-2`));
      expect(held.workflowId).toBe(rowWorkflowId(batchId, 2));
      await held.signal(pauseBatchSignal, { reason: 'held' });
      await waitForProgress(
        client,
        `${batchId}-row-2`,
        (p) => p.paused !== undefined && p.inFlight === 0,
      );

      const submitsBefore = env.emu.stats().jobsSubmitted;
      // Named as batches before the current scheme were (no rowIdScheme in its input).
      const old = await startBatch(client, taskQueue, batchOf(batchId, { rowIdScheme: undefined }));
      const summary = await old.result();
      expect(summary).toMatchObject({ state: 'done', done: 3, failed: 1 });
      expect(summary.failedRows).toEqual([{ row: 2, code: 'row_id_taken' }]);
      const lines = (await readOutput(join(dir, `${batchId}.jsonl`))).sort((a, b) => a.row - b.row);
      expect(lines.map((l) => [l.row, l.outcome === 'failed' ? l.code : 'sent'])).toEqual([
        [1, 'sent'],
        [2, 'row_id_taken'],
        [3, 'sent'],
      ]);
      // Row 2 was never sent: two jobs for rows 1 and 3 (the paused batch sent at most its first).
      expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(2);
      // The stranger is untouched: still running, paused.
      expect((await held.describe()).status.name).toBe('RUNNING');
      await held.terminate('test cleanup');
    });
  },
);
