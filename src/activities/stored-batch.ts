// Activities of a stored batch: its rows are read from the store, its results written there,
// its summary kept with its record. Workers never open a caller's file. A missing or unloaded
// batch fails for good with the reason; a database that cannot be reached is retried (the
// batch's rows wait, nothing is lost).
import { ApplicationFailure } from '@temporalio/common';
import { noteFailedRow } from '../batch/failed-rows.js';
import {
  CREDIT_BUDGET,
  type Counters,
  type ExpectedStore,
  type FailedRow,
  type InputRow,
  type ReadCursor,
  type ResultLine,
} from '../batch/types.js';
import { recordCacheLookups, recordRowLines } from '../metrics/instruments.js';
import { BatchStoreError, storeMismatch, type BatchStore } from '../store/index.js';
import type { ActivityDeps } from './deps.js';
import { withHeartbeat } from './heartbeat.js';

/**
 * Runs `fn` on the worker's store once it is the batch's (`expected`, as the batch recorded it).
 * On another store: `fail` ends the batch at once (its first look at its rows: no worker of this
 * store can serve it); `retry` leaves the attempt to another worker (a worker set up wrong among
 * good ones), and nothing is read from or written to the wrong store either way.
 */
async function withStore<T>(
  deps: ActivityDeps,
  fn: (store: BatchStore) => Promise<T>,
  expected: ExpectedStore = {},
  onMismatch: 'fail' | 'retry' = 'retry',
): Promise<T> {
  if (!deps.store)
    throw ApplicationFailure.create({
      type: 'store_not_configured',
      message: 'this worker has no store (PCDS_STORE_URL): stored batches need one',
      nonRetryable: true,
    });
  const store = await deps.store.get();
  const mismatch = storeMismatch(
    {
      ...(expected.storeId ? { id: expected.storeId } : {}),
      ...(expected.storeShown ? { shown: expected.storeShown } : {}),
    },
    store.identity,
  );
  if (mismatch)
    throw ApplicationFailure.create({
      type: 'store_mismatch',
      message: mismatch,
      nonRetryable: onMismatch === 'fail',
    });
  try {
    return await fn(store);
  } catch (err) {
    if (err instanceof BatchStoreError)
      throw ApplicationFailure.create({
        type: err.code,
        message:
          err.code === 'no_such_batch'
            ? `${err.message} in ${store.identity.shown}: if the client that started it (CLI, service, pcds mcp) uses another store, set PCDS_STORE_URL to the same store on the client and on every worker`
            : err.message,
        nonRetryable: true,
      });
    throw err;
  }
}

export interface StoredBatchInput {
  total: number;
  blankLines: number;
  /** Rows that share an earlier row's call (marked when the rows were loaded). */
  duplicates: number;
}

/**
 * The rows of a read, cut at `maxBytes` of parameters past the first row (a chunk stays far under
 * Temporal's payload limits); without dedupe, duplicate marks are left out.
 */
function chunkOf(
  got: Awaited<ReturnType<BatchStore['readRows']>>,
  maxBytes: number,
  dedupe: boolean,
): { rows: InputRow[]; next: ReadCursor } {
  let bytes = 0;
  const rows: InputRow[] = [];
  let next = got.next;
  for (const r of got.rows) {
    bytes += JSON.stringify(r).length;
    if (rows.length > 0 && bytes > maxBytes) {
      next = r.row;
      break;
    }
    if (!dedupe && 'params' in r) {
      const { duplicateOf: _d, followers: _f, leaderLine: _l, ...own } = r;
      rows.push(own);
    } else rows.push(r);
  }
  const done = next === got.next ? got.done : false;
  return { rows, next: { row: next, byteOffset: 0, done } };
}

