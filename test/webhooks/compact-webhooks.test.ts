// Compact batches in webhook mode: a row has no workflow, so the receiver keeps its delivery in
// the store and the row's activity takes it as its poll's reply. Every row ends once with its
// line and is submitted once; its result comes by delivery (no poll), or by the fallback poll
// when the delivery is lost, and a row whose worker stopped finds its delivery in the store.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchWorkflowId } from '../../src/contract/workflow-ids.js';
import { sampleRows } from '../../src/emulator/index.js';
import type { batchWorkflow } from '../../src/workflows/batch.js';
import { lazyBatchStore, openStoreFromEnv, type LazyBatchStore } from '../../src/store/index.js';
import { readOutput, startCsvBatch, tempDir, writeCsv } from '../batch/fixtures.js';
import { startWebhookEnv, withWebhookWorker, type WebhookEnv } from './webhook-env.js';

let env: WebhookEnv;
let store: LazyBatchStore;
const POLL = 'GET /person/enrichment';
const dir = tempDir('compact-webhooks');

beforeAll(async () => {
  // Jobs of about 1 s (20 s at 0.05).
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

function rowsFile(name: string, rows: number): string {
  const people = sampleRows({ rows }).map((r) => ({ email: r.email }));
  return writeCsv(dir, `${name}.csv`, people, ['email']);
}

it('ends every row once with the result its delivery brought, without a poll', async () => {
  const rows = 16;
  const input = rowsFile('delivered', rows);
  const before = env.emulator.stats();
  const pollsBefore = env.proxy.seen(POLL).length;
  await withWebhookWorker(
    env,
    { fallbackPollMs: 60_000, store, deliveryCheckMs: 200 },
    async ({ client, receiver, taskQueue }) => {
      const { handle, batchId, output } = await startCsvBatch(
        client.temporal,
        taskQueue,
        'compact-hooks',
        input,
        {
          window: 8,
          compact: true,
          webhooks: true,
          webhookFallbackPollMs: 60_000,
          // The environment's other keys fail on purpose (for the call tests).
          keyIds: ['dev'],
        },
      );
      expect(await handle.result()).toMatchObject({ total: rows, found: rows, failed: 0 });
      const lines = await readOutput(output);
      expect(lines.map((l) => l.row).sort((a, b) => a - b)).toEqual(
        Array.from({ length: rows }, (_, i) => i + 1),
      );
      expect(lines.every((l) => l.outcome === 'found' && l.result !== undefined)).toBe(true);
      // Each row submitted once; every result came by delivery: not one poll in a minute's wait.
      const after = env.emulator.stats();
      expect(after.jobsSubmitted - before.jobsSubmitted).toBe(rows);
      expect(after.duplicateSubmits - before.duplicateSubmits).toBe(0);
      expect(env.proxy.seen(POLL).length - pollsBefore).toBe(0);
      expect(receiver.stats()).toMatchObject({ stored: rows, signalled: 0 });
      // A row that ended keeps no delivery in the store.
      const kept = await store.get();
      for (const l of lines)
        expect(await kept.deliveries(batchId, l.row, l.requestId!)).toEqual([]);
    },
  );
}, 120_000);

it('ends rows whose deliveries are lost by the fallback poll', async () => {
  const rows = 12;
  const input = rowsFile('lost', rows);
  const before = env.emulator.stats();
  const pollsBefore = env.proxy.seen(POLL).length;
  env.emulator.setFaults({ webhookDropShare: 0.5 });
  try {
    await withWebhookWorker(
      env,
      { fallbackPollMs: 60_000, store, deliveryCheckMs: 200 },
      async ({ client, receiver, taskQueue }) => {
        const { handle, output } = await startCsvBatch(
          client.temporal,
          taskQueue,
          'compact-hooks-lost',
          input,
          {
            window: 6,
            compact: true,
            webhooks: true,
            webhookFallbackPollMs: 700,
            keyIds: ['dev'],
          },
        );
        expect(await handle.result()).toMatchObject({ total: rows, found: rows, failed: 0 });
        const lines = await readOutput(output);
        expect(new Set(lines.map((l) => l.row)).size).toBe(rows);
        expect(lines).toHaveLength(rows);
        const after = env.emulator.stats();
        expect(after.jobsSubmitted - before.jobsSubmitted).toBe(rows);
        // Some rows by delivery (no poll), the others by a few slow polls each.
        const delivered = receiver.stats().stored;
        const polls = env.proxy.seen(POLL).length - pollsBefore;
        expect(delivered).toBeGreaterThan(0);
        expect(delivered).toBeLessThan(rows);
        expect(polls).toBeGreaterThanOrEqual(rows - delivered);
        expect(polls).toBeLessThanOrEqual(4 * (rows - delivered));
      },
    );
  } finally {
    env.emulator.setFaults({});
  }
}, 120_000);

it('a row whose worker stopped while it waited takes its delivery from the store', async () => {
  const rows = 3;
  const input = rowsFile('handover', rows);
  const before = env.emulator.stats();
  const pollsBefore = env.proxy.seen(POLL).length;
  const taskQueue = `compact-hooks-handover-${process.pid}-${Date.now().toString(36)}`;
  let started: Awaited<ReturnType<typeof startCsvBatch>> | undefined;
  // The first worker's rows look in the store once, then wait past their deliveries: it stops
  // once the receiver has kept them all, with the rows still waiting.
  await withWebhookWorker(
    env,
    { fallbackPollMs: 60_000, store, deliveryCheckMs: 10 * 60_000, taskQueue },
    async ({ client, receiver }) => {
      started = await startCsvBatch(client.temporal, taskQueue, 'compact-hooks-handover', input, {
        window: rows,
        compact: true,
        webhooks: true,
        webhookFallbackPollMs: 60_000,
        keyIds: ['dev'],
      });
      await expect
        .poll(() => receiver.stats().stored, { timeout: 30_000, interval: 100 })
        .toBe(rows);
      expect((await started.handle.describe()).status.name).toBe('RUNNING');
    },
  );
  // Another worker: the rows' retried attempts find their jobs accepted and their deliveries kept.
  await withWebhookWorker(
    env,
    { fallbackPollMs: 60_000, store, deliveryCheckMs: 200, taskQueue },
    async ({ client }) => {
      const handle = client.temporal.workflow.getHandle<typeof batchWorkflow>(
        batchWorkflowId(started!.batchId),
      );
      expect(await handle.result()).toMatchObject({ total: rows, found: rows });
    },
  );
  expect(await readOutput(started!.output)).toHaveLength(rows);
  const after = env.emulator.stats();
  expect(after.jobsSubmitted - before.jobsSubmitted).toBe(rows);
  expect(env.proxy.seen(POLL).length - pollsBefore).toBe(0);
}, 180_000);
