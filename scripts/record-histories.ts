// Records the workflow histories that test/unit/replay replays against the current workflow code:
// its own dev server, the emulator and a worker with the project's workflows, one scenario per
// workflow type run to completion, each history saved as JSON under test/replay/histories.
// Rerun it only to cut a deliberate new baseline (see the README, "Upgrading workers").
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Client, type Connection, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { batchProgressQuery, pauseBatchSignal, resumeBatchSignal } from '../src/batch/messages.js';
import {
  batchWorkflowId,
  childWorkflowId,
  type BatchProgress,
  type BatchSummary,
} from '../src/batch/types.js';
import { callWorkflowId, createPcdsClient } from '../src/client.js';
import { sampleRows } from '../src/emulator/index.js';
import { unthrottled } from '../src/throttle/permits.js';
import { findOrInstallTemporalCli, projectRoot } from '../src/temporal/cli-binary.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { connectTemporalClient, connectTemporalNative } from '../src/temporal/connection.js';
import { idSecretFromSettings } from '../src/temporal/idempotency.js';
import { createWorkflowPermitGate } from '../src/worker/permit-gate.js';
import { throttleWorkflowId } from '../src/throttle/protocol.js';
import { callbackUrlsFor } from '../src/webhooks/callback-urls.js';
import { startWebhookReceiver } from '../src/webhooks/receiver.js';
import type { WebhookSettings } from '../src/webhooks/settings.js';
import { createWorker } from '../src/worker.js';
import type { SearchExportInput } from '../src/workflows/search-export.js';
import {
  configFor,
  fastEmulator,
  readOutput,
  startBatch,
  tempDir,
  writeCsv,
} from '../test/batch/fixtures.js';
import { holdsSecret, historyToJSON } from '../test/replay/history-json.js';

const HISTORIES_DIR = join(projectRoot(), 'test', 'replay', 'histories');
const TASK_QUEUE = 'replay-recording';
/**
 * The server suggests continue-as-new past this many events (its default is 4,096), so the
 * throttle workflow, which continues only on that suggestion or past 5,000 events, crosses runs
 * after a few dozen permits.
 */
const SUGGEST_CONTINUE_AS_NEW_EVENTS = 60;
/** Below the server's suggestion: the batch continues by its own threshold, the rule under test. */
const BATCH_HISTORY_THRESHOLD = 40;
/** Not a real secret, but the recorder proves it stays out of history like the others. */
const WEBHOOK_SECRET = 'replay-recording-webhook-secret';

