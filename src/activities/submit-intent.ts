// The last step of a submit activity before its POST: the calling workflow records that this
// attempt may now be sent (the submitIntent update). An attempt lost without that record sent
// nothing, so the workflow makes it again; one the workflow has given up on is refused here and
// never sent.
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { ActivityNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { SERVICE_BACKOFF, backoffDelayMs, type Backoff } from '../calls/backoff.js';
import {
  submitAcceptedUpdate,
  submitIntentUpdate,
  type AcceptedSubmit,
} from '../workflows/signals.js';
import { retryableFailure } from './failures.js';

/** The step to run before sending, or none when the workflow asked for no intent record. */
export function intentRecorder(token: string | undefined): (() => Promise<void>) | undefined {
  const ctx = Context.current();
  const execution = ctx.info.workflowExecution;
  if (token === undefined || !execution) return undefined;
  const { workflowId, runId } = execution;
  return async () => {
    try {
      await ctx.client.workflow
        .getHandle(workflowId, runId)
        .executeUpdate(submitIntentUpdate, { args: [{ token }] });
    } catch {
      // Refused (the workflow gave up on this attempt) or not reachable: nothing was sent. A
      // workflow still waiting for this attempt makes the submit again after the delay.
      throw retryableFailure({ code: 'submit_intent_not_recorded' }, backoffDelayMs(1));
    }
  };
}

/** Reports to the Temporal server back off as requests to the service do, up to 10 s. */
const REPORT_BACKOFF: Backoff = { ...SERVICE_BACKOFF, capMs: 10_000 };

/**
 * The first step after a 202: the accepted job is made known to the server before anything else,
 * so it survives the activity failing to report its completion (the Temporal server down at that
 * moment, its worker gone). An acknowledged heartbeat carries it: a timed-out attempt hands it to
 * the workflow in its failure (lastHeartbeatDetails). If the server has already timed the attempt
 * out, the job goes to the workflow by the submitAccepted update. Both are retried until the
 * server answers; neither adds a history event on the usual path.
 */
export function acceptanceReporter(
  token: string | undefined,
): ((accepted: Omit<AcceptedSubmit, 'token'>) => Promise<void>) | undefined {
  const ctx = Context.current();
  const execution = ctx.info.workflowExecution;
  if (token === undefined || !execution) return undefined;
  return async (job) => {
    const accepted: AcceptedSubmit = { token, ...job };
    // The SDK's own (throttled) heartbeats carry it too, so none of them overwrites it.
    ctx.heartbeat(accepted);
    for (let attempt = 1; ; attempt++) {
      try {
        await ctx.client.activity.heartbeat(ctx.info.taskToken, accepted);
        return;
      } catch (err) {
        if (err instanceof ActivityNotFoundError) break;
      }
      await sleep(backoffDelayMs(attempt, Math.random, REPORT_BACKOFF));
    }
    // The server gave up on this attempt: the workflow waits a while for this update.
    const handle = ctx.client.workflow.getHandle(execution.workflowId, execution.runId);
    for (let attempt = 1; ; attempt++) {
      try {
        await handle.executeUpdate(submitAcceptedUpdate, { args: [accepted] });
        return;
      } catch (err) {
        // Refused: the workflow no longer waits for this attempt (it ended it as unknown).
        if (err instanceof WorkflowUpdateFailedError) return;
      }
      await sleep(backoffDelayMs(attempt, Math.random, REPORT_BACKOFF));
    }
  };
}
