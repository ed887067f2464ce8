// Compact batches: rows run as activities of the batch, each writing its own line. One line and
// one submit per row, a fraction of the history events, no row result in the batch's history,
// and a reset to the first task polls the rows' accepted jobs instead of submitting them again.
import { describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import {
  batchTestStore,
  readOutput,
  resetToFirstTask,
  sharedBatchEnv,
  startCsvBatch,
  tempDir,
  writeCsv,
} from './fixtures.js';

const env = sharedBatchEnv({ latency: { queuedMs: 50, processingMs: 300 } });
const dir = tempDir('compact');

const rowsOf = (n: number) =>
  sampleRows({ rows: n, unknownShare: 0.25 }) as unknown as Record<string, string>[];

describe('compact batch', () => {
  it('writes one line per row with one submit each, and keeps no row result in its history', async () => {
    const rows = rowsOf(30);
    const input = writeCsv(dir, 'plain.csv', rows, ['email']);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const submitsBefore = env.emu.stats().jobsSubmitted;
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'compact', input, {
        window: 8,
        pollIntervalMs: 100,
        compact: true,
      });
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 30, failed: 0 });
      expect(summary.found + summary.empty).toBe(30);
      const lines = await readOutput(output);
      expect(lines).toHaveLength(30);
      expect(new Set(lines.map((l) => l.row)).size).toBe(30);
      expect(lines.filter((l) => l.outcome === 'found')).toHaveLength(summary.found);
      expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(30);
      // No row has a workflow of its own, and the batch's history holds no row's result.
      const children = await client.workflow.count(
        `PcdsBatchId = '${batchId}' AND WorkflowType = 'pcdsEndpointCall'`,
      );
      expect(children.count).toBe(0);
      const history = JSON.stringify((await handle.fetchHistory()).events);
      const found = lines.find((l) => l.outcome === 'found')!;
      const fullName = (found.result as { displayname?: string }).displayname;
      expect(typeof fullName).toBe('string');
      expect(history).not.toContain(fullName!);
      // A few events per row: the activity's three and shares of reads and workflow tasks.
      expect(summary.batchHistoryEvents / 30).toBeLessThan(8);
      // The submit journal is in the store: every row accepted once.
      const store = await batchTestStore();
      const entries = await Promise.all(lines.map((l) => store.rowEntry(batchId, l.row)));
      expect(entries.every((e) => e?.state === 'accepted' && e.requestId)).toBe(true);
    });
  }, 120_000);

  it('continues as new by waiting for its rows, still one line per row', async () => {
    const input = writeCsv(dir, 'runs.csv', rowsOf(24), ['email']);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const submitsBefore = env.emu.stats().jobsSubmitted;
      const { handle, output } = await startCsvBatch(client, taskQueue, 'compact-runs', input, {
        window: 4,
        pollIntervalMs: 100,
        historyThreshold: 30,
        compact: true,
      });
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 24 });
      expect(summary.runs).toBeGreaterThanOrEqual(2);
      const lines = await readOutput(output);
      expect(lines).toHaveLength(24);
      expect(new Set(lines.map((l) => l.row)).size).toBe(24);
      expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(24);
    });
  }, 120_000);

  it('a reset to the first task reads the rows accepted jobs again and submits nothing', async () => {
    const input = writeCsv(dir, 'reset.csv', rowsOf(10), ['email']);
    await withWorker(
      { activities: env.worker.activities },
      async ({ client, taskQueue, namespace }) => {
        const submitsBefore = env.emu.stats().jobsSubmitted;
        const { handle, batchId, output } = await startCsvBatch(
          client,
          taskQueue,
          'compact-reset',
          input,
          {
            window: 10,
            pollIntervalMs: 100,
            compact: true,
          },
        );
        const first = await handle.result();
        expect(first).toMatchObject({ state: 'done', done: 10 });
        const linesBefore = await readOutput(output);
        expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(10);

        // Reset to the end of the first workflow task, as an operator does in the Web UI.
        const again = await resetToFirstTask(client, namespace, batchId);
        expect(again).toMatchObject({
          state: 'done',
          done: 10,
          found: first.found,
          empty: first.empty,
        });
        expect(await readOutput(output)).toEqual(linesBefore);
        expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(10);
      },
    );
  }, 120_000);
});
