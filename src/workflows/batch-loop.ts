// The batch loop's steps that reach Temporal: what a run shows, its appends, a resume, waits that
// look up carried rows, the hand-over of rows to the next run, the final flush. Each keeps the
// awaits it was recorded with: the order in which promises settle within one activation decides
// the order of commands, so an await added or removed here breaks the replay of running batches.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { BatchRun } from '../batch/batch-run.js';
import type { BatchInput, BatchStateName } from '../batch/types.js';
import { rowWorkflowId } from '../contract/workflow-ids.js';
import { PcdsRowsDone, PcdsRowsFailed, PcdsState } from '../temporal/search-attributes.js';
import { accounts } from './batch-activities.js';
import { applicationFailureOf, keyPoolOf, readRows, writeLines } from './batch-steps.js';
import { reportToBatchSignal } from '../calls/signals.js';

export const upsert = (pairs: SearchAttributeUpdatePair[]) => upsertSearchAttributes(pairs);

/** Shows `next` in the search attributes (when due) and in the run's current details. */
export function show(run: BatchRun, next: BatchStateName): void {
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
}

/** The next chunk of rows, read into the run. */
export async function readMore(input: BatchInput, run: BatchRun): Promise<void> {
  run.read(await readRows(input, run.s));
}

/** Starts one append if none is running; appends are never concurrent for a batch. */
export function startWrite(input: BatchInput, run: BatchRun): void {
  const lines = run.nextWrite();
  if (!lines) return;
  writeLines(input, lines).then(
    () => run.writeEnded(lines),
    (err: unknown) => {
      const failure = applicationFailureOf(err);
      if (isCancellation(err)) run.writeEnded(lines, { kind: 'cut' });
      else if (failure?.type === 'output_unwritable')
        run.writeEnded(lines, { kind: 'unwritable', message: failure.message });
      else run.writeEnded(lines, { kind: 'error', error: err });
    },
  );
}

/** A failed append fails the batch. */
export function throwIfWriteFailed(run: BatchRun): void {
  const err = run.takeWriteError();
  if (err) throw err;
}

/** A resume: the worker's keys read again, and their credit breakers closed when due. */
export async function resume(input: BatchInput, run: BatchRun): Promise<void> {
  if (!run.beginResume()) return;
  const keys = await keyPoolOf(input);
  const { closeCreditBreakers } = run.resume(keys);
  // Only a pause for credits closes the keys' credit breakers: an operator's pause or a full
  // disk says nothing about the account having been topped up. (Batches started by 0.1.0
  // closed them on every resume: versioned, see docs/upgrading.md.)
  const creditsOnly = patched('batch-resume-closes-breakers-after-402-only');
  if (!creditsOnly || closeCreditBreakers)
    await accounts.resetCreditBreakers({ keyIds: keys.map((k) => k.id) });
}

/** Rows carried from an earlier run that never reported (their call was terminated, say). */
async function lookUpCarried(input: BatchInput, run: BatchRun): Promise<void> {
  const left = run.carriedLeft();
  if (left.length === 0) return;
  const ended = await accounts.endedRowCalls({
    workflowIds: left.map((r) => rowWorkflowId(input.batchId, r, input.rowIdScheme)),
  });
  ended.forEach((end, i) => end && run.settle(left[i], end));
}

/** Waits for `ready`; with carried rows outstanding, looks up those that never reported. */
export async function waitFor(
  input: BatchInput,
  run: BatchRun,
  ready: () => boolean,
): Promise<void> {
  const lookUpInMs = run.lookUpInMs();
  if (lookUpInMs === undefined) return condition(ready);
  if (await condition(ready, lookUpInMs)) return;
  await lookUpCarried(input, run);
  run.lookedUp();
}

/** Tells the rows this run started to report to the batch's workflow id from now on. */
export async function handOver(input: BatchInput, run: BatchRun): Promise<void> {
  const batchWorkflowId = workflowInfo().workflowId;
  await Promise.all(
    run.takeRowsToTell().map((r) =>
      getExternalWorkflowHandle(rowWorkflowId(input.batchId, r, input.rowIdScheme))
        .signal(reportToBatchSignal, { batchWorkflowId })
        // Already ended: its result reaches this run, which waits for it.
        .catch(() => run.endedBeforeTold(r)),
    ),
  );
}

/** A cancelled batch: carried rows are asked to stop, rows in flight end, every line is written. */
export async function windDown(input: BatchInput, run: BatchRun): Promise<void> {
  await Promise.all(
    run.carriedLeft().map((r) =>
      getExternalWorkflowHandle(rowWorkflowId(input.batchId, r, input.rowIdScheme))
        .cancel()
        .catch(() => undefined),
    ),
  );
  while (!run.quiet()) await waitFor(input, run, () => run.quiet());
  await flushAll(input, run);
}

/** The lines not yet written, written (after a resume, if the output is blocked). */
async function flushAll(input: BatchInput, run: BatchRun): Promise<void> {
  for (;;) {
    await condition(() => run.canFlush());
    if (run.outputIsBlocked) await resume(input, run);
    throwIfWriteFailed(run);
    if (run.linesToWrite === 0) return;
    startWrite(input, run);
  }
}
