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
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  TerminatedFailure,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchActivities } from '../activities/batch.js';
import type { BatchRowActivities } from '../activities/batch-row.js';
import { TYPICAL_CREDITS } from '../batch/cost.js';
import { newKeyPool } from '../batch/key-pool.js';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  rowFinishedSignal,
  setBatchWindowSignal,
} from '../batch/messages.js';
import { estimateJobMs, requestsPerRow } from '../batch/job-duration.js';
import { BatchRules, clampWindow, type RowEnd, type RowFailure } from '../batch/rules.js';
import {
  BATCH_ID_PATTERN,
  DEFAULT_CHUNK_BYTES,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_HISTORY_THRESHOLD,
  DEFAULT_WINDOW,
  batchSummaryLine,
  childWorkflowId,
  duplicatesIndexPath,
  type BatchInput,
  type BatchProgress,
  type BatchStateName,
  type BatchSummary,
  type CarriedState,
  type ExportReport,
  type InputFiles,
  type ValidRow,
} from '../batch/types.js';
import { findEndpoint, isSystemic } from '../contract/index.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsRowIndex,
  PcdsRowsDone,
  PcdsRowsFailed,
  PcdsState,
} from '../temporal/search-attributes.js';
import { endpointCall } from './endpoint-call.js';
import { reportToBatchSignal } from './signals.js';
import type { CallInput } from './types.js';

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
/**
 * A compact batch's row: submit, polls and its line in one activity that heartbeats. An attempt
 * lost with its worker is made again and finds where the row stands in the row journal.
 */
const compactRows = proxyActivities<BatchRowActivities>({
  startToCloseTimeout: '4 hours',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});
const accounts = proxyActivities<BatchActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

// One append carries at most this much, well under Temporal's payload limits.
const MAX_LINES_PER_WRITE = 200;
const MAX_BYTES_PER_WRITE = 512 * 1024;

function failureOf(err: unknown): RowFailure {
  const cause =
    err instanceof ChildWorkflowFailure || err instanceof ActivityFailure ? err.cause : err;
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
  if (cause instanceof TerminatedFailure)
    return { code: 'terminated', message: "the row's call was terminated" };
  const name = (cause as Error | undefined)?.name ?? 'unknown';
  return { code: 'child_failed', message: `the row's call ended without an error code (${name})` };
}

/** The batch's counters in its search attributes are brought up to date at most this often. */
const COUNTS_EVERY_MS = 10_000;

