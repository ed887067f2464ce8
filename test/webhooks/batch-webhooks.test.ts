// A batch in webhook mode whose receiver stops and starts again while rows are in flight: the
// deliveries that found it down are delivered again (or polled for), and the output still has
// exactly one line per row, each submitted once.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { batchProgressQuery } from '../../src/batch/messages';
import { batchWorkflowId, type ResultLine } from '../../src/batch/types';
import { sampleRows } from '../../src/emulator';
import { PcdsBatchId, PcdsEndpoint } from '../../src/temporal/search-attributes';
import { batchWorkflow } from '../../src/workflows/batch';
import { startWebhookEnv, withWebhookWorker, type WebhookEnv } from './webhook-env';

let env: WebhookEnv;
const ROWS = 24;

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

it('loses nothing when the receiver restarts mid-batch', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-webhook-restart-'));
  const input = join(dir, 'rows.csv');
  const output = join(dir, 'out.jsonl');
  const emails = sampleRows({ rows: ROWS }).map((r) => r.email);
  writeFileSync(input, ['email', ...emails].join('\n') + '\n');
  const before = env.emulator.stats();

  await withWebhookWorker(
    env,
    { fallbackPollMs: 60_000 },
    async ({ client, receiver, taskQueue, restartReceiver }) => {
      const batchId = `webhook-restart-${process.pid}-${Date.now().toString(36)}`;
      const handle = await client.temporal.workflow.start(batchWorkflow, {
        taskQueue,
        workflowId: batchWorkflowId(batchId),
        args: [
          {
            batchId,
            endpoint: 'person_enrichment',
            source: { path: input, format: 'csv' },
            output,
            window: 6,
            // The environment's other keys fail on purpose (for the call tests).
            keyIds: ['dev'],
            webhooks: true,
          },
        ],
        typedSearchAttributes: [
          { key: PcdsBatchId, value: batchId },
          { key: PcdsEndpoint, value: 'person_enrichment' },
        ],
      });

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

      const summary = await handle.result();
      expect(summary).toMatchObject({ total: ROWS, found: ROWS, failed: 0 });
      const lines = readFileSync(output, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as ResultLine);
      expect(lines.map((l) => l.row).sort((a, b) => a - b)).toEqual(emails.map((_, i) => i + 1));
      expect(lines.every((l) => l.outcome === 'found')).toBe(true);
      // The restarted receiver took deliveries too, and no job was submitted twice.
      expect(forwardedBefore).toBeGreaterThan(0);
      expect(restarted.stats().signalled).toBeGreaterThan(0);
      const after = env.emulator.stats();
      expect(after.jobsSubmitted - before.jobsSubmitted).toBe(ROWS);
      expect(after.duplicateSubmits - before.duplicateSubmits).toBe(0);
      // Every row completed by a delivery: those refused while the receiver was down came again.
      expect(env.proxy.seen('GET /person/enrichment')).toHaveLength(0);
    },
  );
});
