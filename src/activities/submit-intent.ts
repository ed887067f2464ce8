// The last step of a submit activity before its POST: the attempt claims its send in an
// acknowledged heartbeat carrying its token. The server keeps an attempt's last heartbeat with
// its failure, so a workflow whose attempt was lost reads whether it had claimed: one lost
// without a claim sent nothing and is made again. An attempt the server gave up on (timed out,
// cancelled) has its heartbeat refused and never sends. One server round trip, no workflow task:
// the moment between a recorded claim and the POST, where a lost worker leaves a send that may
// not have left, stays short.
//
// The server keeps only the last heartbeat it received, and the SDK sends its own on a path of
// their own: one it sent before the claim could land after it and erase it, and the send would
// look never made. A submit starts quietly (no heartbeat of the SDK before its first interval), so
// one whose permit comes quickly has none that could; one that waited longer also signals its
// claim to the workflow, where nothing erases it, before it sends.
import { Context } from '@temporalio/activity';
import {
  ActivityNotFoundError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
} from '@temporalio/client';
import { ACCEPTANCE_REPORT_BACKOFF, backoffDelayMs } from '../calls/backoff.js';
import { retryUntilAnswered } from './retrying.js';
import { withCallSignal } from '../temporal/call-signal.js';
import {
  submitAcceptedUpdate,
  submitClaimedSignal,
  type AcceptedSubmit,
  type SubmitClaimed,
} from '../calls/signals.js';
import { retryableFailure } from './failures.js';
import { heartbeatTimeoutOf, heartbeatWhere, sdkHeartbeated, startQuietly } from './heartbeat.js';
import type { SubmitLedger } from './submit.js';

/**
 * A claim's signal must be in the workflow's history well before the server could time the
 * attempt out (a heartbeat timeout after the claim's heartbeat): a submit whose signal took longer
 * than a third of that is not sent (made again, or called unknown if the signal arrived after all).
 */
const claimSignalWithinMs = (ctx: Context) => (heartbeatTimeoutOf(ctx) ?? 30_000) / 3;

/** The step to run before sending, or none when the workflow asked for no claim. */
export function claimRecorder(token: string | undefined): (() => Promise<void>) | undefined {
  const ctx = Context.current();
  const execution = ctx.info.workflowExecution;
  if (token === undefined || !execution) return undefined;
  // Before the activity's first heartbeat: a quick permit's claim then has none before it.
  startQuietly(ctx);
  return async () => {
    const claim: SubmitClaimed = { token };
    const began = Date.now();
    // A heartbeat the SDK was asked for before now may still be on its way: it could erase the claim.
    const erasable = sdkHeartbeated(ctx);
    // First where the SDK's own heartbeats take their details, so none of them sent later erases
    // the claim; a claim whose record failed then costs at worst a row called unknown, never a
    // second send.
    heartbeatWhere(claim, ctx);
    try {
      await ctx.client.activity.heartbeat(ctx.info.taskToken, claim);
      if (erasable)
        await withinMs(
          claimSignalWithinMs(ctx) - (Date.now() - began),
          ctx.client.workflow
            .getHandle(execution.workflowId, execution.runId)
            .signal(submitClaimedSignal, claim),
        );
    } catch {
      // Refused (the server gave up on this attempt), not reachable, or too slow: nothing was
      // sent. A workflow still waiting for this attempt makes the submit again after the delay.
      throw retryableFailure({ code: 'submit_intent_not_recorded' }, backoffDelayMs(1));
    }
  };
}

/** `promise`, or a rejection after `ms` (the promise itself goes on, its failure unheard). */
async function withinMs<T>(ms: number, promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer in time')), Math.max(0, ms));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
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
    // The SDK's own (throttled) heartbeats carry it too, so none of them overwrites it.
    heartbeatWhere(accepted, ctx);
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
      const heartbeat = await retryUntilAnswered(
        () => ctx.client.activity.heartbeat(ctx.info.taskToken, accepted),
        {
          backoff: ACCEPTANCE_REPORT_BACKOFF,
          ends: (err) => err instanceof ActivityNotFoundError || cancelled.aborted || stop.aborted,
        },
      );
      if (heartbeat.answered || stop.aborted) return;
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
      await reportAccepted?.(job);
    },
    released: () => Promise.resolve(),
  };
}
