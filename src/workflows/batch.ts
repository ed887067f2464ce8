// A batch: the rows of a file fanned out as row calls in a sliding window, results written as
// they arrive (one line per row), paused instead of failing every row when the key or the account
// is at fault, and continued-as-new so its history stays bounded at any size. What the run knows
// and decides is a BatchRun (batch/batch-run.ts); this function wires it to Temporal.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { BatchRun } from '../batch/batch-run.js';
import { TYPICAL_CREDITS } from '../batch/cost.js';
import {
  batchProgressQuery,
  pauseBatchSignal,
  resumeBatchSignal,
  rowFinishedSignal,
  setBatchWindowSignal,
} from '../batch/messages.js';
import {
  childWorkflowId,
  type BatchInput,
  type BatchStateName,
  type BatchSummary,
} from '../batch/types.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsRowsDone,
  PcdsRowsFailed,
  PcdsState,
} from '../temporal/search-attributes.js';
import { accounts } from './batch-activities.js';
import {
  applicationFailureOf,
  checkBatchInput,
  firstRunState,
  keyPoolOf,
  readRows,
  saveSummary,
  writeCsv,
  writeLines,
} from './batch-steps.js';
import { rowLauncher } from './row-launchers.js';
import { reportToBatchSignal } from './signals.js';

const upsert = (pairs: SearchAttributeUpdatePair[]) => upsertSearchAttributes(pairs);

