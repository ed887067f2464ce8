// A batch: the rows of a file fanned out as child endpoint calls in a sliding window, results
// written as they arrive (one line per row), paused instead of failing every row when the key
// or the account is at fault, and continued-as-new so its history stays bounded at any size.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  ChildWorkflowFailure,
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchActivities } from '../activities/batch.js';
import {
  activeKeys,
  describeRemoved,
  newKeyPool,
  pickKey,
  refreshKeyPool,
  removeKey,
} from '../batch/key-pool.js';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchWindowSignal,
} from '../batch/messages.js';
import {
  estimateJobMs,
  firstPollDelayFor,
  jobSampleOf,
  recordJobMs,
  requestsPerRow,
} from '../batch/job-duration.js';
import { noteFailedRow } from '../batch/failed-rows.js';
import { etaSeconds, recordCompletions, rowsPerSecond } from '../batch/rate.js';
import {
  BATCH_ID_PATTERN,
  DEFAULT_CHUNK_BYTES,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_HISTORY_THRESHOLD,
  DEFAULT_WINDOW,
  INVALID_ROW,
  MAX_WINDOW,
  childWorkflowId,
  isInvalidRow,
  type BatchInput,
  type BatchProgress,
  type BatchStateName,
  type BatchSummary,
  type CarriedState,
  type ExportReport,
  type InputFiles,
  type InputRow,
  type ResultLine,
  type ValidRow,
} from '../batch/types.js';
// 401 and 403 codes are about one key: it leaves the pool. 402 is the account's: the batch pauses.
import { findEndpoint, isKeyFault, isSystemic } from '../contract/index.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsRowIndex,
  PcdsState,
} from '../temporal/search-attributes.js';
import { endpointCall } from './endpoint-call.js';
import type { CallInput, CallOutcome } from './types.js';

// Short timeouts: a worker killed during a read or an append is noticed within seconds, and the
// retry (idempotent) runs on another worker.
const files = proxyActivities<BatchActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
/** The first pass over the whole input heartbeats, so a large file may take its time. */
const firstPass = proxyActivities<BatchActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
/** The CSV of a whole batch is written by one activity, which heartbeats. */
const exporting = proxyActivities<BatchActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
/** Reads what a row's earlier call came to: it may still be running, so it heartbeats. */
const rows = proxyActivities<BatchActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});
const accounts = proxyActivities<BatchActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

// One append carries at most this much, well under Temporal's payload limits.
const MAX_LINES_PER_WRITE = 200;
const MAX_BYTES_PER_WRITE = 512 * 1024;

interface Finished {
  row: ValidRow;
  keyId: string;
  outcome?: CallOutcome;
  failure?: { code: string; message: string; requestId?: string };
}

const clampWindow = (n: number) => Math.max(1, Math.min(MAX_WINDOW, Math.floor(n)));

function failureOf(err: unknown): { code: string; message: string; requestId?: string } {
  const cause = err instanceof ChildWorkflowFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type) {
    // A job that exists (say, its result was too large to carry) keeps its request id.
    const requestId = (cause.details?.[0] as { requestId?: unknown } | undefined)?.requestId;
    return {
      code: cause.type,
      message: cause.message,
      ...(typeof requestId === 'string' ? { requestId } : {}),
    };
  }
  if (isCancellation(cause)) return { code: 'cancelled', message: 'the row was cancelled' };
  const name = (cause as Error | undefined)?.name ?? 'unknown';
  return { code: 'child_failed', message: `the row's call ended without an error code (${name})` };
}

