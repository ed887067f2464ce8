// Batches in webhook mode: a receiver that stops and starts again while rows are in flight
// loses nothing (the deliveries that found it down come again), and rows whose deliveries are
// lost complete by the slow fallback poll. One line per row, each row submitted once.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchProgressQuery } from '../../src/batch/messages.js';
import type { BatchInput, ResultLine } from '../../src/batch/types.js';
import { batchWorkflowId } from '../../src/temporal/workflow-ids.js';
import { sampleRows } from '../../src/emulator/index.js';
import { PcdsBatchId, PcdsEndpoint } from '../../src/temporal/search-attributes.js';
import type { batchWorkflow } from '../../src/workflows/batch.js';
import { BATCH_WORKFLOW_TYPE } from '../../src/workflows/type-names.js';
import { startWebhookEnv, withWebhookWorker, type WebhookEnv } from './webhook-env.js';

let env: WebhookEnv;
const POLL = 'GET /person/enrichment';

beforeAll(async () => {
  // Jobs of about 1 s (20 s at 0.05); a delivery that finds the receiver down is tried again
  // every 0.5 s (10 s scaled), up to 6 times: longer than the receiver stays down.
  env = await startWebhookEnv({
    latency: { queuedMs: 0, processingMs: 20_000 },
    webhooks: { retries: 6, retryDelayMs: 10_000, timeoutMs: 2_000 },
  });
});
afterAll(async () => {
  await env?.stop();
});

function batchFiles(rows: number) {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-webhook-batch-'));
  const input = join(dir, 'rows.csv');
  const output = join(dir, 'out.jsonl');
  const emails = sampleRows({ rows }).map((r) => r.email);
  writeFileSync(input, ['email', ...emails].join('\n') + '\n');
  return { input, output, emails };
}

function rowsWritten(output: string): number[] {
  return readFileSync(output, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ResultLine)
    .map((l) => {
      expect(l.outcome).toBe('found');
      return l.row;
    })
    .sort((a, b) => a - b);
}

let batchCounter = 0;

function startWebhookBatch(
  client: Client,
  taskQueue: string,
  files: { input: string; output: string },
  extra: Partial<BatchInput> = {},
) {
  const batchId = `webhook-batch-${process.pid}-${Date.now().toString(36)}-${++batchCounter}`;
  return client.workflow.start<typeof batchWorkflow>(BATCH_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: batchWorkflowId(batchId),
    args: [
      {
        batchId,
        endpoint: 'person_enrichment',
        source: { path: files.input, format: 'csv' },
        output: files.output,
        window: 6,
        // The environment's other keys fail on purpose (for the call tests).
        keyIds: ['dev'],
        webhooks: true,
        ...extra,
      },
    ],
    typedSearchAttributes: [
      { key: PcdsBatchId, value: batchId },
      { key: PcdsEndpoint, value: 'person_enrichment' },
    ],
  });
}

it('loses nothing when the receiver restarts mid-batch', async () => {
  const rows = 24;
  const files = batchFiles(rows);
  const before = env.emulator.stats();
  const pollsBefore = env.proxy.seen(POLL).length;

  await withWebhookWorker(
    env,
    { fallbackPollMs: 60_000 },
    async ({ client, receiver, taskQueue, restartReceiver }) => {
      const handle = await startWebhookBatch(client.temporal, taskQueue, files);

      // Mid-batch: some rows done, others waiting for their deliveries.
      await expect
        .poll(
          async () => (await handle.query(batchProgressQuery).catch(() => undefined))?.done ?? 0,
          {
            timeout: 30_000,
            interval: 100,
          },
        )
        .toBeGreaterThanOrEqual(4);
      const forwardedBefore = receiver.stats().signalled;
      await receiver.stop();
      const failuresAtStop = env.emulator.stats().webhookFailures;
      // Down long enough for completions to find it closed.
      await expect
        .poll(() => env.emulator.stats().webhookFailures, { timeout: 10_000, interval: 100 })
        .toBeGreaterThan(failuresAtStop);
      const restarted = await restartReceiver();

      expect(await handle.result()).toMatchObject({ total: rows, found: rows, failed: 0 });
      expect(rowsWritten(files.output)).toEqual(files.emails.map((_, i) => i + 1));
      // The restarted receiver took deliveries too, and no job was submitted twice.
      expect(forwardedBefore).toBeGreaterThan(0);
      expect(restarted.stats().signalled).toBeGreaterThan(0);
      const after = env.emulator.stats();
      expect(after.jobsSubmitted - before.jobsSubmitted).toBe(rows);
      expect(after.duplicateSubmits - before.duplicateSubmits).toBe(0);
      // Every row completed by a delivery: those refused while the receiver was down came again.
      expect(env.proxy.seen(POLL).length - pollsBefore).toBe(0);
    },
  );
});

it('completes rows whose deliveries are lost by the fallback poll', async () => {
  const rows = 12;
  const files = batchFiles(rows);
  const pollsBefore = env.proxy.seen(POLL).length;
  env.emulator.setFaults({ webhookDropShare: 0.5 });
  try {
    await withWebhookWorker(
      env,
      { fallbackPollMs: 60_000 },
      async ({ client, receiver, taskQueue }) => {
        // The batch's own fallback interval reaches its rows (the client's default here is 60 s).
        const handle = await startWebhookBatch(client.temporal, taskQueue, files, {
          webhookFallbackPollMs: 700,
        });
        expect(await handle.result()).toMatchObject({ total: rows, found: rows, failed: 0 });
        expect(rowsWritten(files.output)).toEqual(files.emails.map((_, i) => i + 1));
        const polls = env.proxy.seen(POLL).length - pollsBefore;
        const delivered = receiver.stats().signalled;
        // Some rows by delivery (no poll), the others by a few slow polls each.
        expect(delivered).toBeGreaterThan(0);
        expect(delivered).toBeLessThan(rows);
        expect(polls).toBeGreaterThanOrEqual(rows - delivered);
        expect(polls).toBeLessThanOrEqual(4 * (rows - delivered));
      },
    );
  } finally {
    env.emulator.setFaults({});
  }
});