export async function batchWorkflow(input: BatchInput): Promise<BatchSummary> {
  const endpoint = checkBatchInput(input);
  const s = input.carried ?? (await firstRunState(input, endpoint));
  const run = new BatchRun(input, s, {
    endpoint: endpoint.name,
    perRow: TYPICAL_CREDITS[endpoint.price],
    // Versioned (see README, "Upgrading workers"): runs of 0.1.x waited for every row in flight
    // before continuing as new. Now rows in flight go along to the next run and report to the
    // batch's workflow id, so the window stays full; their calls outlive the run (ABANDON).
    carryRows: patched('batch-rows-carried-across-runs'),
  });
  const launcher = rowLauncher(input, endpoint.name, run);
  const history = () => workflowInfo();

  const show = (next: BatchStateName) => {
    const shown = run.show(next);
    if (shown.state) upsert([{ key: PcdsState, value: shown.state }]);
    if (shown.counts && patched('batch-counters-searchable')) {
      run.countsShown(shown.counts);
      upsert([
        { key: PcdsRowsDone, value: shown.counts.done },
        { key: PcdsRowsFailed, value: shown.counts.failed },
      ]);
    }
    setCurrentDetails(shown.details);
  };

  setHandler(batchProgressQuery, () => run.progress());
  setHandler(pauseBatchSignal, (arg) => run.pause(arg?.reason));
  setHandler(resumeBatchSignal, (arg) => run.requestResume(arg?.maxCredits));
  setHandler(setBatchWindowSignal, (width) => run.setWindow(width));
  // A row's call that outlived the run that started it (its result may also reach this run).
  setHandler(rowFinishedSignal, ({ row, ...end }) => run.settle(row, end));
  upsert([
    { key: PcdsBatchId, value: input.batchId },
    { key: PcdsEndpoint, value: endpoint.name },
  ]);
  show(run.currentState());

  /** Starts one append if none is running; appends are never concurrent for a batch. */
  const startWrite = () => {
    const lines = run.nextWrite();
    if (!lines) return;
    writeLines(input, lines).then(
      () => run.writeEnded(lines),
      (err: unknown) => {
        const unwritable = applicationFailureOf(err);
        if (isCancellation(err)) run.writeEnded(lines, { kind: 'cut' });
        else if (unwritable?.type === 'output_unwritable')
          run.writeEnded(lines, { kind: 'unwritable', message: unwritable.message });
        else run.writeEnded(lines, { kind: 'error', error: err });
      },
    );
  };
  const throwIfWriteFailed = () => {
    const err = run.takeWriteError();
    if (err) throw err;
  };

  const resume = async () => {
    if (!run.beginResume()) return;
    const keys = await keyPoolOf(input);
    const { closeCreditBreakers } = run.resume(keys);
    // Only a pause for credits closes the keys' credit breakers: an operator's pause or a full
    // disk says nothing about the account having been topped up. (Batches started by 0.1.0
    // closed them on every resume: versioned, see README, "Upgrading workers".)
    const creditsOnly = patched('batch-resume-closes-breakers-after-402-only');
    if (!creditsOnly || closeCreditBreakers)
      await accounts.resetCreditBreakers({ keyIds: keys.map((k) => k.id) });
  };

  /** Waits for `ready`; with carried rows outstanding, looks up those that never reported. */
  const waitFor = async (ready: () => boolean) => {
    const lookUpInMs = run.lookUpInMs();
    if (lookUpInMs === undefined) return condition(ready);
    if (await condition(ready, lookUpInMs)) return;
    await lookUpCarried();
    run.lookedUp();
  };
  /** Rows carried from an earlier run that never reported (their call was terminated, say). */
  const lookUpCarried = async () => {
    const left = run.carriedLeft();
    if (left.length === 0) return;
    const ended = await accounts.endedRowCalls({
      workflowIds: left.map((r) => childWorkflowId(input.batchId, r)),
    });
    ended.forEach((end, i) => end && run.settle(left[i], end));
  };
  // Own async steps, as the loop has always awaited them: the order in which promises settle
  // within one activation decides the order of commands, so it stays as recorded.
  const readMore = async () => run.read(await readRows(input, endpoint.name, s));

  /** Tells the rows this run started to report to the batch's workflow id from now on. */
  const handOver = async () => {
    const batchWorkflowId = workflowInfo().workflowId;
    await Promise.all(
      run.takeRowsToTell().map((r) =>
        getExternalWorkflowHandle(childWorkflowId(input.batchId, r))
          .signal(reportToBatchSignal, { batchWorkflowId })
          // Already ended: its result reaches this run, which waits for it.
          .catch(() => run.endedBeforeTold(r)),
      ),
    );
  };

  /** The lines not yet written, written (after a resume, if the output is blocked). */
  const flushAll = async () => {
    for (;;) {
      await condition(() => run.canFlush());
      if (run.outputIsBlocked) await resume();
      throwIfWriteFailed();
      if (run.linesToWrite === 0) return;
      startWrite();
    }
  };

  try {
    for (;;) {
      run.beginTurn();
      throwIfWriteFailed();
      if (run.resumeRequested) await resume();
      run.considerNewRun(history());
      if (run.launching) {
        if (run.wantsRows()) {
          await readMore();
          continue;
        }
        for (const next of run.takeStartable()) launcher.start(next);
      }
      startWrite();
      if (run.handOverDue()) {
        await handOver();
        continue;
      }
      if (run.runOver()) {
        // Handlers that ran while this run closed are taken before it does.
        await condition(allHandlersFinished);
        if (run.runOver()) break;
        continue;
      }
      show(run.currentState());
      await waitFor(() => run.shouldWake(history));
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    run.cancel();
    show('cancelling');
    // This run's rows were cancelled with it; rows carried from an earlier run are asked here.
    // What finished is written, then the batch stops.
    await CancellationScope.nonCancellable(async () => {
      await Promise.all(
        run.carriedLeft().map((r) =>
          getExternalWorkflowHandle(childWorkflowId(input.batchId, r))
            .cancel()
            .catch(() => undefined),
        ),
      );
      while (!run.quiet()) await waitFor(() => run.quiet());
      await flushAll();
    });
    const summary = await CancellationScope.nonCancellable(async () => {
      const csv = await writeCsv(input, run.inputFiles, 'cancelled');
      return run.summary('cancelled', workflowInfo().historyLength, csv);
    });
    await CancellationScope.nonCancellable(() => saveSummary(input, summary));
    show('cancelled');
    return summary;
  }

  if (run.continuesAsNew) {
    show('draining');
    return continueAsNew<typeof batchWorkflow>({
      ...input,
      carried: run.carry(workflowInfo().historyLength),
    });
  }
  const csv = await writeCsv(input, run.inputFiles, 'done');
  const summary = run.summary('done', workflowInfo().historyLength, csv);
  await saveSummary(input, summary);
  show('done');
  return summary;
}