/** The counters and first failed rows of what a batch's results hold now. */
async function storedCounters(
  store: BatchStore,
  batchId: string,
  perRow: number,
): Promise<{ counters: Counters; failedRows: FailedRow[] }> {
  const counters: Counters = { done: 0, found: 0, empty: 0, failed: 0, failedByCode: {} };
  for (const c of await store.counts(batchId)) {
    counters.done += c.n;
    if (c.outcome === 'found') counters.found += c.n;
    else if (c.outcome === 'empty') counters.empty += c.n;
    else if (c.outcome === 'skipped') counters.skipped = (counters.skipped ?? 0) + c.n;
    else {
      const code = c.code ?? 'unknown';
      counters.failed += c.n;
      counters.failedByCode[code] = (counters.failedByCode[code] ?? 0) + c.n;
    }
  }
  const dup = await store.resultCounts(batchId);
  if (dup.duplicates > 0) counters.duplicates = dup.duplicates;
  if (dup.foundSent > 0) counters.credits = dup.foundSent * perRow;
  if (dup.cached > 0) {
    counters.cached = dup.cached;
    counters.creditsSaved = dup.cachedFound * perRow;
  }
  const failedRows: FailedRow[] = [];
  for (const f of await store.firstFailed(batchId))
    noteFailedRow(failedRows, { row: f.row, code: f.code ?? 'unknown' });
  return { counters, failedRows };
}

export function createStoredBatchActivities(deps: ActivityDeps) {
  return {
    /** What the batch's loaded rows are: how many, blank lines skipped, duplicates marked. */
    storedBatchInput(input: { batchId: string } & ExpectedStore): Promise<StoredBatchInput> {
      return withStore(
        deps,
        async (store) => {
          const record = await store.loadedRecord(input.batchId);
          return {
            total: record.total,
            blankLines: record.blankLines,
            duplicates: await store.duplicateCount(input.batchId),
          };
        },
        input,
        // The batch's first look at its rows: a worker on another store ends it at once.
        'fail',
      );
    },

    /**
     * The next rows from `from`, at most `count` and (past the first) at most `maxBytes` of
     * parameters, so a chunk stays far under Temporal's payload limits.
     */
    readStoredRows(
      input: {
        batchId: string;
        from: ReadCursor;
        count: number;
        maxBytes: number;
        /** false: duplicate marks are left out (the batch sends every row). */
        dedupe: boolean;
        skipWritten?: boolean;
      } & ExpectedStore,
    ): Promise<{ rows: InputRow[]; next: ReadCursor }> {
      return withStore(
        deps,
        async (store) => {
          const got = await store.readRows(input.batchId, input.from.row, input.count, {
            ...(input.skipWritten ? { skipWritten: true } : {}),
            dedupe: input.dedupe,
          });
          recordCacheLookups('batch', got.cache.hits, got.cache.misses);
          return chunkOf(got, input.maxBytes, input.dedupe);
        },
        input,
      );
    },

    writeStoredResults(
      input: {
        batchId: string;
        lines: ResultLine[];
      } & ExpectedStore,
    ): Promise<{ written: number; skipped: number }> {
      return withStore(
        deps,
        async (store) => {
          const { written, skipped, inserted } = await store.writeResults(
            input.batchId,
            input.lines,
          );
          recordRowLines(inserted);
          return { written, skipped };
        },
        input,
      );
    },

    /**
     * A finished batch runs again with a higher budget: the results of rows skipped for the
     * budget go (so those rows run), every other result stays, and the counters are what stays.
     */
    reopenStoredResults(
      input: {
        batchId: string;
        perRow: number;
      } & ExpectedStore,
    ): Promise<{ counters: Counters; failedRows: FailedRow[]; dropped: number }> {
      return withStore(
        deps,
        (store) =>
          withHeartbeat(async () => {
            const dropped = await store.dropResults(input.batchId, 'skipped', CREDIT_BUDGET);
            return { ...(await storedCounters(store, input.batchId, input.perRow)), dropped };
          }),
        input,
        // A run again of an ended batch: its first look at its rows, as storedBatchInput.
        'fail',
      );
    },

    /** Keeps the batch's summary with its record (sealed: nothing of it is read in clear). */
    saveStoredSummary(input: { batchId: string; summary: unknown } & ExpectedStore): Promise<void> {
      return withStore(deps, (store) => store.saveSummary(input.batchId, input.summary), input);
    },
  };
}
