// Requests per completed row, and rows per hour of a key's rate budget, for the same rows in
// webhook mode, in polling mode (independent calls on the default schedule: the baseline) and in
// a polling batch that learns its jobs' duration, in one run: a real Temporal dev server, the
// worker's activities and the emulator over HTTP with realistic, time-scaled job latency.
//   npx tsx bench/webhooks.ts [rows] [timeScale] [batchWindow]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import { temporalClient } from '../src/temporal/data-converter.js';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../src/config.js';
import { sampleRows, startEmulator } from '../src/emulator/index.js';
import { batchProgressQuery } from '../src/batch/messages.js';
import type { BatchInput, BatchSummary } from '../src/batch/types.js';
import { batchWorkflowId, rowWorkflowId } from '../src/contract/workflow-ids.js';
import { registerSearchAttributes, startDevServer } from '../src/temporal/index.js';
import { callbackUrlsFor } from '../src/webhooks/callback-urls.js';
import { startWebhookReceiver } from '../src/webhooks/receiver.js';
import type { WebhookSettings } from '../src/webhooks/settings.js';
import { createWorker } from '../src/worker.js';
import type { EndpointCallInput } from '../src/workflows/index.js';
import type { CallOutcome } from '../src/calls/types.js';

const rows = Number(process.argv[2] ?? 40);
// Above about 2 (times faster), worker and server overheads rival the scaled job latency and hide polls.
const timeScale = Number(process.argv[3] ?? 1);
// Rows in flight in the batch: the batch learns from the rows that finished, so it needs waves.
const batchWindow = Number(process.argv[4] ?? 8);
const HOURLY_LIMIT = 1000;
// Seconds of the service, before the time scale: a deep enrichment takes several seconds;
// polls start at about one a second (the interface's cadence) and back off to 15 s.
const LATENCY = { queuedMs: 1_000, processingMs: 5_000 };
const POLL = { pollIntervalMs: 1_000, maxPollIntervalMs: 15_000, webhookFallbackPollMs: 60_000 };

Runtime.install({ logger: new DefaultLogger('WARN') });

const temporal = await startDevServer({ headless: true, logLevel: 'error' });
const emulator = await startEmulator({
  port: 0,
  timeScale,
  latency: LATENCY,
  // The budget is computed from the request count, so the limiter stays out of the timing.
  limits: { enabled: false },
  allowLoopbackCallbacks: true,
});
const nativeConnection = await NativeConnection.connect({ address: temporal.address });
const connection = await Connection.connect({ address: temporal.address });
await registerSearchAttributes(nativeConnection, temporal.namespace);

const config = loadConfig({
  PCDS_BASE_URL: emulator.url,
  PCDS_API_KEYS: JSON.stringify([emulator.devKey]),
  PCDS_THROTTLE: 'off',
  PCDS_TEMPORAL_NAMESPACE: temporal.namespace,
  PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
});
const client = temporalClient(connection, config);
const settings: WebhookSettings = {
  publicUrl: 'http://127.0.0.1',
  current: { id: 'k1', secret: 'bench-webhook-secret-0123456789' },
  previous: [],
  allowLoopback: true,
  fallbackPollMs: POLL.webhookFallbackPollMs,
};
const receiver = await startWebhookReceiver({
  settings,
  client,
  port: 0,
  host: '127.0.0.1',
  log: { info: () => {}, warn: (f, m) => console.error(m, f) },
});
const taskQueue = `bench-webhooks-${process.pid}`;
const pcds = await createWorker({
  config,
  connection: nativeConnection,
  taskQueue,
  callbackUrlFor: callbackUrlsFor({ ...settings, publicUrl: receiver.url }),
  workerOptions: { maxConcurrentActivityTaskExecutions: 200 },
});
const running = pcds.run();

const sample = sampleRows({ rows: rows + 5 }).map((r) => r.email);
let run = 0;

interface ModeFigures {
  mode: string;
  rows: number;
  requests: number;
  submits: number;
  polls: number;
  seconds: number;
  outcomes: Record<string, number>;
}

const scaled = (ms: number) => Math.max(1, Math.round(ms / timeScale));
const emulatorCounts = () => {
  const requests = emulator.stats().requests;
  const count = (prefix: string) =>
    Object.entries(requests)
      .filter(([route]) => route.startsWith(prefix))
      .reduce((sum, [, n]) => sum + n, 0);
  return { requests: count(''), submits: count('POST '), polls: count('GET ') };
};
const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-webhooks-'));

