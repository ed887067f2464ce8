// Shared pieces of the batch tests: an emulator with short latencies, worker activities built
// from a PCDS_ configuration pointing at it, input files, and reading an output back.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { batchProgressQuery } from '../../src/batch/messages.js';
import type { BatchInput, BatchProgress, BatchSummary, ResultLine } from '../../src/batch/types.js';
import { batchWorkflowId, CURRENT_ROW_ID_SCHEME } from '../../src/contract/workflow-ids.js';
import { loadConfig, type Config } from '../../src/config.js';
import {
  startEmulator,
  type EmulatorOptionsInput,
  type RunningEmulator,
} from '../../src/emulator/index.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import {
  lazyBatchStore,
  openStoreFromEnv,
  type StoreRoles,
  type LazyBatchStore,
} from '../../src/store/index.js';
import { loadFileIntoStore } from '../../src/store/load.js';
import { unthrottled, type PermitGate } from '../../src/throttle/permits.js';
import { PcdsBatchId, PcdsEndpoint } from '../../src/temporal/search-attributes.js';
import type { batchWorkflow } from '../../src/workflows/batch.js';
import { BATCH_WORKFLOW_TYPE } from '../../src/temporal/workflow-types.js';

export const FAST_EMULATOR: EmulatorOptionsInput = {
  port: 0,
  latency: { queuedMs: 20, processingMs: 40 },
  limits: { enabled: false },
};

export async function fastEmulator(extra: EmulatorOptionsInput = {}): Promise<RunningEmulator> {
  return startEmulator({ ...FAST_EMULATOR, ...extra });
}

/**
 * What most batch test files share: a fast emulator and worker activities on it, started before
 * the file's tests and stopped after them (`emulator`: options over the fast ones). Read `emu` and
 * `worker` inside tests, not at load time.
 */
export function sharedBatchEnv(emulator: EmulatorOptionsInput = {}): {
  readonly emu: RunningEmulator;
  readonly worker: ReturnType<typeof activitiesFor>;
} {
  let emu: RunningEmulator | undefined;
  let worker: ReturnType<typeof activitiesFor> | undefined;
  beforeAll(async () => {
    emu = await fastEmulator(emulator);
    worker = activitiesFor(configFor(emu));
  });
  afterAll(async () => {
    await worker?.close();
    await emu?.stop();
  });
  return {
    get emu() {
      if (!emu) throw new Error('the emulator starts before the tests');
      return emu;
    },
    get worker() {
      if (!worker) throw new Error('the worker activities are made before the tests');
      return worker;
    },
  };
}

export function configFor(emu: RunningEmulator, env: Record<string, string> = {}): Config {
  return loadConfig({
    PCDS_BASE_URL: emu.url,
    PCDS_API_KEY: emu.devKey.key,
    PCDS_API_SECRET: emu.devKey.secret,
    PCDS_THROTTLE: 'off',
    ...env,
  });
}

export function activitiesFor(config: Config, permits: PermitGate = unthrottled) {
  const clients = createServiceClients(config);
  // The run's keys come from the process environment (the harness puts them there).
  const store = lazyBatchStore(() =>
    openStoreFromEnv({
      ...process.env,
      PCDS_DATA_DIR: config.PCDS_DATA_DIR,
      ...(config.PCDS_STORE_URL ? { PCDS_STORE_URL: config.PCDS_STORE_URL } : {}),
    }),
  );
  return {
    activities: createActivities({ config, clients, permits, store }),
    store,
    close: async () => {
      await clients.close();
      await store.close();
    },
  };
}

let idCounter = 0;
/** A batch id no earlier run against the same server used. */
export const uniqueBatchId = (name: string) =>
  `${name}-${process.pid}-${Date.now().toString(36)}-${++idCounter}`;

export const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), `pcds-${prefix}-`));

export function writeCsv(
  dir: string,
  name: string,
  rows: Record<string, string>[],
  columns: string[],
): string {
  const cell = (v: string) => (/[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v);
  const text =
    [columns.join(','), ...rows.map((r) => columns.map((c) => cell(r[c] ?? '')).join(','))].join(
      '\n',
    ) + '\n';
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The store the tests' workers use (the run's keys, PCDS_STORE_URL or the default file). */
let testStore: LazyBatchStore | undefined;
export function batchTestStore(): Promise<StoreRoles> {
  testStore ??= lazyBatchStore(() => openStoreFromEnv(process.env));
  return testStore.get();
}
afterAll(async () => {
  await testStore?.close();
  testStore = undefined;
});

/**
 * PCDS_STORE_URL of batchTestStore(), for processes a test spawns with a data folder of their own:
 * they read the rows the test loaded.
 */
export function testStoreEnv(): { PCDS_STORE_URL: string } {
  return {
    PCDS_STORE_URL:
      process.env.PCDS_STORE_URL ||
      `sqlite:${resolve(process.env.PCDS_DATA_DIR ?? '.data', 'store.sqlite')}`,
  };
}

/** Stored batches by the output path a test named: readOutput reads their results. */
const storedOutputs = new Map<string, string>();

/**
 * The results of a batch as lines, from the store (in row order); a search export's from its file.
 */
export async function readOutput(path: string): Promise<ResultLine[]> {
  const batchId = storedOutputs.get(path);
  if (batchId === undefined)
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as ResultLine);
  const store = await batchTestStore();
  const lines: ResultLine[] = [];
  let after: number | undefined;
  for (;;) {
    const page = await store.results(batchId, { ...(after !== undefined ? { after } : {}) });
    for (const { keyId: _k, ...line } of page.lines) lines.push(line);
    if (page.next === undefined) return lines;
    after = page.next as number;
  }
}