/** How often rows carried from an earlier run that have not reported are looked up. */
const DEFAULT_CARRIED_CHECK_MS = 10 * 60_000;

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
  // Versioned: runs before compact rows took webhooks refused the two together at their start.
  if (input.compact && input.webhooks && !patched('batch-compact-rows-take-webhooks')) {
    throw ApplicationFailure.create({
      type: 'invalid_options',
      message: 'a compact batch polls: webhooks need rows run as workflows (leave out compact)',
      nonRetryable: true,
    });
  }
  const chunkSize = Math.max(1, Math.floor(input.chunkSize ?? DEFAULT_CHUNK_SIZE));
  // The summary goes beside the file the user asked for: the CSV when there is one.
  const summaryBase = input.csvOutput ?? input.output;
  const threshold = input.historyThreshold ?? DEFAULT_HISTORY_THRESHOLD;
  const carriedCheckMs = input.carriedCheckMs ?? DEFAULT_CARRIED_CHECK_MS;

  let s: CarriedState;
  if (input.carried) {
    s = input.carried;
  } else {
    // A stored batch's rows were loaded by its launcher: the store says how many there are.
    const [inspection, keys] = await Promise.all([
      input.store
        ? files.storedBatchInput({ batchId: input.batchId }).then((stored) => ({
            ...stored,
            dataOffset: 0,
            header: undefined,
          }))
        : firstPass.inspectBatchInput({
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
    let reopened: Awaited<ReturnType<BatchActivities['reopenBatchOutput']>> | undefined;
    if (input.reopen && input.store) {
      reopened = await exporting.reopenStoredResults({
        batchId: input.batchId,
        perRow: TYPICAL_CREDITS[endpoint.price],
      });
    } else if (input.reopen) {
      // Run again with a higher budget: the rows skipped for the budget lose their lines.
      reopened = await exporting.reopenBatchOutput({
        path: input.output,
        perRow: TYPICAL_CREDITS[endpoint.price],
      });
    } else if (input.store) {
      // Nothing to create: the store keeps one result per row of the batch.
    } else if (patched('batch-output-never-truncated')) {
      // Versioned (see README, "Upgrading workers"): batches started by 0.1.0 truncated here.
      await files.createBatchOutput({ path: input.output });
    } else await files.resetBatchOutput({ path: input.output });
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
      ...(reopened
        ? { counters: reopened.counters, failedRows: reopened.failedRows, skipWritten: true }
        : {}),
    };
    if (input.store) {
      // The store marked the duplicates when the rows were loaded.
      if (input.dedupe !== false) {
        s.dedupe = true;
        s.duplicatesTotal = (inspection as { duplicates?: number }).duplicates ?? 0;
      }
    } else if (
      // Versioned: batches started before duplicates were found sent every row.
      input.dedupe !== false &&
      inspection.total > 1 &&
      patched('batch-deduplicates-rows')
    ) {
      const found = await firstPass.indexDuplicateRows({
        source: input.source,
        endpoint: endpoint.name,
        ...(inspection.header ? { header: inspection.header } : {}),
        from: s.cursor,
        index: duplicatesIndexPath(input.output, input.batchId),
        ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
      });
      s.dedupe = true;
      // For the ETA: these rows send nothing.
      s.duplicatesTotal = found.duplicates;
    }
  }
  s.runs += 1;
  // Versioned (see README, "Upgrading workers"): runs of 0.1.x waited for every row in flight
  // before continuing as new. Now rows in flight go along to the next run and report to the
  // batch's workflow id, so the window stays full; their calls outlive the run (ABANDON).
  const carryRows = patched('batch-rows-carried-across-runs');
  const maxCredits = s.maxCredits ?? input.maxCredits;
  const rules = new BatchRules(
    s,
    {
      perRow: TYPICAL_CREDITS[endpoint.price],
      ...(maxCredits !== undefined ? { max: maxCredits } : {}),
    },
    input.webhooks === true,
  );
  const inputFiles: InputFiles = {
    path: input.source.path,
    format: input.source.format,
    ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
  };
  const startedAtMs = Date.parse(s.startedAt);

  /** Rows carried from an earlier run: they report by signal (or are looked up, if they never do). */
  const carriedRows = new Set(rules.inFlight.keys());
  /** Rows started by this run, not yet told to report to the batch's workflow id. */
  const own = new Set<number>();
  /** Rows told to report that had already ended: their result reaches this run. */
  const ending = new Set<number>();
  /** Child starts, and reads of a row's earlier call, still under way. */
  let starting = 0;
  let writing = false;
  let writeError: unknown;
  /** The output cannot be written (disk full, permissions): no append until a resume. */
  let outputBlocked = false;
  let resumeRequested = false;
  let cancelling = false;
  let state: BatchStateName = s.paused ? 'paused' : 'running';

  /** Set when a row ended: the loop looks again (a pause to show, a slot to fill). */
  let rowEnded = false;
  /** A row started or ended in this run: a run hands over only after it did something. */
  let progressed = false;
  const settle = (row: number, end: RowEnd) => {
    if (rules.settle(row, end, Date.now(), new Date().toISOString(), cancelling)) {
      rowEnded = true;
      progressed = true;
    }
  };

  const progress = (): BatchProgress => ({
    batchId: input.batchId,
    endpoint: endpoint.name,
    ...rules.progress(Date.now(), state),
    output: input.output,
    ...(input.store ? { stored: true } : {}),
    ...(input.csvRawCells ? { csvRawCells: true } : {}),
    source: inputFiles,
    ...(input.csvOutput ? { csvOutput: input.csvOutput } : {}),
  });

  // A static summary belongs to the first run only (continue-as-new cannot carry one): every run
  // opens its current details, which the Web UI shows beside it, with the same summary.
  const runHeading =
    `${batchSummaryLine(s.total, endpoint.name)} (run ${s.runs})\n` +
    `input ${input.source.path}\noutput ${input.output}` +
    (input.store ? '\nrows and results in the store' : '');
  let lastState: BatchStateName | undefined;
  let shownCounts = '';
  let countsShownAt = 0;
  const show = (next: BatchStateName) => {
    state = next;
    const stateChanged = state !== lastState;
    if (stateChanged) {
      lastState = state;
      upsertSearchAttributes([{ key: PcdsState, value: state }] as SearchAttributeUpdatePair[]);
    }
    // The list view's progress columns: at most one upsert per COUNTS_EVERY_MS (an event each),
    // and at every change of state, so a finished or paused batch shows its final counts.
    const c = s.counters;
    const counts = `${c.done}/${c.failed}`;
    if (
      counts !== shownCounts &&
      (stateChanged || Date.now() - countsShownAt >= COUNTS_EVERY_MS) &&
      patched('batch-counters-searchable')
    ) {
      shownCounts = counts;
      countsShownAt = Date.now();
      upsertSearchAttributes([
        { key: PcdsRowsDone, value: c.done },
        { key: PcdsRowsFailed, value: c.failed },
      ] as SearchAttributeUpdatePair[]);
    }
    setCurrentDetails(`${runHeading}\n\n${rules.details(state)}`);
  };

  setHandler(batchProgressQuery, progress);
  setHandler(pauseBatchSignal, (arg) => rules.pauseByOperator(arg?.reason));
  setHandler(resumeBatchSignal, (arg) => {
    if (typeof arg?.maxCredits === 'number') rules.setBudget(arg.maxCredits);
    resumeRequested = true;
  });
  setHandler(setBatchWindowSignal, (width) => {
    if (typeof width === 'number') rules.setWindow(width);
  });
  // A row's call that outlived the run that started it. Each row ends once: a second report
  // of the same row (its result also reached the run that started it) changes nothing.
  setHandler(rowFinishedSignal, (report) => {
    const { row, ...end } = report;
    settle(row, end);
  });

  upsertSearchAttributes([
    { key: PcdsBatchId, value: input.batchId },
    { key: PcdsEndpoint, value: endpoint.name },
  ] as SearchAttributeUpdatePair[]);
  show(state);

  /** Starts one append if none is running; appends are never concurrent for a batch. */
  const startWrite = () => {
    const results = rules.results;
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
    (input.store
      ? files.writeStoredResults({ batchId: input.batchId, lines })
      : files.appendBatchResults({ path: input.output, lines })
    ).then(
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
          rules.pauseForOutput(cause.message);
          return;
        }
        writeError = err;
      },
    );
  };

  const startRow = (row: ValidRow, keyId: string, redo: boolean) => {
    // Webhook rows wait for the delivery; polling rows poll first when the job is likely done.
    const firstPollDelayMs = input.webhooks ? undefined : rules.firstPollDelayMs();
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
      ...(input.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
      ...(input.pollIntervalMs ? { pollIntervalMs: input.pollIntervalMs } : {}),
      ...(firstPollDelayMs !== undefined ? { firstPollDelayMs } : {}),
      ...(input.maxWaitMs ? { maxWaitMs: input.maxWaitMs } : {}),
    };
    progressed = true;
    if (input.compact) {
      compactRows
        .runBatchRow({
          batchId: input.batchId,
          endpoint: endpoint.name,
          keyId,
          row: row.row,
          key: row.key,
          params: row.params,
          ...(input.store ? { store: true } : { output: input.output }),
          ...(input.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
          ...(input.pollIntervalMs ? { pollIntervalMs: input.pollIntervalMs } : {}),
          ...(firstPollDelayMs !== undefined ? { firstPollDelayMs } : {}),
          ...(input.maxWaitMs ? { maxWaitMs: input.maxWaitMs } : {}),
          ...(input.webhooks ? { webhook: true } : {}),
          ...(input.webhooks && input.webhookFallbackPollMs
            ? { webhookFallbackPollMs: input.webhookFallbackPollMs }
            : {}),
        })
        .then(
          (end) => settle(row.row, end),
          (err: unknown) => settle(row.row, { failure: failureOf(err) }),
        );
      return;
    }
    starting += 1;
    const started = () => {
      starting -= 1;
    };
    const rowType = patched('pcds-workflow-type-names') ? 'pcdsEndpointCall' : 'endpointCall';
    startChild<typeof endpointCall>(rowType, {
      workflowId: childWorkflowId(input.batchId, row.row),
      args: [call],
      // A row's call may outlive this run (continue-as-new) and then reports by signal. Runs of
      // 0.1.x had their rows cancelled when the run closed, so they waited for every row.
      parentClosePolicy: carryRows ? ParentClosePolicy.ABANDON : ParentClosePolicy.REQUEST_CANCEL,
      // A row runs again only when its earlier run failed with nothing accepted (a row sent back
      // by a 402, say). A first start never reuses an id: a row's earlier call that was cancelled
      // or failed after its job was accepted is taken as it ended, never submitted again.
      workflowIdReusePolicy:
        carryRows && !redo
          ? WorkflowIdReusePolicy.REJECT_DUPLICATE
          : WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
      typedSearchAttributes: [
        { key: PcdsBatchId, value: input.batchId },
        { key: PcdsEndpoint, value: endpoint.name },
        { key: PcdsRowIndex, value: row.row },
      ],
      staticSummary: `row ${row.row} of batch ${input.batchId} (${endpoint.name})`,
    }).then(
      (handle) => {
        started();
        if (carryRows) own.add(row.row);
        handle.result().then(
          (outcome) => settle(row.row, { outcome }),
          (err: unknown) => settle(row.row, { failure: failureOf(err) }),
        );
      },
      (err: unknown) => {
        const already = (err as Error | undefined)?.name === 'WorkflowExecutionAlreadyStartedError';
        if (!already) {
          started();
          return settle(row.row, { failure: failureOf(err) });
        }
        // This row's call already ran (the batch was reset to an earlier point): its outcome is
        // the row's, found or empty as it was, never a failure and never a second submit.
        // Versioned: batches started by 0.1.0 recorded row_already_run here.
        if (!patched('batch-row-already-run-takes-its-outcome')) {
          started();
          return settle(row.row, {
            failure: {
              code: 'row_already_run',
              message: 'a call for this row already completed under this batch id',
            },
          });
        }
        rows.existingRowOutcome({ workflowId: childWorkflowId(input.batchId, row.row) }).then(
          (existing) => {
            started();
            // A reopened batch meets rows whose call failed with nothing accepted (a 402 sent
            // them back, then the budget skipped them): they run again, as a redone row does.
            const sentBack =
              s.skipWritten &&
              'failure' in existing &&
              existing.failure.requestId === undefined &&
              isSystemic(existing.failure.code);
            if (sentBack) {
              if (rules.sendBack(row.row)) rowEnded = true;
            } else settle(row.row, existing);
          },
          (e: unknown) => {
            started();
            settle(row.row, { failure: failureOf(e) });
          },
        );
      },
    );
  };

  const readMore = async () => {
    const got = input.store
      ? await files.readStoredRows({
          batchId: input.batchId,
          from: s.cursor,
          count: chunkSize,
          maxBytes: DEFAULT_CHUNK_BYTES,
          dedupe: s.dedupe === true,
          ...(s.skipWritten ? { skipWritten: true } : {}),
        })
      : await files.readBatchRows({
          source: input.source,
          endpoint: endpoint.name,
          ...(s.header ? { header: s.header } : {}),
          from: s.cursor,
          count: chunkSize,
          maxBytes: DEFAULT_CHUNK_BYTES,
          ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
          ...(s.dedupe ? { duplicates: duplicatesIndexPath(input.output, input.batchId) } : {}),
          ...(s.skipWritten ? { skipWritten: input.output } : {}),
        });
    rules.queue.push(...got.rows);
    s.cursor = got.next;
  };

  const resume = async () => {
    resumeRequested = false;
    outputBlocked = false;
    if (!s.paused) return;
    const keys = await accounts.batchKeyPool({ ...(input.keyIds ? { keyIds: input.keyIds } : {}) });
    const { closeCreditBreakers } = rules.resume(keys);
    // Only a pause for credits closes the keys' credit breakers: an operator's pause or a full
    // disk says nothing about the account having been topped up. (Batches started by 0.1.0
    // closed them on every resume: versioned, see README, "Upgrading workers".)
    const creditsOnly = patched('batch-resume-closes-breakers-after-402-only');
    if (!creditsOnly || closeCreditBreakers)
      await accounts.resetCreditBreakers({ keyIds: keys.map((k) => k.id) });
  };

  /** Rows carried from an earlier run that never reported (their call was terminated, say). */
  const lookUpCarried = async () => {
    const left = [...carriedRows].filter((r) => rules.inFlight.has(r));
    if (left.length === 0) return;
    const ended = await accounts.endedRowCalls({
      workflowIds: left.map((r) => childWorkflowId(input.batchId, r)),
    });
    ended.forEach((end, i) => {
      if (end) settle(left[i], end);
    });
  };
  let lastLookUp = Date.now();
  /** Waits for `ready`; with carried rows outstanding, looks them up every carriedCheckMs. */
  const waitFor = async (ready: () => boolean) => {
    if (![...carriedRows].some((r) => rules.inFlight.has(r))) return condition(ready);
    const left = Math.max(1, lastLookUp + carriedCheckMs - Date.now());
    if (await condition(ready, left)) return;
    await lookUpCarried();
    lastLookUp = Date.now();
  };

  /** Tells the rows this run started to report to the batch's workflow id from now on. */
  const handOver = async () => {
    const batchWorkflowId = workflowInfo().workflowId;
    const told = [...own].filter((r) => rules.inFlight.has(r));
    own.clear();
    await Promise.all(
      told.map((r) =>
        getExternalWorkflowHandle(childWorkflowId(input.batchId, r))
          .signal(reportToBatchSignal, { batchWorkflowId })
          // Already ended: its result reaches this run, which waits for it.
          .catch(() => ending.add(r)),
      ),
    );
  };

  const wantsNewRun = () =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= threshold;

  /** Old runs: wait for every row in flight, then continue as new. */
  let draining = false;
  /** Continue as new with the rows in flight, once starts and writes have settled. */
  let handingOver = false;
  try {
    for (;;) {
      rowEnded = false;
      if (writeError) {
        const err = writeError;
        writeError = undefined;
        throw err instanceof Error ? err : new Error('the output could not be written');
      }
      if (resumeRequested) await resume();
      if (!draining && !handingOver && wantsNewRun()) {
        // A compact batch's rows are activities of this run: it waits for them.
        if (!carryRows || input.compact) draining = true;
        else if (progressed) handingOver = true;
      }
      if (!draining && !handingOver) {
        if (rules.wantsRows()) {
          await readMore();
          continue;
        }
        for (const next of rules.takeStartable(Date.now()))
          startRow(next.row, next.keyId, next.redo);
      }
      startWrite();
      if (handingOver && starting === 0 && [...own].some((r) => rules.inFlight.has(r))) {
        await handOver();
        continue;
      }
      if (runOver()) {
        // Handlers that ran while this run closed are taken before it does.
        await condition(allHandlersFinished);
        if (runOver()) break;
        continue;
      }
      show(draining || handingOver ? 'draining' : s.paused ? 'paused' : 'running');
      await waitFor(
        () =>
          rowEnded ||
          (!writing && !outputBlocked && rules.results.length > 0) ||
          resumeRequested ||
          writeError !== undefined ||
          (!draining && !handingOver && rules.canStart()) ||
          (handingOver && starting === 0 && [...own].some((r) => rules.inFlight.has(r))) ||
          (carryRows && !draining && !handingOver && progressed && wantsNewRun()) ||
          runOver(),
      );
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    cancelling = true;
    show('cancelling');
    // This run's rows were cancelled with it; rows carried from an earlier run are asked here.
    // What finished is written, then the batch stops.
    await CancellationScope.nonCancellable(async () => {
      await Promise.all(
        [...carriedRows]
          .filter((r) => rules.inFlight.has(r))
          .map((r) =>
            getExternalWorkflowHandle(childWorkflowId(input.batchId, r))
              .cancel()
              .catch(() => undefined),
          ),
      );
      while (rules.inFlight.size > 0 || starting > 0)
        await waitFor(() => rules.inFlight.size === 0 && starting === 0);
      await flushAll();
    });
    const summary = await CancellationScope.nonCancellable(async () =>
      summarize('cancelled', await writeCsv('cancelled')),
    );
    await CancellationScope.nonCancellable(() => saveSummary(summary));
    show('cancelled');
    return summary;
  }

  /** The summary beside the output, or (a stored batch) with the batch's record. */
  async function saveSummary(summary: BatchSummary): Promise<void> {
    if (input.store) await files.saveStoredSummary({ batchId: input.batchId, summary });
    else await files.writeBatchSummary({ path: summaryBase, summary });
  }

  /** Everything of this run is written: the batch is done, or ready to continue as new. */
  function runOver(): boolean {
    const written = rules.results.length === 0 && !writing;
    if (handingOver) {
      const waiting = [...own, ...ending].some((r) => rules.inFlight.has(r));
      return written && starting === 0 && !waiting;
    }
    const idle = rules.inFlight.size === 0 && starting === 0 && written;
    return idle && (draining || rules.allStarted());
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
      if (rules.results.length === 0) return;
      startWrite();
    }
  }

  /** With a CSV output: the CSV in row order, from the JSONL. A failure is told, not fatal. */
  async function writeCsv(
    final: 'done' | 'cancelled',
  ): Promise<{ csv?: ExportReport; csvError?: string }> {
    // A stored batch's CSV is written where its caller runs, from the store.
    if (!input.csvOutput || input.store) return {};
    try {
      const csv = await exporting.exportBatchCsv({
        source: inputFiles,
        lines: input.output,
        target: input.csvOutput,
        ...(input.csvRawCells ? { rawCells: true } : {}),
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
    const estimate = estimateJobMs(s.jobMs!);
    const perRow = requestsPerRow(s.requests!);
    return {
      batchId: input.batchId,
      endpoint: endpoint!.name,
      state: final,
      total: s.total,
      ...s.counters,
      output: input.output,
      ...(input.store ? { stored: true } : {}),
      ...(input.csvRawCells ? { csvRawCells: true } : {}),
      startedAt: s.startedAt,
      finishedAt: finishedAt.toISOString(),
      seconds: Math.round(seconds * 10) / 10,
      rowsPerSecond: Math.round((s.counters.done / seconds) * 100) / 100,
      runs: s.runs,
      batchHistoryEvents: s.historyEvents + workflowInfo().historyLength,
      blankLines: s.blankLines ?? 0,
      source: inputFiles,
      ...(input.csvOutput ? { csvOutput: input.csvOutput } : {}),
      failedRows: [...s.failedRows!],
      ...(rules.credits.max !== undefined ? { maxCredits: rules.credits.max } : {}),
      ...(estimate !== undefined ? { jobMsEstimate: estimate } : {}),
      ...(perRow !== undefined ? { requestsPerRow: perRow } : {}),
      ...csv,
    };
  }

  if (draining || handingOver) {
    show('draining');
    return continueAsNew<typeof batchWorkflow>({
      ...input,
      carried: rules.carry(workflowInfo().historyLength, handingOver),
    });
  }

  const summary = summarize('done', await writeCsv('done'));
  await saveSummary(summary);
  show('done');
  return summary;
}
