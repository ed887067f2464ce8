// Records the workflow histories that test/unit/replay replays against the current workflow code:
// its own dev server, the emulator and a worker with the project's workflows, one scenario per
// workflow type run to completion, each history saved as JSON under test/replay/histories.
// Rerun it only to cut a deliberate new baseline (see docs/upgrading.md); named
// scenarios (`... batch-reset`) record only theirs and keep the other files.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import {
  Client,
  WorkflowFailedError,
  type Connection,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { batchProgressQuery, pauseBatchSignal, resumeBatchSignal } from '../src/batch/messages.js';
import type { BatchInput, BatchProgress, BatchSummary } from '../src/batch/types.js';
import { batchWorkflowId, rowWorkflowId } from '../src/contract/workflow-ids.js';
import { callWorkflowId, createPcdsClient } from '../src/client.js';
import { sampleRows, startEmulator } from '../src/emulator/index.js';
import { loadConfig } from '../src/config.js';
import { unthrottled } from '../src/throttle/permits.js';
import {
  OPERATOR_TENANT,
  backgroundRequester,
  batchRequester,
  interactiveRequester,
} from '../src/contract/index.js';
import { TenantBudgetError } from '../src/throttle/permits.js';
import { findOrInstallTemporalCli, projectRoot } from '../src/temporal/cli-binary.js';
import { startDevServer } from '../src/temporal/dev-server.js';
import { connectTemporalClient, connectTemporalNative } from '../src/temporal/connection.js';
import { idSecretFromSettings } from '../src/codec/idempotency.js';
import { createWorkflowPermitGate } from '../src/worker/permit-gate.js';
import { throttleWorkflowId } from '../src/throttle/protocol.js';
import { callbackUrlsFor } from '../src/webhooks/callback-urls.js';
import { startWebhookReceiver } from '../src/webhooks/receiver.js';
import type { WebhookSettings } from '../src/webhooks/settings.js';
import { PcdsBatchId, PcdsEndpoint } from '../src/temporal/search-attributes.js';
import { createWorker } from '../src/worker.js';
import {
  lazyBatchStore,
  loadFileIntoStore,
  openStoreFromEnv,
  type StoreRoles,
} from '../src/store/index.js';
import type { pcdsEndpointCall } from '../src/workflows/endpoint-call.js';
import { BATCH_WORKFLOW_TYPE } from '../src/temporal/workflow-types.js';
import type { SearchExportInput } from '../src/workflows/search-export.js';
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

/**
 * The scenarios, every one by default or those named on the command line: calls (polling,
 * webhook, person search), search-calls (person_search calls), search-export, batch-reset,
 * stored-batches (batches over the store, in both modes, and one row's call), throttle.
 */
const SCENARIOS = [
  'calls',
  'search-calls',
  'search-export',
  'batch-reset',
  'stored-batches',
  'throttle',
] as const;
type Scenario = (typeof SCENARIOS)[number];

function scenariosFromArgs(args: string[]): Set<Scenario> {
  const isScenario = (a: string): a is Scenario => (SCENARIOS as readonly string[]).includes(a);
  const unknown = args.filter((a) => !isScenario(a));
  if (unknown.length > 0)
    throw new Error(`no scenario named ${unknown.join(', ')}; scenarios: ${SCENARIOS.join(', ')}`);
  return new Set(args.length > 0 ? args.filter(isScenario) : SCENARIOS);
}

