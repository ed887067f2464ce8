// Signals, queries and updates of a call's workflow, defined once so senders (activities, the
// webhook receiver, the batch, the client) and handlers agree. Workflow code imports it.
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PermitWait } from '../throttle/permits.js';
import type { CallState } from './types.js';

/** A webhook delivery for the call's job, forwarded by the receiver after its token checked out. */
export interface WebhookDelivery {
  /**
   * The job the body names. Absent for a failure envelope, which carries no `data`: the URL's
   * token still ties it to this call, and the workflow confirms it with one poll.
   */
  requestId?: string;
  /** The delivered body as received (the poll's envelope); the workflow checks it against the contract. */
  body: unknown;
}

export const webhookDeliveredSignal = defineSignal<[WebhookDelivery]>('webhookDelivered');
export const callStateQuery = defineQuery<CallState>('callState');

/**
 * A submit activity is about to send its POST: its claim, in the heartbeat the server
 * acknowledged just before (see activities/submit-intent.ts). The server keeps it with the
 * attempt's failure (lastHeartbeatDetails), so an attempt lost without it is known to have sent
 * nothing and is made again.
 */
export interface SubmitClaimed {
  token: string;
}

/**
 * The same claim, by signal, from a submit activity whose earlier heartbeats (the SDK's, sent on
 * their own) could still reach the server after the claim's and erase it: a signal stays in the
 * workflow's history, and the workflow reads it before the attempt's failure.
 */
export const submitClaimedSignal = defineSignal<[SubmitClaimed]>('submitClaimed');

/**
 * The same claim as older activities made it: recorded by the workflow, refused for an attempt it
 * has given up on. Still answered while activities of an earlier release run, and replayed.
 */
export const submitIntentUpdate = defineUpdate<void, [{ token: string }]>('submitIntent');

/**
 * Sent by a batch to a row's call that outlives the batch's run (continue-as-new): the call then
 * reports how it ended to the batch's workflow id (rowFinished), which reaches whichever run is
 * current. A call whose batch run is still open needs nothing: its result reaches the parent.
 */
export const reportToBatchSignal = defineSignal<[{ batchWorkflowId: string }]>('reportToBatch');

/** A job the service accepted for one submit attempt: enough to poll it. */
export interface AcceptedSubmit {
  token: string;
  keyId: string;
  requestId: string;
  status: string;
  acceptedAt: number;
}

/**
 * A submit activity whose attempt the server timed out (it was down when the 202 arrived, say)
 * hands the accepted job to its workflow this way, so the request id is kept, never lost to
 * submit_outcome_unknown. Accepted only for the attempt the workflow is still waiting on.
 */
export const submitAcceptedUpdate = defineUpdate<void, [AcceptedSubmit]>('submitAccepted');

/**
 * An activity of the call waits for a permit long enough to matter: the call shows `throttled`
 * and why. Refused (no history event) when the call already shows that same wait.
 */
export const permitWaitUpdate = defineUpdate<void, [PermitWait]>('permitWait');
