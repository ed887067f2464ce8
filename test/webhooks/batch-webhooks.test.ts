// Batches in webhook mode: a receiver that stops and starts again while rows are in flight
// loses nothing (the deliveries that found it down come again), and rows whose deliveries are
// lost complete by the slow fallback poll. One line per row, each row submitted once.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchProgressQuery } from '../../src/batch/messages.js';
import type { BatchInput } from '../../src/batch/types.js';
import { sampleRows } from '../../src/emulator/index.js';
import { lazyBatchStore, openStoreFromEnv, type LazyBatchStore } from '../../src/store/index.js';
import { readOutput, startCsvBatch, tempDir, writeCsv } from '../batch/fixtures.js';
import { startWebhookEnv, withWebhookWorker, type WebhookEnv } from './webhook-env.js';

let env: WebhookEnv;
let store: LazyBatchStore;
const POLL = 'GET /person/enrichment';
const dir = tempDir('webhook-batch');

beforeAll(async () => {
  // Jobs of about 1 s (20 s at 0.05); a delivery that finds the receiver down is tried again
  // every 0.5 s (10 s scaled), up to 6 times: longer than the receiver stays down.
  env = await startWebhookEnv({
    latency: { queuedMs: 0, processingMs: 20_000 },
    webhooks: { retries: 6, retryDelayMs: 10_000, timeoutMs: 2_000 },
  });
  // The store the batches' rows are loaded into (as the fixtures' startBatch does).
  store = lazyBatchStore(() => openStoreFromEnv(process.env));
});
afterAll(async () => {
  await store?.close();
  await env?.stop();
});

function rowsFile(name: string, rows: number) {
  const emails = sampleRows({ rows }).map((r) => r.email);
  const input = writeCsv(
    dir,
    `${name}.csv`,
    emails.map((email) => ({ email })),
    ['email'],
  );
  return { input, emails };
}

/** The rows with a result, in order; every one found. */
async function rowsWritten(output: string): Promise<number[]> {
  return (await readOutput(output))
    .map((l) => {
      expect(l.outcome).toBe('found');
      return l.row;
    })
    .sort((a, b) => a - b);
}

function startWebhookBatch(
  client: Client,
  taskQueue: string,
  input: string,
  extra: Partial<BatchInput> = {},
) {
  return startCsvBatch(client, taskQueue, 'webhook-batch', input, {
    window: 6,
    // The environment's other keys fail on purpose (for the call tests).
    keyIds: ['dev'],
    webhooks: true,
    ...extra,
  });
}

it('loses nothing when the receiver restarts mid-batch', async () => {
  const rows = 24;
  const files = rowsFile('restart', rows);
  const before = env.emulator.stats();
  const pollsBefore = env.proxy.seen(POLL).length;

  await withWebhookWorker(
    env,
    { fallbackPollMs: 60_000, store },
    async ({ client, receiver, taskQueue, restartReceiver }) => {
      const { handle, output } = await startWebhookBatch(client.temporal, taskQueue, files.input);

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
      expect(await rowsWritten(output)).toEqual(files.emails.map((_, i) => i + 1));
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
  const files = rowsFile('lost', rows);
  const pollsBefore = env.proxy.seen(POLL).length;
  env.emulator.setFaults({ webhookDropShare: 0.5 });
  try {
    await withWebhookWorker(
      env,
      { fallbackPollMs: 60_000, store },
      async ({ client, receiver, taskQueue }) => {
        // The batch's own fallback interval reaches its rows (the client's default here is 60 s).
        const { handle, output } = await startWebhookBatch(
          client.temporal,
          taskQueue,
          files.input,
          {
            webhookFallbackPollMs: 700,
          },
        );
        expect(await handle.result()).toMatchObject({ total: rows, found: rows, failed: 0 });
        expect(await rowsWritten(output)).toEqual(files.emails.map((_, i) => i + 1));
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