/**
 * Starts a batch as a launcher does: its file's rows go into the store first (a batch run again
 * under its id keeps the rows it has), then the workflow runs over them.
 */
export async function startBatch(client: Client, taskQueue: string, input: BatchInput) {
  let args = input;
  if (!input.carried) {
    const store = await batchTestStore();
    if ((await store.record(input.batchId))?.state !== 'loaded')
      await loadFileIntoStore(store, {
        batchId: input.batchId,
        endpoint: input.endpoint,
        source: input.source,
        dedupe: input.dedupe !== false,
        ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
      });
    storedOutputs.set(input.output, input.batchId);
    // A launcher names its rows in the current scheme.
    args = { rowIdScheme: CURRENT_ROW_ID_SCHEME, ...input, store: true };
  }
  return client.workflow.start<typeof batchWorkflow>(BATCH_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: batchWorkflowId(input.batchId),
    args: [args],
    typedSearchAttributes: [
      { key: PcdsBatchId, value: input.batchId },
      { key: PcdsEndpoint, value: input.endpoint },
    ],
  });
}

/**
 * Starts an enrichment batch over a CSV file with a fresh batch id; its output goes beside the
 * input, named after the batch.
 */
export async function startCsvBatch(
  client: Client,
  taskQueue: string,
  name: string,
  input: string,
  options: Omit<BatchInput, 'batchId' | 'endpoint' | 'source' | 'output'>,
) {
  const batchId = uniqueBatchId(name);
  const output = join(dirname(input), `${batchId}.jsonl`);
  const handle = await startBatch(client, taskQueue, {
    batchId,
    endpoint: 'person_enrichment',
    source: { path: input, format: 'csv' },
    output,
    ...options,
  });
  return { handle, batchId, output };
}

/** A batch's end: done with every row, and exactly one line per row; its lines. */
export async function linesWhenDone(
  handle: { result(): Promise<BatchSummary> },
  output: string,
  total: number,
): Promise<ResultLine[]> {
  expect(await handle.result()).toMatchObject({ state: 'done', total, done: total });
  const lines = await readOutput(output);
  expect(lines).toHaveLength(total);
  expect(new Set(lines.map((l) => l.row)).size).toBe(total);
  return lines;
}

export async function waitForProgress(
  client: Client,
  batchId: string,
  until: (p: BatchProgress) => boolean,
  timeoutMs = 30_000,
): Promise<BatchProgress> {
  const handle = client.workflow.getHandle(batchWorkflowId(batchId));
  const deadline = Date.now() + timeoutMs;
  let last: BatchProgress | undefined;
  while (Date.now() < deadline) {
    try {
      last = await handle.query(batchProgressQuery);
      if (until(last)) return last;
    } catch {
      // Between runs (continue-as-new) or before the first task, a query may fail: ask again.
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `batch ${batchId} did not reach the expected state; last progress: ${JSON.stringify(last)}`,
  );
}

export type { BatchSummary };

/**
 * Resets a finished batch to the end of its first workflow task, as an operator does in the Web
 * UI, and returns the summary of the run that follows.
 */
export async function resetToFirstTask(
  client: Client,
  namespace: string,
  batchId: string,
): Promise<BatchSummary> {
  const handle = client.workflow.getHandle(batchWorkflowId(batchId));
  const { runId } = await handle.describe();
  const history = await handle.fetchHistory();
  const firstTask = history.events!.find((e) => e.workflowTaskCompletedEventAttributes);
  const reset = await client.workflowService.resetWorkflowExecution({
    namespace,
    workflowExecution: { workflowId: batchWorkflowId(batchId), runId },
    workflowTaskFinishEventId: firstTask!.eventId,
    reason: 'operator reset in a test',
    requestId: randomUUID(),
  });
  return client.workflow.getHandle(batchWorkflowId(batchId), reset.runId).result();
}

/**
 * What the emulator's sample data makes of a row's email: not an email fails, an address at
 * unknown.pcds.dev is empty, any other is found.
 */
export function expectedOutcome(email: string | undefined): 'found' | 'empty' | 'failed' {
  if (!email || email.startsWith('not-an-email')) return 'failed';
  return email.endsWith('@unknown.pcds.dev') ? 'empty' : 'found';
}
