// What the Web UI shows of a batch: every run's current details open with the batch's summary
// (a static summary belongs to the first run only), and a compact row's pending activity carries
// its row, phase and request id in its heartbeat details, never its values.
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { describe, expect, it } from 'vitest';
import { prepareBatch, startBatchWorkflow } from '../../src/client/batch-launch.js';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import { sharedBatchEnv, tempDir, uniqueBatchId, writeCsv } from './fixtures.js';
import { batchTestStore } from './fixtures.js';

const fast = sharedBatchEnv({ latency: { queuedMs: 50, processingMs: 200 } });
// Jobs that take longer than the test looks: the row stays pending, polling.
const slow = sharedBatchEnv({ latency: { queuedMs: 200, processingMs: 120_000 } });
const dir = tempDir('web-ui');

const rowsOf = (n: number) =>
  sampleRows({ rows: n, unknownShare: 0.25 }) as unknown as Record<string, string>[];

/** The Web UI's own read of a workflow's current details (a query a worker answers). */
async function currentDetails(client: Client, workflowId: string): Promise<string> {
  const meta = await client.workflow
    .getHandle(workflowId)
    .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return meta.currentDetails ?? '';
}

describe('Web UI details of a batch', () => {
  it('every run after a continue-as-new shows the batch summary in its current details', async () => {
    const input = writeCsv(dir, 'runs.csv', rowsOf(24), ['email']);
    await withWorker({ activities: fast.worker.activities }, async ({ client, taskQueue }) => {
      const batchId = uniqueBatchId('ui-runs');
      const prepared = await prepareBatch({
        input,
        output: join(dir, `${batchId}.jsonl`),
        batchId,
        window: 4,
        pollIntervalMs: 100,
        historyThreshold: 30,
        compact: true,
      });
      const handle = await startBatchWorkflow(client, taskQueue, prepared, {
        store: await batchTestStore(),
      });
      const first = await handle.describe();
      expect(await first.staticSummary()).toBe('batch of 24 person_enrichment rows');
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 24 });
      expect(summary.runs).toBeGreaterThanOrEqual(2);
      // The last run is not the first one, and shows the same summary all the same.
      const last = await client.workflow.getHandle(handle.workflowId).describe();
      expect(last.runId).not.toBe(first.runId);
      const details = await currentDetails(client, handle.workflowId);
      expect(details.split('\n').slice(0, 3)).toEqual([
        `batch of 24 person_enrichment rows (run ${summary.runs})`,
        `input ${input}`,
        `output ${prepared.input.output}`,
      ]);
      expect(details).toContain('done: 24/24 rows');
    });
  }, 150_000);

  it("a compact row's heartbeat details hold its row, phase and request id, and keep them", async () => {
    const rows = rowsOf(1);
    const input = writeCsv(dir, 'beat.csv', rows, ['email']);
    await withWorker({ activities: slow.worker.activities }, async ({ client, taskQueue }) => {
      const batchId = uniqueBatchId('ui-beat');
      const prepared = await prepareBatch({
        input,
        output: join(dir, `${batchId}.jsonl`),
        batchId,
        // Many polls, each a request with its own heartbeats: they must not erase the row's.
        pollIntervalMs: 200,
        compact: true,
      });
      const handle = await startBatchWorkflow(client, taskQueue, prepared, {
        store: await batchTestStore(),
      });
      const seen: unknown[] = [];
      try {
        // Past the first heartbeat throttle interval (0.8 x the 30 s heartbeat timeout).
        const until = Date.now() + 40_000;
        while (Date.now() < until) {
          const { raw } = await handle.describe();
          const row = raw.pendingActivities?.find((a) => a.activityType?.name === 'runBatchRow');
          const payloads = row?.heartbeatDetails?.payloads;
          if (payloads?.length) {
            const [details] = await decodeArrayFromPayloads(
              client.options.loadedDataConverter,
              payloads,
            );
            seen.push(details);
          }
          await new Promise((r) => setTimeout(r, 1_000));
        }
      } finally {
        await handle.terminate('test over');
      }
      expect(seen.length).toBeGreaterThan(10);
      // Every reading names the row; once accepted, its request id too.
      for (const d of seen) expect(d).toMatchObject({ row: 1 });
      const polling = seen.filter((d) => (d as { phase?: unknown }).phase === 'polling') as Record<
        string,
        unknown
      >[];
      expect(polling.length).toBeGreaterThan(0);
      expect(polling.at(-1)).toEqual({
        row: 1,
        phase: 'polling',
        keyId: expect.any(String) as string,
        requestId: expect.stringMatching(/\S/) as string,
      });
      // No parameter value rides along.
      expect(JSON.stringify(seen)).not.toContain(rows[0].email);
    });
  }, 120_000);
});
