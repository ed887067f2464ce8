// How a batch's rows run, chosen once per run: each row as a child endpoint call (rows as
// workflows), or, for a compact batch, as one activity that submits, polls and writes its line.
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  patched,
  startChild,
} from '@temporalio/workflow';
import type { BatchRun, StartableRow } from '../batch/batch-run.js';
import { expectedStoreOf, type BatchInput } from '../batch/types.js';
import { batchRequester, isSystemic, type Requester } from '../contract/index.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsRowIndex,
  firstPhaseAttributes,
} from '../temporal/search-attributes.js';
import { taskPriorityOf } from '../temporal/task-priority.js';
import { rowWorkflowId } from '../contract/workflow-ids.js';
import { compactRowsWith, rows } from './batch-activities.js';
import type { endpointCall } from './endpoint-call.js';
import type { CallInput } from '../calls/types.js';
import { rowFailure } from '../calls/failure-code.js';

/** Starts the call of a row the run marked in flight; how it ends reaches `run.settle`. */
export interface RowLauncher {
  start(next: StartableRow): void;
}

/** The launcher for this run's rows. */
export function rowLauncher(input: BatchInput, endpoint: string, run: BatchRun): RowLauncher {
  return input.compact
    ? compactLauncher(input, endpoint, run)
    : childLauncher(input, endpoint, run);
}

/** Every row's requests are its batch's: one requester, whatever the batch's window. */
const rowRequester = (input: BatchInput): Requester =>
  batchRequester(input.batchId, input.tenant, input.weight);

/** What every row's call is told: how to poll, and (webhooks) how long to wait for a delivery. */
function pollOptions(input: BatchInput, run: BatchRun) {
  // Webhook rows wait for the delivery; polling rows poll first when the job is likely done.
  const firstPollDelayMs = input.webhooks ? undefined : run.rules.firstPollDelayMs();
  return {
    ...(input.webhooks ? { webhook: true } : {}),
    ...(input.webhooks && input.webhookFallbackPollMs
      ? { webhookFallbackPollMs: input.webhookFallbackPollMs }
      : {}),
    ...(input.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
    ...(input.pollIntervalMs ? { pollIntervalMs: input.pollIntervalMs } : {}),
    ...(firstPollDelayMs !== undefined ? { firstPollDelayMs } : {}),
    ...(input.maxWaitMs ? { maxWaitMs: input.maxWaitMs } : {}),
    requester: rowRequester(input),
  };
}

function compactLauncher(input: BatchInput, endpoint: string, run: BatchRun): RowLauncher {
  // Worker slots follow the throttle's policy: the batch's fairness key and weight on every row.
  const compactRows = compactRowsWith(taskPriorityOf(rowRequester(input)));
  return {
    start({ row, keyId }) {
      compactRows
        .runBatchRow({
          batchId: input.batchId,
          endpoint,
          keyId,
          row: row.row,
          key: row.key,
          params: row.params,
          ...(input.rowIdScheme ? { rowIdScheme: input.rowIdScheme } : {}),
          store: true,
          ...expectedStoreOf(input),
          ...pollOptions(input, run),
        })
        .then(
          (end) => run.settle(row.row, end),
          (err: unknown) => run.settle(row.row, { failure: rowFailure(err) }),
        );
    },
  };
}

function childLauncher(input: BatchInput, endpoint: string, run: BatchRun): RowLauncher {
  const carryRows = run.options.carryRows;
  const rowId = (rowNumber: number) => rowWorkflowId(input.batchId, rowNumber, input.rowIdScheme);
  const priority = taskPriorityOf(rowRequester(input));

  /** This row's call already ran (the batch was reset to an earlier point): its end is taken. */
  const takeEarlierCall = (rowNumber: number) => {
    // Its outcome is the row's, found or empty as it was, never a failure and never a second
    // submit. Versioned: batches started by 0.1.0 recorded row_already_run here.
    if (!patched('batch-row-already-run-takes-its-outcome')) {
      run.startEnded();
      return run.settle(rowNumber, {
        failure: {
          code: 'row_already_run',
          message: 'a call for this row already completed under this batch id',
        },
      });
    }
    // Taken only if it is this batch's call for this row: a workflow of another kind or batch
    // under the id (an id of an older scheme, chosen by someone else) is never waited for.
    rows
      .existingRowOutcome({ workflowId: rowId(rowNumber), batchId: input.batchId, row: rowNumber })
      .then(
        (existing) => {
          run.startEnded();
          // A reopened batch meets rows whose call failed with nothing accepted (a 402 sent
          // them back, then the budget skipped them): they run again, as a redone row does.
          const sentBack =
            run.s.skipWritten &&
            'failure' in existing &&
            existing.failure.requestId === undefined &&
            isSystemic(existing.failure.code);
          if (sentBack) run.sendBack(rowNumber);
          else run.settle(rowNumber, existing);
        },
        (e: unknown) => {
          run.startEnded();
          run.settle(rowNumber, { failure: rowFailure(e) });
        },
      );
  };

  return {
    start({ row, keyId, redo }) {
      const call: CallInput = {
        endpoint,
        params: row.params,
        keyId,
        batchId: input.batchId,
        rowIndex: row.row,
        ...pollOptions(input, run),
        // Decided here for every row (an input, not a marker in each row's history).
        firstPollInSubmit: true,
      };
      // The row starts showing its first phase, which its call then need not upsert: one event
      // and one visibility write less a row. Versioned: rows started before upserted it.
      const showing = patched('row-start-shows-first-phase');
      if (showing) call.startedShowing = true;
      run.startBegan();
      const rowType = patched('pcds-workflow-type-names') ? 'pcdsEndpointCall' : 'endpointCall';
      startChild<typeof endpointCall>(rowType, {
        workflowId: rowId(row.row),
        args: [call],
        priority,
        // A row's call may outlive this run (continue-as-new) and then reports by signal. Runs of
        // 0.1.x had their rows cancelled when the run closed, so they waited for every row.
        parentClosePolicy: carryRows ? ParentClosePolicy.ABANDON : ParentClosePolicy.REQUEST_CANCEL,
        // A row runs again only when its earlier run failed with nothing accepted (a row sent
        // back by a 402, say). A first start never reuses an id: a row's earlier call that was
        // cancelled or failed after its job was accepted is taken as it ended, never submitted
        // again.
        workflowIdReusePolicy:
          carryRows && !redo
            ? WorkflowIdReusePolicy.REJECT_DUPLICATE
            : WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
        typedSearchAttributes: [
          { key: PcdsBatchId, value: input.batchId },
          { key: PcdsEndpoint, value: endpoint },
          { key: PcdsRowIndex, value: row.row },
          ...(showing ? firstPhaseAttributes(keyId) : []),
        ],
        staticSummary: `row ${row.row} of batch ${input.batchId} (${endpoint})`,
      }).then(
        (handle) => {
          run.startEnded(row.row);
          handle.result().then(
            (outcome) => run.settle(row.row, { outcome }),
            (err: unknown) => run.settle(row.row, { failure: rowFailure(err) }),
          );
        },
        (err: unknown) => {
          if (err instanceof WorkflowExecutionAlreadyStartedError) return takeEarlierCall(row.row);
          run.startEnded();
          run.settle(row.row, { failure: rowFailure(err) });
        },
      );
    },
  };
}
