// The steps of a batch that are activities: the first run's look at its rows in the store and at
// its keys, reading rows, writing result lines and the summary. The batch workflow sequences them.
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { TYPICAL_CREDITS } from '../batch/cost.js';
import { newKeyPool } from '../batch/key-pool.js';
import { clampWindow } from '../batch/rules.js';
import { isScopedId } from '../contract/workflow-ids.js';
import {
  BATCH_BEFORE_STORE,
  DEFAULT_CHUNK_BYTES,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_WINDOW,
  expectedStoreOf,
  type BatchInput,
  type BatchSummary,
  type CarriedState,
  type InputRow,
  type ReadCursor,
  type ResultLine,
} from '../batch/types.js';
import { findEndpoint, type EndpointDef } from '../contract/index.js';
import { accounts, exporting, files } from './batch-activities.js';

/** The batch's endpoint, once its input is checked: a bad input fails the batch for good. */
export function checkBatchInput(input: BatchInput): EndpointDef {
  refuseBatchBeforeStore(input);
  if (!isScopedId(input.batchId)) {
    throw ApplicationFailure.create({
      type: 'invalid_batch_id',
      message: "batch id: 1 to 64 letters, digits, _ or -, after its tenant's id and a dot",
      nonRetryable: true,
    });
  }
  const endpoint = findEndpoint(input.endpoint);
  if (!endpoint || endpoint.polling === 'sync') {
    throw ApplicationFailure.create({
      type: 'unknown_endpoint',
      message: `no asynchronous endpoint named ${input.endpoint}`,
      nonRetryable: true,
    });
  }
  return endpoint;
}

/** The worker's keys (those the batch names, if it does). */
export const keyPoolOf = (input: BatchInput) =>
  accounts.batchKeyPool({ ...(input.keyIds ? { keyIds: input.keyIds } : {}) });

/**
 * Refuses a batch started before the store (its rows and results are files beside its input):
 * workers of this release no longer run those. The error fails the workflow task, not the batch,
 * which stays open, nothing of it lost, until a worker of the release that started it finishes it.
 */
export function refuseBatchBeforeStore(input: BatchInput): void {
  if (input.store === true) return;
  throw new Error(
    `${BATCH_BEFORE_STORE}: batch ${input.batchId} was started before the store (its rows and ` +
      'results are files beside its input): workers of this release do not run such batches. ' +
      'Finish it with workers of the release that started it, then upgrade (docs/upgrading.md).',
  );
}

/** The output reopened (a run again with a higher budget) with what it holds. */
function reopenOutput(input: BatchInput, endpoint: EndpointDef) {
  if (!input.reopen) return Promise.resolve(undefined);
  return exporting.reopenStoredResults({
    batchId: input.batchId,
    perRow: TYPICAL_CREDITS[endpoint.price],
    ...expectedStoreOf(input),
  });
}

/**
 * The first run's state: the loaded rows counted (blank lines, duplicates marked when they were
 * loaded), the keys, the results reopened when the batch is run again with a higher budget.
 */
export async function firstRunState(
  input: BatchInput,
  endpoint: EndpointDef,
): Promise<CarriedState> {
  const [stored, keys] = await Promise.all([
    files.storedBatchInput({ batchId: input.batchId, ...expectedStoreOf(input) }),
    keyPoolOf(input),
  ]);
  if (keys.length === 0) {
    throw ApplicationFailure.create({
      type: 'no_keys',
      message: 'the worker has no API key configured',
      nonRetryable: true,
    });
  }
  const reopened = await reopenOutput(input, endpoint);
  return {
    cursor: { row: 1, byteOffset: 0, done: false },
    total: stored.total,
    counters: { done: 0, found: 0, empty: 0, failed: 0, failedByCode: {} },
    redo: [],
    window: clampWindow(input.window ?? DEFAULT_WINDOW),
    pool: newKeyPool(keys),
    startedAt: new Date().toISOString(),
    runs: 0,
    rate: [],
    historyEvents: 0,
    blankLines: stored.blankLines,
    ...(reopened
      ? { counters: reopened.counters, failedRows: reopened.failedRows, skipWritten: true }
      : {}),
    // The store marked the duplicates when the rows were loaded.
    ...(input.dedupe !== false ? { dedupe: true, duplicatesTotal: stored.duplicates } : {}),
  };
}

/** The next chunk of rows from the cursor. */
export function readRows(
  input: BatchInput,
  s: CarriedState,
): Promise<{ rows: InputRow[]; next: ReadCursor }> {
  const chunkSize = Math.max(1, Math.floor(input.chunkSize ?? DEFAULT_CHUNK_SIZE));
  return files.readStoredRows({
    batchId: input.batchId,
    from: s.cursor,
    count: chunkSize,
    maxBytes: DEFAULT_CHUNK_BYTES,
    dedupe: s.dedupe === true,
    ...(s.skipWritten ? { skipWritten: true } : {}),
    ...expectedStoreOf(input),
  });
}

/** One write of result lines to the store. */
export function writeLines(input: BatchInput, lines: ResultLine[]): Promise<unknown> {
  return files.writeStoredResults({ batchId: input.batchId, lines, ...expectedStoreOf(input) });
}

/** The application failure `err` carries (itself, or as an activity's cause), if any. */
export function applicationFailureOf(err: unknown): ApplicationFailure | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? cause : undefined;
}

/** The summary, kept with the batch's record (its caller writes the files beside its output). */
export async function saveSummary(input: BatchInput, summary: BatchSummary): Promise<void> {
  await files.saveStoredSummary({ batchId: input.batchId, summary, ...expectedStoreOf(input) });
}
