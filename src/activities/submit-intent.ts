// The last step of a submit activity before its POST: the attempt claims its send in an
// acknowledged heartbeat carrying its token. The server keeps an attempt's last heartbeat with
// its failure, so a workflow whose attempt was lost reads whether it had claimed: one lost
// without a claim sent nothing and is made again. An attempt the server gave up on (timed out,
// cancelled) has its heartbeat refused and never sends. One server round trip, no workflow task:
// the moment between a recorded claim and the POST, where a lost worker leaves a send that may
// not have left, stays short. The activity's heartbeats reach the server in order until its job
// is recorded (heartbeat.ts, orderHeartbeats): none sent before the claim can land after it.
import { Context } from '@temporalio/activity';
import {
  ActivityNotFoundError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ACCEPTANCE_REPORT_BACKOFF, backoffDelayMs } from '../calls/backoff.js';
import { retryUntilAnswered } from './retrying.js';
import { withCallSignal } from '../temporal/call-signal.js';
import { submitAcceptedUpdate, type AcceptedSubmit, type SubmitClaimed } from '../calls/signals.js';
import { retryableFailure } from './failures.js';
import {
  heartbeatRecorded,
  orderHeartbeats,
  recordedAnyway,
  unorderHeartbeats,
} from './heartbeat.js';
import type { SubmitLedger } from './submit.js';

/** The step to run before sending, or none when the workflow asked for no claim. */
export function claimRecorder(token: string | undefined): (() => Promise<void>) | undefined {
  const ctx = Context.current();
  if (token === undefined || !ctx.info.workflowExecution) return undefined;
  // Before the activity's first heartbeat: from now on they reach the server in order.
  orderHeartbeats(ctx);
  return async () => {
    const claim: SubmitClaimed = { token };
    try {
      await heartbeatRecorded(claim, ctx);
    } catch {
      // Refused (the server gave up on this attempt, or stops it) or not reachable: nothing was
      // sent. A workflow still waiting for this attempt makes the submit again after the delay; a
      // claim recorded all the same costs at worst a send called unknown, never a second one.
      throw retryableFailure({ code: 'submit_intent_not_recorded' }, backoffDelayMs(1));
    }
  };
}

/**
 * The first step after a 202: the accepted job is made known to the server before anything else,
 * so it survives the activity failing to report its completion (the Temporal server down at that
 * moment, its worker gone). An acknowledged heartbeat carries it: a timed-out attempt hands it to
 * the workflow in its failure (lastHeartbeatDetails). If the server has already timed the attempt
 * out, the job goes to the workflow by the submitAccepted update. Both are retried until the
 * server answers; neither adds a history event on the usual path.
 *
 * A worker shutting down never waits on them: `workerShutdown` (createWorker's) says it shuts
 * down, as does the activity's cancellation for that reason. The job then stays in the SDK's
 * heartbeat, and a workflow that never gets it ends the attempt as unknown after its wait, never
 * submitting it again.
 */
export function acceptanceReporter(
  token: string | undefined,
  workerShutdown?: AbortSignal,
): ((accepted: Omit<AcceptedSubmit, 'token'>) => Promise<void>) | undefined {
  const ctx = Context.current();
  const execution = ctx.info.workflowExecution;
  if (token === undefined || !execution) return undefined;
  return async (job) => {
    const accepted: AcceptedSubmit = { token, ...job };
    // The SDK cancels the activity's client calls in flight when the activity is cancelled (the
    // SDK cancels it only once, whatever comes after): the loops look at why.
    const cancelled = ctx.cancellationSignal;
    const shuttingDown = new AbortController();
    const onCancel = () => {
      if (ctx.cancellationDetails?.workerShutdown) shuttingDown.abort();
    };
    cancelled.addEventListener('abort', onCancel);
    onCancel();
    const stop = workerShutdown
      ? AbortSignal.any([shuttingDown.signal, workerShutdown])
      : shuttingDown.signal;
    try {
      // Every later heartbeat carries it too (it is where the activity stands).
      const heartbeat = await retryUntilAnswered(() => heartbeatRecorded(accepted, ctx), {
        backoff: ACCEPTANCE_REPORT_BACKOFF,
        ends: (err) =>
          err instanceof ActivityNotFoundError ||
          recordedAnyway(err) ||
          cancelled.aborted ||
          stop.aborted,
      });
      // Recorded (an answer that stops the attempt records it too), or the worker shuts down: the
      // SDK's heartbeats carry the job from now on (it sends the last one as the activity ends).
      if (heartbeat.answered || recordedAnyway(heartbeat.error) || stop.aborted) {
        unorderHeartbeats(ctx);
        return;
      }
      // Only an attempt the server gave up on is awaited by update (the workflow waits a while for
      // it). Cancelled otherwise (the call cancelled, paused or reset): nobody waits for it.
      const details = ctx.cancellationDetails;
      if (
        !(heartbeat.error instanceof ActivityNotFoundError) &&
        !details?.notFound &&
        !details?.timedOut
      )
        return;
      // Made on a signal of its own: the activity's is aborted already. Refused, or the workflow
      // gone: the workflow no longer waits for this attempt (it ended it as unknown).
      const handle = ctx.client.workflow.getHandle(execution.workflowId, execution.runId);
      await retryUntilAnswered(
        () => {
          // A call started on an aborted signal is never cancelled: none is started.
          if (stop.aborted) return Promise.reject(new Error('the worker shuts down'));
          return withCallSignal(ctx.client, stop, () =>
            handle.executeUpdate(submitAcceptedUpdate, { args: [accepted] }),
          );
        },
        {
          backoff: ACCEPTANCE_REPORT_BACKOFF,
          ends: (err) =>
            err instanceof WorkflowUpdateFailedError ||
            err instanceof WorkflowNotFoundError ||
            stop.aborted,
        },
      );
    } finally {
      cancelled.removeEventListener('abort', onCancel);
    }
  };
}

/**
 * The calling workflow as the ledger of this attempt's send (see submit.ts): the claim is an
 * acknowledged heartbeat (none when the workflow asked for no record), the accepted job is
 * reported as `acceptanceReporter` does when `reportAccepted`, and a release needs no record: the
 * workflow makes a refused submit again as a new attempt with a token of its own.
 */
export function workflowLedger(
  token: string | undefined,
  report: { reportAccepted: false } | { reportAccepted: true; workerShutdown?: AbortSignal },
): SubmitLedger {
  const recordClaim = claimRecorder(token);
  const reportAccepted = report.reportAccepted
    ? acceptanceReporter(token, report.workerShutdown)
    : undefined;
  return {
    async claim() {
      await recordClaim?.();
      return { mine: true };
    },
    async accepted(job) {
      if (reportAccepted) await reportAccepted(job);
      // Every heartbeat from now on carries the claim: none can erase it.
      else if (recordClaim) unorderHeartbeats();
    },
    released: () => Promise.resolve(),
  };
}