async function main(): Promise<void> {
  const named = process.argv.length > 2;
  const scenarios = scenariosFromArgs(process.argv.slice(2));
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await startDevServer({
    cliPath: await findOrInstallTemporalCli(),
    headless: true,
    logFile: join(projectRoot(), '.data', 'temporal', 'record-histories.log'),
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': SUGGEST_CONTINUE_AS_NEW_EVENTS },
  });
  const emulator = await startEmulator({
    port: 0,
    latency: { queuedMs: 20, processingMs: 40 },
    limits: { enabled: false },
    allowLoopbackCallbacks: true,
  });
  const dir = mkdtempSync(join(tmpdir(), 'pcds-replay-'));
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
  const config = loadConfig({
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEY: emulator.devKey.key,
    PCDS_API_SECRET: emulator.devKey.secret,
    PCDS_THROTTLE: 'off',
    PCDS_TEMPORAL_NAMESPACE: server.namespace,
    PCDS_ENCRYPTION: 'off',
    // Stored batches keep their rows and results in a store of the recording's own.
    PCDS_DATA_DIR: dir,
    PCDS_ID_SECRET: ID_SECRET,
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
    if (scenarios.has('calls')) await recordCalls(connection, server.namespace, recorded);
    if (scenarios.has('search-calls'))
      await recordSearchCalls(connection, server.namespace, recorded);
    if (scenarios.has('search-export')) await recordSearchExport(client, dir, recorded);
    if (scenarios.has('batch-reset'))
      await recordBatchReset(client, server.namespace, dir, recorded);
    if (scenarios.has('stored-batches')) await recordStoredBatches(client, dir, recorded);
    if (scenarios.has('throttle')) await recordThrottle(client, recorded);

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
    // A whole new set replaces the old one; named scenarios replace only their own files.
    if (!named)
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

/**
 * Two person_search calls after a first one: a page POST on the finished search, which the
 * service completes at once, so the call reads its page by GET (call-search-reads-immediate-page),
 * and a call given the search's cursor, started as a batch row would be since the client refuses
 * it: it ends invalid_params (call-search-refuses-cursor).
 */
async function recordSearchCalls(connection: Connection, namespace: string, recorded: Recorded) {
  const pcds = await createPcdsClient({
    connection,
    namespace,
    taskQueue: TASK_QUEUE,
    dataConverter: {},
    idSecret: ID_SECRET,
    defaults: { pollIntervalMs: 100, maxWaitMs: 60_000 },
  });
  const first = await (
    await pcds.startCall(
      'person_search',
      { query: 'engineer', limit: 3 },
      { idempotencyKey: 'replay-search-first' },
    )
  ).result();
  const cursor = first.outcome === 'found' ? first.page?.next_cursor : undefined;
  if (typeof cursor !== 'string') throw new Error('the first search handed out no cursor');

  const page = await pcds.startCall(
    'person_search',
    { request_id: first.requestId, offset: 3, limit: 3 },
    { idempotencyKey: 'replay-search-page' },
  );
  const read = await page.result();
  const pageJson = await historyOf(page.workflow);
  if (read.outcome !== 'found' || !pageJson.includes('"pollCall"'))
    throw new Error('the page call read no rows by GET: record again');
  recorded.set('endpoint-call-search-page', pageJson);

  const byCursor = await pcds.temporal.workflow.start<typeof pcdsEndpointCall>('pcdsEndpointCall', {
    taskQueue: TASK_QUEUE,
    workflowId: 'call-replay-search-cursor',
    args: [{ endpoint: 'person_search', params: { cursor }, pollIntervalMs: 100 }],
  });
  const refused = await byCursor.result().then(
    () => undefined,
    (err: unknown) => err,
  );
  const cause = refused instanceof WorkflowFailedError ? refused.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'invalid_params')
    throw new Error('the call given a cursor did not end invalid_params');
  recorded.set('endpoint-call-search-cursor', await historyOf(byCursor));
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
 * A batch of 4 rows run to completion, then reset to the end of its first workflow task, as an
 * operator does in the Web UI: the run after the reset finds every row's call already run and
 * takes each one's outcome (batch-row-already-run-takes-its-outcome). That run is saved.
 */
async function recordBatchReset(
  client: Client,
  namespace: string,
  dir: string,
  recorded: Recorded,
) {
  const rows = sampleRows({ rows: 4, unknownShare: 0.25 });
  const batchId = 'replay-reset';
  const source = {
    path: writeCsv(
      dir,
      'reset.csv',
      rows.map((r) => r.email ?? ''),
    ),
    format: 'csv' as const,
  };
  await withRecordingStore(dir, (store) =>
    loadFileIntoStore(store, { batchId, endpoint: 'person_enrichment', source, dedupe: true }),
  );
  const handle = await startBatch(client, TASK_QUEUE, {
    batchId,
    endpoint: 'person_enrichment',
    source,
    output: join(dir, 'reset.jsonl'),
    store: true,
    window: 2,
    pollIntervalMs: 100,
  });
  const first: BatchSummary = await handle.result();
  if (first.done !== rows.length || first.failed !== 0)
    throw new Error(`the batch ended with ${JSON.stringify(first)}: expected 4 rows, none failed`);
  const reset = await resetToFirstTask(client, namespace, batchId, handle.firstExecutionRunId);
  const again: BatchSummary = await reset.result();
  if (again.done !== rows.length || again.failed !== 0 || again.found !== first.found)
    throw new Error(`the reset batch ended with ${JSON.stringify(again)}, not as its first run`);
  const json = await historyOf(reset);
  if (!json.includes('"existingRowOutcome"'))
    throw new Error('the reset batch read no earlier call of its rows: record again');
  recorded.set('batch-reset', json);
}

/** Runs `fn` with the recording's own store (the worker's: PCDS_DATA_DIR is `dir`). */
async function withRecordingStore<T>(dir: string, fn: (store: StoreRoles) => Promise<T>) {
  const store = lazyBatchStore(() =>
    openStoreFromEnv({ PCDS_DATA_DIR: dir, PCDS_ENCRYPTION: 'off', PCDS_ID_SECRET: ID_SECRET }),
  );
  try {
    return await fn(await store.get());
  } finally {
    await store.close();
  }
}

/**
 * Batches over the store, as launchers start them now: rows loaded into the store, results written
 * there. Rows as workflows, paused and resumed across continue-as-new, with a duplicate row; then
 * a compact batch over the same rows and two new ones, whose known rows the result cache answers.
 */
async function recordStoredBatches(client: Client, dir: string, recorded: Recorded) {
  await withRecordingStore(dir, async (batches) => {
    const rows = sampleRows({ rows: 8, unknownShare: 0.25, badShare: 0.125 });
    const emails = rows.map((r) => r.email ?? '');
    const load = async (batchId: string, cells: string[]) =>
      loadFileIntoStore(batches, {
        batchId,
        endpoint: 'person_enrichment',
        source: { path: writeCsv(dir, `${batchId}.csv`, cells), format: 'csv' },
        dedupe: true,
        cache: { mode: 'use' },
      });

    const batchId = 'replay-stored';
    await load(batchId, [...emails, emails[0]]);
    const handle = await startBatch(client, TASK_QUEUE, {
      batchId,
      endpoint: 'person_enrichment',
      source: { path: join(dir, `${batchId}.csv`), format: 'csv' },
      output: join(dir, `${batchId}.jsonl`),
      store: true,
      window: 2,
      chunkSize: 4,
      historyThreshold: BATCH_HISTORY_THRESHOLD,
      pollIntervalMs: 100,
    });
    const summary = await pausedAndResumed(client, batchId);
    if (summary.runs < 2 || summary.done !== emails.length + 1 || summary.duplicates !== 1)
      throw new Error(
        `the stored batch ended with ${JSON.stringify(summary)}: expected 2+ runs, 9 rows, 1 duplicate`,
      );
    const runs = await runsOf(client, batchId, handle.firstExecutionRunId);
    runs.forEach((json, i) => recorded.set(`stored-batch-run-${i + 1}`, json));
    const found = (await batches.results(batchId, { outcome: 'found' })).lines[0];
    if (!found) throw new Error('no row of the stored batch was found');
    recorded.set(
      'batch-row',
      await historyOf(client.workflow.getHandle(rowWorkflowId(batchId, found.row))),
    );

    const compactId = 'replay-stored-compact';
    const more = sampleRows({ rows: 2, seed: 7 }).map((r) => r.email ?? '');
    await load(compactId, [...emails, ...more]);
    const compact = await startBatch(client, TASK_QUEUE, {
      batchId: compactId,
      endpoint: 'person_enrichment',
      source: { path: join(dir, `${compactId}.csv`), format: 'csv' },
      output: join(dir, `${compactId}.jsonl`),
      store: true,
      compact: true,
      window: 2,
      chunkSize: 4,
      pollIntervalMs: 100,
    });
    const done: BatchSummary = await compact.result();
    if (done.done !== emails.length + more.length || !done.cached)
      throw new Error(
        `the compact batch ended with ${JSON.stringify(done)}: expected 10 rows, some cached`,
      );
    const compactRuns = await runsOf(client, compactId, compact.firstExecutionRunId);
    compactRuns.forEach((json, i) => recorded.set(`stored-compact-run-${i + 1}`, json));
  });
}

/** Pauses a running batch once two rows are done, resumes it once idle; its summary. */
async function pausedAndResumed(client: Client, batchId: string): Promise<BatchSummary> {
  const current = client.workflow.getHandle(batchWorkflowId(batchId));
  await until(current, (p) => p.done >= 2);
  await retried(() => current.signal(pauseBatchSignal, { reason: 'replay recording' }));
  await until(current, (p) => p.state === 'paused' && p.inFlight === 0);
  await retried(() => current.signal(resumeBatchSignal));
  return current.result();
}

/** Every run of a batch from its first, each history as JSON. */
async function runsOf(client: Client, batchId: string, firstRunId: string): Promise<string[]> {
  const runs: string[] = [];
  let runId: string | undefined = firstRunId;
  while (runId) {
    const run: WorkflowHandle = client.workflow.getHandle(batchWorkflowId(batchId), runId);
    const history = await run.fetchHistory();
    runs.push(historyToJSON(history));
    runId =
      history.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ??
      undefined;
  }
  return runs;
}

/**
 * The throttle of one key through the permit gate, as activities use it: permits of every class
 * (a person's calls, two batches of different weights, background reads) under a policy with a
 * tenant's weight and budgets, one call refused for its tenant's budget, the credit breaker
 * opened and reset, until it has continued as new twice; the first two runs are saved.
 */
async function recordThrottle(client: Client, recorded: Recorded) {
  const keyId = 'replay';
  const gate = createWorkflowPermitGate({
    client,
    taskQueue: TASK_QUEUE,
    keys: [{ id: keyId }],
    defaultLimits: { perMinute: 1_000, perHour: 100_000 },
    scheduling: {
      mode: 'fair',
      reserve: 0.1,
      tenants: { analysts: { weight: 2 }, assistant: { requestsPerHour: 3 } },
      unlisted: { requestsPerHour: 1_000 },
    },
  });
  await gate.acquire(keyId, 'submit', { requester: interactiveRequester() });
  const first = await client.workflow.getHandle(throttleWorkflowId(keyId)).describe();
  await gate.creditsExhausted(keyId);
  await gate.resetCredits(keyId, 'replay recording');
  // The assistant's fourth request of the hour is refused for its tenant's budget.
  for (let i = 0; i < 4; i++) {
    try {
      await gate.acquire(keyId, 'usage', { requester: interactiveRequester('assistant') });
    } catch (err) {
      if (!(err instanceof TenantBudgetError) || i < 3) throw err;
    }
  }
  const requesters = [
    interactiveRequester(),
    batchRequester('nightly', 'analysts', 2),
    batchRequester('adhoc', OPERATOR_TENANT),
    backgroundRequester(),
  ];
  const runIds = [first.runId];
  for (let i = 0; runIds.length < 3; i++) {
    if (i >= 200) throw new Error('the throttle did not continue as new after 200 permits');
    const requester = requesters[i % requesters.length];
    await gate.acquire(keyId, i % 3 === 0 ? 'submit' : 'poll', {
      requester,
      ...(i % 3 === 0 ? { credits: 1 } : {}),
    });
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

/** Starts a batch over the rows loaded into the store under its id. */
async function startBatch(client: Client, taskQueue: string, input: BatchInput) {
  return client.workflow.start(BATCH_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: batchWorkflowId(input.batchId),
    args: [input],
    typedSearchAttributes: [
      { key: PcdsBatchId, value: input.batchId },
      { key: PcdsEndpoint, value: input.endpoint },
    ],
  });
}

/**
 * Resets a finished batch to the end of the first workflow task of its first run (the batch may
 * have continued as new since); the new run's handle.
 */
async function resetToFirstTask(
  client: Client,
  namespace: string,
  batchId: string,
  runId: string,
): Promise<WorkflowHandle> {
  const handle = client.workflow.getHandle(batchWorkflowId(batchId), runId);
  const history = await handle.fetchHistory();
  const firstTask = history.events?.find((e) => e.workflowTaskCompletedEventAttributes);
  if (!firstTask) throw new Error('the batch has no completed workflow task to reset to');
  const reset = await client.workflowService.resetWorkflowExecution({
    namespace,
    workflowExecution: { workflowId: batchWorkflowId(batchId), runId },
    workflowTaskFinishEventId: firstTask.eventId,
    reason: 'replay recording',
    requestId: randomUUID(),
  });
  if (!reset.runId) throw new Error('the reset named no new run');
  return client.workflow.getHandle(batchWorkflowId(batchId), reset.runId);
}

/** A one-column CSV of emails (a cell with a comma, a quote or a line break quoted). */
function writeCsv(dir: string, name: string, emails: string[]): string {
  const cell = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const path = join(dir, name);
  writeFileSync(path, ['email', ...emails.map(cell)].join('\n') + '\n');
  return path;
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
