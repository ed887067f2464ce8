// Batch activities that need the worker's dependencies: the key pool (ids and limits, never
// secrets), closing credit breakers on resume, and what a row's earlier call came to. The factory
// also gathers the store's activities, so the worker registers batches with one line.
import { Context } from '@temporalio/activity';
import {
  WorkflowFailedError,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { PoolKeyConfig } from '../batch/key-pool.js';
import { callStateQuery } from '../calls/signals.js';
import { codeOfFailure, rowFailureCode } from '../calls/failure-code.js';
import type { CallOutcome } from '../calls/types.js';
import { PcdsBatchId, PcdsRowIndex } from '../temporal/search-attributes.js';
import { ROW_WORKFLOW_TYPES } from '../temporal/workflow-types.js';
import type { ActivityDeps } from './deps.js';
import { withHeartbeat } from './heartbeat.js';
import { createStoredBatchActivities } from './stored-batch.js';

/** What a row's call that already ran came to: its outcome, or its failure (code, request id). */
export type ExistingRowOutcome =
  { outcome: CallOutcome } | { failure: { code: string; message: string; requestId?: string } };

/**
 * Whether a described workflow is this batch's call for this row: a row call's type, started with
 * the batch's id and the row's index as search attributes (as every row call is).
 */
export function isRowCallOf(
  described: Pick<WorkflowExecutionDescription, 'type' | 'typedSearchAttributes'>,
  batchId: string,
  row: number,
): boolean {
  return (
    (ROW_WORKFLOW_TYPES as readonly string[]).includes(described.type) &&
    described.typedSearchAttributes.get(PcdsBatchId) === batchId &&
    described.typedSearchAttributes.get(PcdsRowIndex) === row
  );
}

/** What a closed (or awaited) row call came to; a cancelled call keeps its job's request id. */
async function outcomeOf(
  handle: WorkflowHandle,
  result: () => Promise<unknown>,
): Promise<ExistingRowOutcome> {
  try {
    return { outcome: (await result()) as CallOutcome };
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    // The one mapping of a failure to its code (calls/failure-code.ts), the row's own messages.
    const coded = codeOfFailure(err.cause);
    if (coded) {
      const { code, message, requestId } = coded;
      return { failure: { code, message, ...(requestId !== undefined ? { requestId } : {}) } };
    }
    const { code } = rowFailureCode(err.cause);
    // A call cancelled after its job was accepted still names the job: it is never sent again.
    const requestId = await handle
      .query(callStateQuery)
      .then((s) => s.requestId)
      .catch(() => undefined);
    return {
      failure: {
        code,
        message: `the row's earlier call ended ${code}`,
        ...(requestId ? { requestId } : {}),
      },
    };
  }
}

export function createBatchActivities(deps: ActivityDeps) {
  return {
    ...createStoredBatchActivities(deps),

    /** The worker's keys that may serve a batch, weighted by their per-minute limit. */
    async batchKeyPool(input: { keyIds?: string[] }): Promise<PoolKeyConfig[]> {
      const c = deps.config;
      const keys = c.keys.map((k): PoolKeyConfig => ({
        id: k.id,
        perMinute: k.perMinute ?? c.PCDS_RATE_PER_MINUTE,
        perHour: k.perHour ?? c.PCDS_RATE_PER_HOUR,
        timeScale: c.PCDS_THROTTLE_TIME_SCALE,
        ...(c.PCDS_THROTTLE === 'off' ? { throttled: false } : {}),
      }));
      if (!input.keyIds || input.keyIds.length === 0) return keys;
      const unknown = input.keyIds.filter((id) => !keys.some((k) => k.id === id));
      if (unknown.length > 0) {
        throw ApplicationFailure.create({
          type: 'unknown_key',
          message: `no key with id ${unknown.join(', ')} is configured on the worker; known ids: ${keys.map((k) => k.id).join(', ')}`,
          nonRetryable: true,
        });
      }
      return keys.filter((k) => input.keyIds!.includes(k.id));
    },

    /**
     * The outcome of a row's call that already ran under this batch id: a batch run again from
     * an earlier point (an operator's reset) meets its finished rows again, and takes what they
     * came to instead of calling them failed or sending them twice. Waits (heartbeating) for a
     * call still running.
     */
    async existingRowOutcome(input: {
      workflowId: string;
      /** The batch and row the call must be (absent from batches that asked before). */
      batchId?: string;
      row?: number;
    }): Promise<ExistingRowOutcome> {
      const handle = Context.current().client.workflow.getHandle(input.workflowId);
      if (input.batchId !== undefined && input.row !== undefined) {
        const described = await handle.describe();
        if (!isRowCallOf(described, input.batchId, input.row))
          return {
            failure: {
              code: 'row_id_taken',
              message:
                "another workflow, not this batch's call for the row, holds the row's id: the row was not sent",
            },
          };
      }
      return outcomeOf(handle, () => withHeartbeat(() => handle.result()));
    },

    /**
     * For each row's call, how it ended, or null while it runs: rows carried over a
     * continue-as-new report by signal, but a call terminated by an operator never does.
     */
    async endedRowCalls(input: { workflowIds: string[] }): Promise<(ExistingRowOutcome | null)[]> {
      const client = Context.current().client;
      const out: (ExistingRowOutcome | null)[] = [];
      for (const id of input.workflowIds) {
        const handle = client.workflow.getHandle(id);
        const { status } = await handle.describe();
        out.push(status.name === 'RUNNING' ? null : await outcomeOf(handle, () => handle.result()));
        Context.current().heartbeat();
      }
      return out;
    },

    /** An operator resumed the batch after topping up credits: submits may go again on these keys. */
    async resetCreditBreakers(input: { keyIds: string[] }): Promise<void> {
      for (const id of input.keyIds) await deps.permits.resetCredits(id, 'batch resume');
    },
  };
}

export type BatchActivities = ReturnType<typeof createBatchActivities>;
