// Continue-as-new keeps the window full: rows in flight go along to the next run and report to
// the batch's workflow id. A carried row whose call never reports (terminated) is looked up, and
// a row's call cancelled after its job was accepted is never submitted again, even after a reset.
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { batchProgressQuery } from '../../src/batch/messages.js';
import { batchWorkflowId, rowWorkflowId } from '../../src/contract/workflow-ids.js';
import { sampleRows } from '../../src/emulator/index.js';
import { callStateQuery } from '../../src/calls/signals.js';
import { withWorker } from '../harness/temporal.js';
import {
  readOutput,
  resetToFirstTask,
  sharedBatchEnv,
  startCsvBatch,
  tempDir,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

// Jobs long enough that every continue-as-new meets rows in flight.
const env = sharedBatchEnv({ latency: { queuedMs: 100, processingMs: 1_200 } });
const dir = tempDir('carried');

const csvOf = (name: string, n: number) =>
  writeCsv(
    dir,
    name,
    sampleRows({ rows: n, unknownShare: 0.25 }) as unknown as Record<string, string>[],
    ['email'],
  );

/** Rows in flight at the end of each run that continued as new (queried from the closed runs). */
async function carriedPerRun(client: Client, batchId: string): Promise<number[]> {
  const id = batchWorkflowId(batchId);
  const counts: number[] = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = '${id}'` })) {
    if (run.status.name !== 'CONTINUED_AS_NEW') continue;
    const progress = await client.workflow.getHandle(id, run.runId).query(batchProgressQuery);
    counts.push(progress.inFlight);
  }
  return counts;
}

async function expectOneLinePerRow(output: string, n: number) {
  const lines = await readOutput(output);
  expect(lines).toHaveLength(n);
  expect(new Set(lines.map((l) => l.row)).size).toBe(n);
}

describe('continue-as-new with rows in flight', () => {
  it('hands rows in flight to the next run: one line and one submit per row', async () => {
    const input = csvOf('carry.csv', 20);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const submitsBefore = env.emu.stats().jobsSubmitted;
      // A threshold of one event: every run continues as new as soon as it has started rows.
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'carry', input, {
        window: 4,
        pollIntervalMs: 100,
        historyThreshold: 1,
      });
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 20, failed: 0 });
      expect(summary.runs).toBeGreaterThanOrEqual(3);
      await expectOneLinePerRow(output, 20);
      expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(20);
      // The runs did not wait for their rows: they continued as new with rows in flight.
      const carried = await carriedPerRun(client, batchId);
      expect(carried.length).toBe(summary.runs - 1);
      expect(carried.some((n) => n > 0)).toBe(true);
    });
  }, 120_000);

  it('looks up a carried row whose call was terminated and ends it as terminated', async () => {
    const input = csvOf('terminated.csv', 2);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const { handle, batchId, output } = await startCsvBatch(
        client,
        taskQueue,
        'terminated',
        input,
        { window: 2, pollIntervalMs: 100, historyThreshold: 1, carriedCheckMs: 300 },
      );
      // Both rows start in the first run, which then continues as new and carries them.
      await waitForProgress(client, batchId, (p) => p.runs >= 2 && p.inFlight > 0);
      await client.workflow
        .getHandle(rowWorkflowId(batchId, 1, 'v2'))
        .terminate('an operator ends one row');
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 2, failed: 1 });
      expect(summary.failedByCode).toEqual({ terminated: 1 });
      await expectOneLinePerRow(output, 2);
      expect((await readOutput(output)).find((l) => l.row === 1)).toMatchObject({
        outcome: 'failed',
        code: 'terminated',
      });
    });
  }, 120_000);
});

it('never submits again a row whose call was cancelled after its job was accepted, even after a reset', async () => {
  const input = csvOf('cancelled.csv', 4);
  await withWorker(
    { activities: env.worker.activities },
    async ({ client, taskQueue, namespace }) => {
      const submitsBefore = env.emu.stats().jobsSubmitted;
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'cancel', input, {
        window: 4,
        pollIntervalMs: 100,
      });
      // Wait until row 1's job is accepted, then cancel that row's call, as an operator might.
      const row = client.workflow.getHandle(rowWorkflowId(batchId, 1, 'v2'));
      const deadline = Date.now() + 30_000;
      let requestId: string | undefined;
      while (!requestId && Date.now() < deadline) {
        requestId = await row
          .query(callStateQuery)
          .then((s) => s.requestId)
          .catch(() => undefined);
        if (!requestId) await new Promise((r) => setTimeout(r, 50));
      }
      expect(requestId).toBeDefined();
      await row.cancel();
      const first = await handle.result();
      expect(first).toMatchObject({ state: 'done', done: 4, failed: 1 });
      expect(first.failedByCode).toEqual({ cancelled: 1 });
      const linesBefore = await readOutput(output);
      expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(4);

      // Reset to the end of the first workflow task, as an operator does in the Web UI.
      const again = await resetToFirstTask(client, namespace, batchId);
      expect(again).toMatchObject({ state: 'done', done: 4, failed: 1 });
      expect(again.failedByCode).toEqual({ cancelled: 1 });
      expect(await readOutput(output)).toEqual(linesBefore);
      expect(env.emu.stats().jobsSubmitted - submitsBefore).toBe(4);
    },
  );
}, 120_000);