export async function batchWorkflow(input: BatchInput): Promise<BatchSummary> {
  if (!BATCH_ID_PATTERN.test(input.batchId)) {
    throw ApplicationFailure.create({
      type: 'invalid_batch_id',
      message: 'batch id: 1 to 64 letters, digits, _ or -',
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
  const chunkSize = Math.max(1, Math.floor(input.chunkSize ?? DEFAULT_CHUNK_SIZE));
  // The summary goes beside the file the user asked for: the CSV when there is one.
  const summaryBase = input.csvOutput ?? input.output;
  const threshold = input.historyThreshold ?? DEFAULT_HISTORY_THRESHOLD;

  let s: CarriedState;
  if (input.carried) {
    s = input.carried;
  } else {
    const [inspection, keys] = await Promise.all([
      firstPass.inspectBatchInput({
        source: input.source,
        endpoint: endpoint.name,
        ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
      }),
      accounts.batchKeyPool({ ...(input.keyIds ? { keyIds: input.keyIds } : {}) }),
    ]);
    if (keys.length === 0) {
      throw ApplicationFailure.create({
        type: 'no_keys',
        message: 'the worker has no API key configured',
        nonRetryable: true,
      });
    }
    // Versioned (see README, "Upgrading workers"): batches started by 0.1.0 truncated here.
    if (patched('batch-output-never-truncated'))
      await files.createBatchOutput({ path: input.output });
    else await files.resetBatchOutput({ path: input.output });
    s = {
      cursor: { row: 1, byteOffset: inspection.dataOffset, done: false },
      ...(inspection.header ? { header: inspection.header } : {}),
      total: inspection.total,
      counters: { done: 0, found: 0, empty: 0, failed: 0, failedByCode: {} },
      redo: [],
      window: clampWindow(input.window ?? DEFAULT_WINDOW),
      pool: newKeyPool(keys),
      startedAt: new Date().toISOString(),
      runs: 0,
      rate: [],
      historyEvents: 0,
      blankLines: inspection.blankLines,
    };
  }
  s.runs += 1;
  // Absent in a state carried from a run that did not learn job durations yet.
  const jobMs = (s.jobMs ??= []);
  const requests = (s.requests ??= { rows: 0, polls: 0 });
  const failedRows = (s.failedRows ??= []);
  const inputFiles: InputFiles = {
    path: input.source.path,
    format: input.source.format,
    ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
  };
  const startedAtMs = Date.parse(s.startedAt);

  // Rows of this run: read from the file but not started, in file order.
  const queue: InputRow[] = [];
  const inFlight = new Map<number, string>();
  const finished: Finished[] = [];
  const results: ResultLine[] = [];
  let writing = false;
  let writeError: unknown;
  /** The output cannot be written (disk full, permissions): no append until a resume. */
  let outputBlocked = false;
  let resumeRequested = false;
  let cancelling = false;
  let state: BatchStateName = s.paused ? 'paused' : 'running';

  const progress = (): BatchProgress => {
    const now = Date.now();
    const rate = rowsPerSecond(s.rate, now, startedAtMs);
    const eta = etaSeconds(s.total - s.counters.done, rate);
    const estimate = estimateJobMs(jobMs);
    const perRow = requestsPerRow(requests);
    return {
      batchId: input.batchId,
      endpoint: endpoint.name,
      state,
      total: s.total,
      ...s.counters,
      failedByCode: { ...s.counters.failedByCode },
      inFlight: inFlight.size,
      window: s.window,
      ...(s.paused ? { paused: s.paused } : {}),
      pool: s.pool.keys.map((k) => ({
        id: k.id,
        weight: k.weight,
        started: s.pool.started[k.id] ?? 0,
        ...(k.removed ? { removed: k.removed.code } : {}),
      })),
      rowsPerSecond: Math.round(rate * 100) / 100,
      ...(eta !== undefined ? { etaSeconds: eta } : {}),
      ...(estimate !== undefined ? { jobMsEstimate: estimate } : {}),
      ...(perRow !== undefined ? { requestsPerRow: perRow } : {}),
      startedAt: s.startedAt,
      runs: s.runs,
      output: input.output,
      blankLines: s.blankLines ?? 0,
      source: inputFiles,
      ...(input.csvOutput ? { csvOutput: input.csvOutput } : {}),
      failedRows: [...failedRows],
    };
  };

  let lastState: BatchStateName | undefined;
  const show = (next: BatchStateName) => {
    state = next;
    if (state !== lastState) {
      lastState = state;
      upsertSearchAttributes([{ key: PcdsState, value: state }] as SearchAttributeUpdatePair[]);
    }
    const c = s.counters;
    const failedCodes = Object.entries(c.failedByCode)
      .map(([code, n]) => `${code} ${n}`)
      .join(', ');
    setCurrentDetails(
      `${state}${s.paused ? ` (${s.paused.code}: ${s.paused.message})` : ''}: ${c.done}/${s.total} rows, ` +
        `${c.found} found, ${c.empty} empty, ${c.failed} failed${failedCodes ? ` (${failedCodes})` : ''}, ` +
        `${inFlight.size} in flight, window ${s.window}`,
    );
  };

  setHandler(batchProgressQuery, progress);
  setHandler(pauseBatchSignal, (arg) => {
    if (s.paused) return;
    s.paused = { code: 'paused_by_operator', message: arg?.reason ?? 'paused by an operator' };
  });
  setHandler(resumeBatchSignal, () => {
    resumeRequested = true;
  });
  setHandler(setBatchWindowSignal, (width) => {
    if (typeof width === 'number' && Number.isFinite(width)) s.window = clampWindow(width);
  });

  upsertSearchAttributes([
    { key: PcdsBatchId, value: input.batchId },
    { key: PcdsEndpoint, value: endpoint.name },
  ] as SearchAttributeUpdatePair[]);
  show(state);

  const record = (line: ResultLine) => {
    const c = s.counters;
    c.done += 1;
    if (line.outcome === 'found') c.found += 1;
    else if (line.outcome === 'empty') c.empty += 1;
    else {
      c.failed += 1;
      const code = line.code ?? 'unknown';
      c.failedByCode[code] = (c.failedByCode[code] ?? 0) + 1;
      noteFailedRow(failedRows, { row: line.row, code });
    }
    recordCompletions(s.rate, Date.now());
    results.push(line);
  };

  /** Starts one append if none is running; appends are never concurrent for a batch. */
  const startWrite = () => {
    if (writing || outputBlocked || results.length === 0) return;
    let bytes = 0;
    let n = 0;
    while (n < results.length && n < MAX_LINES_PER_WRITE) {
      bytes += JSON.stringify(results[n]).length;
      if (n > 0 && bytes > MAX_BYTES_PER_WRITE) break;
      n += 1;
    }
    const lines = results.splice(0, n);
    writing = true;
    files.appendBatchResults({ path: input.output, lines }).then(
      () => {
        writing = false;
      },
      (err: unknown) => {
        results.unshift(...lines);
        writing = false;
        // A write cut by the batch's cancellation is done again outside the cancelled scope.
        if (isCancellation(err)) return;
        const cause = err instanceof ActivityFailure ? err.cause : err;
        if (cause instanceof ApplicationFailure && cause.type === 'output_unwritable') {
          // The lines stay here, unacknowledged, until an operator fixes the disk and resumes.
          outputBlocked = true;
          if (!s.paused || s.paused.code !== 'output_unwritable')
            s.paused = {
              code: 'output_unwritable',
              message: `${cause.message}; fix the disk or its permissions, then resume`,
            };
          return;
        }
        writeError = err;
      },
    );
  };

  const startRow = (row: ValidRow, keyId: string) => {
    // Webhook rows wait for the delivery; polling rows poll first when the job is likely done.
    const firstPollDelayMs = input.webhooks ? undefined : firstPollDelayFor(jobMs);
    const call: CallInput = {
      endpoint: endpoint.name,
      params: row.params,
      keyId,
      batchId: input.batchId,
      rowIndex: row.row,
      ...(input.webhooks ? { webhook: true } : {}),
      ...(input.webhooks && input.webhookFallbackPollMs
        ? { webhookFallbackPollMs: input.webhookFallbackPollMs }
        : {}),
      ...(input.pollIntervalMs ? { pollIntervalMs: input.pollIntervalMs } : {}),
      ...(firstPollDelayMs !== undefined ? { firstPollDelayMs } : {}),
      ...(input.maxWaitMs ? { maxWaitMs: input.maxWaitMs } : {}),
    };
    inFlight.set(row.row, keyId);
    const settle = (f: Omit<Finished, 'row' | 'keyId'>) => {
      inFlight.delete(row.row);
      finished.push({ row, keyId, ...f });
    };
    startChild(endpointCall, {
      workflowId: childWorkflowId(input.batchId, row.row),
      args: [call],
      // A batch closes only after its children; if it is terminated, its rows are cancelled.
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      // A row runs again only when its earlier run failed (a row sent back by a 402, say).
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      typedSearchAttributes: [
        { key: PcdsBatchId, value: input.batchId },
        { key: PcdsEndpoint, value: endpoint.name },
        { key: PcdsRowIndex, value: row.row },
      ],
      staticSummary: `row ${row.row} of batch ${input.batchId} (${endpoint.name})`,
    }).then(
      (handle) =>
        handle.result().then(
          (outcome) => settle({ outcome }),
          (err: unknown) => settle({ failure: failureOf(err) }),
        ),
      (err: unknown) => {
        const already = (err as Error | undefined)?.name === 'WorkflowExecutionAlreadyStartedError';
        if (!already) return settle({ failure: failureOf(err) });
        // This row's call already ran (the batch was reset to an earlier point): its outcome is
        // the row's, found or empty as it was, never a failure and never a second submit.
        // Versioned: batches started by 0.1.0 recorded row_already_run here.
        if (!patched('batch-row-already-run-takes-its-outcome'))
          return settle({
            failure: {
              code: 'row_already_run',
              message: 'a call for this row already completed under this batch id',
            },
          });
        rows.existingRowOutcome({ workflowId: childWorkflowId(input.batchId, row.row) }).then(
          (existing) => settle(existing),
          (e: unknown) => settle({ failure: failureOf(e) }),
        );
      },
    );
  };

  /** Turns finished children into result lines, or sends rows back on a systemic failure. */
  const absorbFinished = () => {
    for (const f of finished.splice(0)) {
      const key = f.row.key;
      if (f.outcome) {
        const o = f.outcome;
        if (o.outcome !== 'failed' && o.timing) {
          recordJobMs(jobMs, jobSampleOf(o.timing));
          requests.rows += 1;
          requests.polls += o.timing.polls;
        }
        if (o.outcome === 'found')
          record({
            row: f.row.row,
            key,
            outcome: 'found',
            requestId: o.requestId,
            result: o.result,
          });
        else if (o.outcome === 'empty')
          record({ row: f.row.row, key, outcome: 'empty', requestId: o.requestId });
        else
          record({
            row: f.row.row,
            key,
            outcome: 'failed',
            code: o.code,
            message: o.message,
            ...(o.requestId ? { requestId: o.requestId } : {}),
          });
        continue;
      }
      const { code, message, requestId } = f.failure!;
      if (cancelling && code === 'cancelled') continue;
      // Sent back to be started again only when the service accepted nothing: a row with a
      // request id has a job (maybe charged) and ends with it, never submitted twice.
      if (isSystemic(code) && requestId === undefined) {
        s.redo.push(f.row);
        if (isKeyFault(code)) {
          removeKey(s.pool, f.keyId, code, new Date().toISOString());
          if (activeKeys(s.pool).length === 0 && !s.paused) {
            s.paused = {
              code,
              message: `no key left in the pool: ${describeRemoved(s.pool)}; fix the keys, then resume`,
            };
          }
        } else if (!s.paused) {
          s.paused = {
            code,
            keyId: f.keyId,
            message: `${code} on key ${f.keyId}: top up the account's credits, then resume`,
          };
        }
        continue;
      }
      record({
        row: f.row.row,
        key,
        outcome: 'failed',
        code,
        message,
        ...(requestId ? { requestId } : {}),
      });
    }
  };

  const readMore = async () => {
    const got = await files.readBatchRows({
      source: input.source,
      endpoint: endpoint.name,
      ...(s.header ? { header: s.header } : {}),
      from: s.cursor,
      count: chunkSize,
      maxBytes: DEFAULT_CHUNK_BYTES,
      ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
    });
    queue.push(...got.rows);
    s.cursor = got.next;
  };

  const resume = async () => {
    resumeRequested = false;
    outputBlocked = false;
    if (!s.paused) return;
    const keys = await accounts.batchKeyPool({ ...(input.keyIds ? { keyIds: input.keyIds } : {}) });
    s.pool = refreshKeyPool(s.pool, keys);
    // Only a pause for credits closes the keys' credit breakers: an operator's pause or a full
    // disk says nothing about the account having been topped up. (Batches started by 0.1.0
    // closed them on every resume: versioned, see README, "Upgrading workers".)
    const creditsOnly = patched('batch-resume-closes-breakers-after-402-only');
    if (!creditsOnly || s.paused.code === 'insufficient_credits')
      await accounts.resetCreditBreakers({ keyIds: keys.map((k) => k.id) });
    s.paused = undefined;
  };

  const wantsNewRun = () =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= threshold;

  /** Starts what the window allows; invalid rows are written without a call. */
  const fill = () => {
    while (!s.paused) {
      const next: InputRow | undefined = s.redo[0] ?? queue[0];
      if (!next) return;
      if (isInvalidRow(next)) {
        queue.shift();
        record({
          row: next.row,
          key: next.key,
          outcome: 'failed',
          code: next.code ?? INVALID_ROW,
          message: next.problem,
        });
        continue;
      }
      if (inFlight.size >= s.window) return;
      const keyId = pickKey(s.pool);
      if (!keyId) {
        s.paused = {
          code: 'no_keys_left',
          message: `no key left in the pool: ${describeRemoved(s.pool)}`,
        };
        return;
      }
      if (s.redo[0] === next) s.redo.shift();
      else queue.shift();
      startRow(next, keyId);
    }
  };

  let draining = false;
  try {
    for (;;) {
      absorbFinished();
      if (writeError) {
        const err = writeError;
        writeError = undefined;
        throw err instanceof Error ? err : new Error('the output could not be written');
      }
      if (resumeRequested) await resume();
      if (!draining && wantsNewRun()) draining = true;
      if (!draining) {
        if (!s.paused && queue.length < s.window && !s.cursor.done) {
          await readMore();
          continue;
        }
        fill();
      }
      startWrite();
      if (runOver()) break;
      show(draining ? 'draining' : s.paused ? 'paused' : 'running');
      await condition(
        () =>
          finished.length > 0 ||
          (!writing && !outputBlocked && results.length > 0) ||
          resumeRequested ||
          writeError !== undefined ||
          (!draining && !s.paused && canStart()) ||
          runOver(),
      );
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    cancelling = true;
    show('cancelling');
    // Children were cancelled with the batch: record what finished, write it, then stop.
    await CancellationScope.nonCancellable(async () => {
      await condition(() => inFlight.size === 0);
      absorbFinished();
      await flushAll();
    });
    const summary = await CancellationScope.nonCancellable(async () =>
      summarize('cancelled', await writeCsv('cancelled')),
    );
    await CancellationScope.nonCancellable(() =>
      files.writeBatchSummary({ path: summaryBase, summary }),
    );
    show('cancelled');
    return summary;
  }

  /** Everything of this run is written: the batch is done, or ready to continue as new. */
  function runOver(): boolean {
    const idle = inFlight.size === 0 && finished.length === 0 && results.length === 0 && !writing;
    const allRead = s.cursor.done && queue.length === 0 && s.redo.length === 0;
    return idle && (draining || allRead);
  }

  function canStart(): boolean {
    const next = s.redo[0] ?? queue[0];
    if (next && (isInvalidRow(next) || inFlight.size < s.window)) return true;
    return queue.length < s.window && !s.cursor.done;
  }

  async function flushAll() {
    for (;;) {
      await condition(() => !writing && (!outputBlocked || resumeRequested));
      if (outputBlocked) await resume();
      if (writeError) {
        const err = writeError;
        writeError = undefined;
        throw err instanceof Error ? err : new Error('the output could not be written');
      }
      if (results.length === 0) return;
      startWrite();
    }
  }

  /** With a CSV output: the CSV in row order, from the JSONL. A failure is told, not fatal. */
  async function writeCsv(
    final: 'done' | 'cancelled',
  ): Promise<{ csv?: ExportReport; csvError?: string }> {
    if (!input.csvOutput) return {};
    try {
      const csv = await exporting.exportBatchCsv({
        source: inputFiles,
        lines: input.output,
        target: input.csvOutput,
        // Rows not run at the end of a done batch should not exist: they are flagged as missing.
        noLine: final === 'done' ? 'missing' : 'not_run',
      });
      return { csv };
    } catch (err) {
      if (isCancellation(err)) throw err;
      const cause = err instanceof ActivityFailure ? err.cause : err;
      const why = cause instanceof ApplicationFailure ? cause.message : 'unknown error';
      return { csvError: `the CSV could not be written: ${why}` };
    }
  }

  function summarize(
    final: 'done' | 'cancelled',
    csv: { csv?: ExportReport; csvError?: string } = {},
  ): BatchSummary {
    const finishedAt = new Date();
    const seconds = Math.max(0.001, (finishedAt.getTime() - startedAtMs) / 1000);
    const estimate = estimateJobMs(jobMs);
    const perRow = requestsPerRow(requests);
    return {
      batchId: input.batchId,
      endpoint: endpoint!.name,
      state: final,
      total: s.total,
      ...s.counters,
      output: input.output,
      startedAt: s.startedAt,
      finishedAt: finishedAt.toISOString(),
      seconds: Math.round(seconds * 10) / 10,
      rowsPerSecond: Math.round((s.counters.done / seconds) * 100) / 100,
      runs: s.runs,
      historyEvents: s.historyEvents + workflowInfo().historyLength,
      blankLines: s.blankLines ?? 0,
      source: inputFiles,
      ...(input.csvOutput ? { csvOutput: input.csvOutput } : {}),
      failedRows: [...failedRows],
      ...(estimate !== undefined ? { jobMsEstimate: estimate } : {}),
      ...(perRow !== undefined ? { requestsPerRow: perRow } : {}),
      ...csv,
    };
  }

  if (draining) {
    // Rows read but not started are read again by the next run, from the first one's offset.
    const first = queue[0];
    if (first) s.cursor = { row: first.row, byteOffset: first.offset, done: false };
    s.historyEvents += workflowInfo().historyLength;
    show('draining');
    await condition(allHandlersFinished);
    return continueAsNew<typeof batchWorkflow>({ ...input, carried: s });
  }

  const summary = summarize('done', await writeCsv('done'));
  await files.writeBatchSummary({ path: summaryBase, summary });
  show('done');
  return summary;
}