/** The rows as one polling batch; its first rows poll on the default schedule while it learns. */
async function runBatch(
  emails: string[],
): Promise<ModeFigures & { jobMsEstimate?: number; learnedPerRow?: number }> {
  emulator.reset();
  run += 1;
  const source = join(dir, `rows-${run}.csv`);
  writeFileSync(source, ['email', ...emails].join('\n') + '\n');
  const input: BatchInput = {
    batchId: `bench-${process.pid}-${run}`,
    endpoint: 'person_enrichment',
    source: { path: source, format: 'csv' },
    output: join(dir, `out-${run}.jsonl`),
    window: batchWindow,
    pollIntervalMs: scaled(POLL.pollIntervalMs),
    maxWaitMs: 10 * 60_000,
  };
  const started = Date.now();
  const handle = await client.workflow.start('pcdsBatch', {
    taskQueue,
    workflowId: batchWorkflowId(input.batchId),
    args: [input],
  });
  const summary = (await handle.result()) as BatchSummary;
  const progress = await handle.query(batchProgressQuery);
  // Rows started after the first two windows: by then the batch has learned (1 submit + polls each).
  const later = [];
  for (let row = 2 * batchWindow + 1; row <= emails.length; row++) {
    const outcome = (await client.workflow
      .getHandle(rowWorkflowId(input.batchId, row))
      .result()) as CallOutcome;
    if (outcome.outcome !== 'failed' && outcome.timing) later.push(1 + outcome.timing.polls);
  }
  return {
    mode: 'batch',
    rows: summary.done,
    ...emulatorCounts(),
    seconds: (Date.now() - started) / 1000,
    outcomes: { found: summary.found, empty: summary.empty, failed: summary.failed },
    ...(progress.jobMsEstimate !== undefined ? { jobMsEstimate: progress.jobMsEstimate } : {}),
    ...(later.length > 0 ? { learnedPerRow: later.reduce((a, b) => a + b, 0) / later.length } : {}),
  };
}

async function runMode(mode: 'polling' | 'webhook', emails: string[]): Promise<ModeFigures> {
  emulator.reset();
  run += 1;
  const started = Date.now();
  const handles = await Promise.all(
    emails.map((email, i) => {
      const input: EndpointCallInput = {
        endpoint: 'person_enrichment',
        params: { email },
        pollIntervalMs: scaled(POLL.pollIntervalMs),
        maxPollIntervalMs: scaled(POLL.maxPollIntervalMs),
        webhookFallbackPollMs: scaled(POLL.webhookFallbackPollMs),
        maxWaitMs: 10 * 60_000,
        ...(mode === 'webhook' ? { webhook: true } : {}),
      };
      return client.workflow.start('pcdsEndpointCall', {
        taskQueue,
        workflowId: `bench-${mode}-${process.pid}-${run}-${i}`,
        args: [input],
      });
    }),
  );
  const outcomes: Record<string, number> = {};
  for (const h of handles) {
    const out = (await h.result().catch(() => ({ outcome: 'failed' }))) as Pick<
      CallOutcome,
      'outcome'
    >;
    outcomes[out.outcome] = (outcomes[out.outcome] ?? 0) + 1;
  }
  const seconds = (Date.now() - started) / 1000;
  await emulator.drainWebhooks();
  return { mode, rows: handles.length, ...emulatorCounts(), seconds, outcomes };
}

try {
  // Warm-up (not counted): the first workflow tasks of a fresh worker are slow.
  await runMode('webhook', sample.slice(rows));
  await runMode('polling', sample.slice(rows));
  const polling = await runMode('polling', sample.slice(0, rows));
  const webhook = await runMode('webhook', sample.slice(0, rows));
  const batch = await runBatch(sample.slice(0, rows));
  const perRow = (f: ModeFigures) => f.requests / f.rows;
  const perHour = (f: ModeFigures) => (f.rows / f.requests) * HOURLY_LIMIT;
  console.log(
    `${rows} person_enrichment rows, jobs of ${(LATENCY.queuedMs + LATENCY.processingMs) / 1000} s (${timeScale} times faster), ` +
      `polls from ${POLL.pollIntervalMs / 1000} s backing off to ${POLL.maxPollIntervalMs / 1000} s, webhook fallback poll ${POLL.webhookFallbackPollMs / 1000} s`,
  );
  for (const f of [polling, batch, webhook]) {
    console.log(
      `${f.mode.padEnd(8)} ${perRow(f).toFixed(2).padStart(5)} requests/row   ${Math.round(perHour(f)).toString().padStart(5)} rows/hour of a ${HOURLY_LIMIT}-request budget   ` +
        `(${f.requests} requests: ${f.submits} submits, ${f.polls} polls; ${f.seconds.toFixed(1)} s; outcomes ${JSON.stringify(f.outcomes)})`,
    );
  }
  console.log(
    `batch: polling rows ${batchWindow} at a time, first polls learned from the finished rows ` +
      `(job estimate ${batch.jobMsEstimate ?? '-'} ms); rows after the first ${2 * batchWindow}: ` +
      `${batch.learnedPerRow?.toFixed(2) ?? '-'} requests/row; batch / polling: ` +
      `${(perHour(batch) / perHour(polling)).toFixed(2)}x rows per hour of budget`,
  );
  console.log(
    `webhook / polling: ${(perHour(webhook) / perHour(polling)).toFixed(2)}x rows per hour of budget; ` +
      `receiver forwarded ${receiver.stats().signalled}, refused ${receiver.stats().refused}`,
  );
  console.log(
    perRow(webhook) <= 1.05
      ? 'aim met: about 1.0 request per row in webhook mode'
      : 'aim missed: above 1.05 requests per row in webhook mode',
  );
} finally {
  pcds.shutdown();
  await running;
  await receiver.stop();
  await connection.close();
  await nativeConnection.close();
  await emulator.stop();
  await temporal.stop();
}
