// A batch: the rows its launcher loaded into the store fanned out as row calls in a sliding
// window, results written to the store as they arrive (one line per row), paused instead of
// failing every row when the key or the account is at fault, and continued-as-new so its history
// stays bounded at any size. What a run knows and decides is a BatchRun (batch/batch-run.ts);
// this function wires it to Temporal.
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  setHandler,
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
import type { BatchInput, BatchSummary } from '../batch/types.js';
import { PcdsBatchId, PcdsEndpoint } from '../temporal/search-attributes.js';
import {
  handOver,
  readMore,
  resume,
  show,
  startWrite,
  throwIfWriteFailed,
  upsert,
  waitFor,
  windDown,
} from './batch-loop.js';
import { checkBatchInput, firstRunState, saveSummary } from './batch-steps.js';
import { rowLauncher } from './row-launchers.js';

export async function batchWorkflow(input: BatchInput): Promise<BatchSummary> {
  const endpoint = checkBatchInput(input);
  const s = input.carried ?? (await firstRunState(input, endpoint));
  const run = new BatchRun(input, s, {
    endpoint: endpoint.name,
    perRow: TYPICAL_CREDITS[endpoint.price],
    // Versioned (see docs/upgrading.md): runs of 0.1.x waited for every row in flight
    // before continuing as new. Now rows in flight go along to the next run and report to the
    // batch's workflow id, so the window stays full; their calls outlive the run (ABANDON).
    carryRows: patched('batch-rows-carried-across-runs'),
  });
  const launcher = rowLauncher(input, endpoint.name, run);
  const history = () => workflowInfo();

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
  show(run, run.currentState());

  try {
    for (;;) {
      run.beginTurn();
      throwIfWriteFailed(run);
      if (run.resumeRequested) await resume(input, run);
      run.considerNewRun(history());
      if (run.launching) {
        if (run.wantsRows()) {
          await readMore(input, run);
          continue;
        }
        for (const next of run.takeStartable()) launcher.start(next);
      }
      startWrite(input, run);
      if (run.handOverDue()) {
        await handOver(input, run);
        continue;
      }
      if (run.runOver()) {
        // Handlers that ran while this run closed are taken before it does.
        await condition(allHandlersFinished);
        if (run.runOver()) break;
        continue;
      }
      show(run, run.currentState());
      await waitFor(input, run, () => run.shouldWake(history));
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    run.cancel();
    show(run, 'cancelling');
    // This run's rows were cancelled with it; rows carried from an earlier run are asked here.
    // What finished is written, then the batch stops.
    await CancellationScope.nonCancellable(() => windDown(input, run));
    const summary = run.summary('cancelled', workflowInfo().historyLength);
    await CancellationScope.nonCancellable(() => saveSummary(input, summary));
    show(run, 'cancelled');
    return summary;
  }

  if (run.continuesAsNew) {
    show(run, 'draining');
    return continueAsNew<typeof batchWorkflow>({
      ...input,
      carried: run.carry(workflowInfo().historyLength, {
        // Versioned: runs started before carried how every leader ended, however many there were.
        leadersInStore: input.store === true && patched('batch-leader-ends-read-from-store'),
      }),
    });
  }
  const summary = run.summary('done', workflowInfo().historyLength);
  await saveSummary(input, summary);
  show(run, 'done');
  return summary;
}