type Recorded = Map<string, string>;

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await startDevServer({
    cliPath: await findOrInstallTemporalCli(),
    headless: true,
    logFile: join(projectRoot(), '.data', 'temporal', 'record-histories.log'),
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_EVENTS },
  });
  const emulator = await fastEmulator({ allowLoopbackCallbacks: true });
  const dir = tempDir('replay');
  const connection = await connectTemporalClient({ address: server.address });
  const nativeConnection = await connectTemporalNative({ address: server.address });
  // Recorded in clear: the replay test proves that the codec passes clear payloads through.
  const client = new Client({ connection, namespace: server.namespace });
  const settings: WebhookSettings = {
    publicUrl: 'http://127.0.0.1',
    current: { id: 'k1', secret: WEBHOOK_SECRET },
    previous: [],
    allowLoopback: true,
    fallbackPollMs: 60_000,
  };
  const quiet = { info: () => undefined, warn: () => undefined };
  const receiver = await startWebhookReceiver({
    settings,
    client,
    port: 0,
    host: '127.0.0.1',
    log: quiet,
  });
  const config = configFor(emulator, {
    PCDS_TEMPORAL_NAMESPACE: server.namespace,
    PCDS_ENCRYPTION: 'off',
  });
  const pcdsWorker = await createWorker({
    config,
    connection: nativeConnection,
    taskQueue: TASK_QUEUE,
    permits: unthrottled,
    callbackUrlFor: callbackUrlsFor({ ...settings, publicUrl: receiver.url }),
  });
  const running = pcdsWorker.run();
  const recorded: Recorded = new Map();
  try {
    await recordCalls(connection, server.namespace, recorded);
    await recordSearchExport(client, dir, recorded);
    await recordBatch(client, dir, recorded);
    await recordThrottle(client, recorded);

    const secrets = [
      emulator.devKey.key,
      emulator.devKey.secret,
      emulator.adminToken,
      WEBHOOK_SECRET,
    ];
    const leaks = [...recorded].filter(([, json]) => holdsSecret(json, secrets));
    if (leaks.length > 0) {
      throw new Error(
        `a secret appears in the histories of ${leaks.map(([name]) => name).join(', ')}; nothing was saved`,
      );
    }
    mkdirSync(HISTORIES_DIR, { recursive: true });
    for (const file of readdirSync(HISTORIES_DIR))
      if (file.endsWith('.json')) rmSync(join(HISTORIES_DIR, file));
    for (const [name, json] of recorded) {
      const path = join(HISTORIES_DIR, `${name}.json`);
      writeFileSync(path, json + '\n');
      process.stdout.write(
        `${relative(projectRoot(), path)}  ${(json.length / 1024).toFixed(1)} KiB\n`,
      );
    }
  } finally {
    pcdsWorker.shutdown();
    await running;
    await receiver.stop();
    await emulator.stop();
    await connection.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The id secret of the recording's idempotency keys (made for the run, never stored). */
const ID_SECRET = randomBytes(32).toString('base64');

/** An endpointCall by polling, one by webhook, and a personSearch over two pages. */
async function recordCalls(connection: Connection, namespace: string, recorded: Recorded) {
  const pcds = await createPcdsClient({
    connection,
    namespace,
    taskQueue: TASK_QUEUE,
    dataConverter: {},
    idSecret: ID_SECRET,
    defaults: { pollIntervalMs: 100, maxWaitMs: 60_000, webhookFallbackPollMs: 60_000 },
  });
  const [polled, delivered] = sampleRows({ rows: 2 });

  const polling = await pcds.startCall(
    'person_enrichment',
    { email: polled.email },
    {
      idempotencyKey: 'replay-polling',
    },
  );
  await polling.result();
  recorded.set('endpoint-call-polling', await historyOf(polling.workflow));

  const webhook = await pcds.startCall(
    'person_enrichment',
    { email: delivered.email },
    {
      idempotencyKey: 'replay-webhook',
      webhook: true,
    },
  );
  await webhook.result();
  const webhookJson = await historyOf(webhook.workflow);
  if (!webhookJson.includes('"webhookDelivered"'))
    throw new Error('the webhook call finished without a delivery: record again');
  recorded.set('endpoint-call-webhook', webhookJson);

  const search = await pcds.searchPeople(
    { query: 'engineer' },
    { maxResults: 6, pageSize: 3, idempotencyKey: 'replay-search' },
  );
  if (search.pages < 2) throw new Error(`the search read ${search.pages} page(s), not 2`);
  const searchHandle = pcds.temporal.workflow.getHandle(
    callWorkflowId(
      'person_search',
      'replay-search',
      undefined,
      idSecretFromSettings({ PCDS_ID_SECRET: ID_SECRET }),
    ).replace(/^call-/, 'search-'),
  );
  recorded.set('person-search', await historyOf(searchHandle));
  await pcds.close();
}

async function recordSearchExport(client: Client, dir: string, recorded: Recorded) {
  const input: SearchExportInput = {
    params: { query: 'engineer' },
    maxResults: 6,
    pageSize: 3,
    output: join(dir, 'export.jsonl'),
    exportId: 'replay-export',
    pollIntervalMs: 100,
    maxWaitMs: 60_000,
  };
  const handle = await client.workflow.start('pcdsSearchExport', {
    taskQueue: TASK_QUEUE,
    workflowId: 'export-replay',
    args: [input],
  });
  await handle.result();
  recorded.set('search-export', await historyOf(handle));
}

/**
 * A batch of 8 rows (found, empty and malformed) in a window of 2, paused by a signal once two
 * rows are done and resumed when its rows in flight have finished. Its small history threshold
 * makes it continue as new; every run is saved, and the call of one found row.
 */
async function recordBatch(client: Client, dir: string, recorded: Recorded) {
  const rows = sampleRows({ rows: 8, unknownShare: 0.25, badShare: 0.125 });
  const batchId = 'replay';
  const output = join(dir, 'batch.jsonl');
  const handle = await startBatch(client, TASK_QUEUE, {
    batchId,
    endpoint: 'person_enrichment',
    source: {
      path: writeCsv(
        dir,
        'leads.csv',
        rows.map((r) => ({ email: r.email })),
        ['email'],
      ),
      format: 'csv',
    },
    output,
    window: 2,
    chunkSize: 4,
    historyThreshold: BATCH_HISTORY_THRESHOLD,
    pollIntervalMs: 100,
  });
  const current = client.workflow.getHandle(batchWorkflowId(batchId));
  await until(current, (p) => p.done >= 2);
  await retried(() => current.signal(pauseBatchSignal, { reason: 'replay recording' }));
  await until(current, (p) => p.state === 'paused' && p.inFlight === 0);
  await retried(() => current.signal(resumeBatchSignal));
  const summary: BatchSummary = await current.result();
  if (summary.runs < 2 || summary.done !== rows.length)
    throw new Error(`the batch ended with ${JSON.stringify(summary)}: expected 2+ runs, 8 rows`);

  const runs: string[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  while (runId) {
    const run: WorkflowHandle = client.workflow.getHandle(batchWorkflowId(batchId), runId);
    const history = await run.fetchHistory();
    runs.push(historyToJSON(history));
    runId =
      history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ??
      undefined;
  }
  const all = runs.join('\n');
  if (!all.includes('"pauseBatch"') || !all.includes('"resumeBatch"'))
    throw new Error('the pause and resume signals are missing from the batch history');
  runs.forEach((json, i) => recorded.set(`batch-run-${i + 1}`, json));

  const found = (await readOutput(output)).find((line) => line.outcome === 'found');
  if (!found) throw new Error('no row of the batch was found');
  const row = client.workflow.getHandle(childWorkflowId(batchId, found.row));
  recorded.set('batch-row', await historyOf(row));
}

/**
 * The throttle of one key through the permit gate, as activities use it: permits of both kinds,
 * the credit breaker opened and reset, until it has continued as new twice; the first two runs
 * are saved.
 */
async function recordThrottle(client: Client, recorded: Recorded) {
  const keyId = 'replay';
  const gate = createWorkflowPermitGate({
    client,
    taskQueue: TASK_QUEUE,
    keys: [{ id: keyId }],
    defaultLimits: { perMinute: 1_000, perHour: 100_000 },
  });
  await gate.acquire(keyId, 'submit');
  const first = await client.workflow.getHandle(throttleWorkflowId(keyId)).describe();
  await gate.creditsExhausted(keyId);
  await gate.resetCredits(keyId, 'replay recording');

  const runIds = [first.runId];
  for (let i = 0; runIds.length < 3; i++) {
    if (i >= 200) throw new Error('the throttle did not continue as new after 200 permits');
    await gate.acquire(keyId, i % 3 === 0 ? 'submit' : 'poll');
    const last = client.workflow.getHandle(throttleWorkflowId(keyId), runIds.at(-1));
    const { status } = await last.describe();
    if (status.name !== 'CONTINUED_AS_NEW') continue;
    const history = await last.fetchHistory();
    const next =
      history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    if (!next) throw new Error('a throttle run continued as new without naming the next run');
    runIds.push(next);
  }
  for (const [i, runId] of runIds.slice(0, 2).entries()) {
    const run = client.workflow.getHandle(throttleWorkflowId(keyId), runId);
    recorded.set(`throttle-run-${i + 1}`, await historyOf(run));
  }
}

async function historyOf(handle: WorkflowHandle): Promise<string> {
  return historyToJSON(await handle.fetchHistory());
}

/** Waits for the batch's progress (any run) to satisfy `ok`. */
async function until(handle: WorkflowHandle, ok: (p: BatchProgress) => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    // Between two runs a query can fail: ask again.
    const progress = await handle.query(batchProgressQuery).catch(() => undefined);
    if (progress && ok(progress)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the batch did not reach the expected state within 60 s');
}

/** A signal sent while a run hands over to the next may fail once: send it again. */
async function retried(send: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      if (attempt >= 5) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`record-histories: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
