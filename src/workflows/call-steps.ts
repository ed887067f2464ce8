// Steps shared by the call workflows: submit with the no-replay rule, poll on a friendly schedule,
// and turn activity failures into the call's failure (type = the service's error code).
import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  condition,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  uuid4,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time.js';
import type { ServiceReadActivities, SubmitActivities } from './activity-groups.js';
import { NO_JITTER } from '../calls/backoff.js';
import { SERVICE_READ_RETRY, SUBMIT_RETRY } from '../calls/retry-policies.js';
import { codeOfFailure, type CodedFailure } from '../calls/failure-code.js';
import { FIRST_SUBMIT, afterSubmitFault, type SubmitFault } from '../calls/policy.js';
import { failureDetailsOf } from '../contract/failure-details.js';
import { PcdsOutcome } from '../temporal/search-attributes.js';
import {
  submitAcceptedUpdate,
  submitClaimedSignal,
  submitIntentUpdate,
  type AcceptedSubmit,
} from '../calls/signals.js';

export {
  DEFAULT_MAX_POLL_INTERVAL_MS,
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_POLL_BACKOFF,
  DEFAULT_POLL_INTERVAL_MS,
} from '../calls/poll-schedule.js';

/** What operators filter on: what the workflow does now. */
export type CallStateAttr =
  | 'submitting'
  | 'polling'
  | 'waiting_for_webhook'
  | 'waiting_for_key'
  | 'throttled'
  | 'done'
  | 'failed';

export function setOutcome(outcome: 'running' | 'found' | 'empty' | 'failed'): void {
  upsertSearchAttributes([{ key: PcdsOutcome, value: outcome }] as SearchAttributeUpdatePair[]);
}

// Heartbeats every 5 s (see activities/heartbeat.ts): a worker that died is noticed in 30 s. The
// start-to-close bound is a backstop only: an attempt may wait for its permit while the key's hour
// window refills (up to an hour), and that wait is "throttled", not a failure.
const HTTP_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
};

/** Submits: never retried by Temporal (SUBMIT_RETRY), repeated by the workflow when it may. */
export const submitActivities = proxyActivities<SubmitActivities>({
  ...HTTP_ACTIVITY,
  retry: SUBMIT_RETRY,
});

/**
 * Polls and page reads are free and safe to repeat: Temporal retries them, waiting the activity's
 * nextRetryDelay. With a bound, the attempts stop there; without one, a poll of an accepted job
 * is retried until it is read (a charged job is never abandoned for a wait of our own).
 */
export function pollActivities(scheduleToCloseMs?: number) {
  return proxyActivities<ServiceReadActivities>({
    ...HTTP_ACTIVITY,
    ...(scheduleToCloseMs !== undefined
      ? { scheduleToCloseTimeout: Math.max(1_000, scheduleToCloseMs) }
      : {}),
    retry: SERVICE_READ_RETRY,
  });
}

/** The service's error code behind an activity failure, or a local code for timeouts. */
export function failureCode(err: unknown, timeoutCode: string): CodedFailure {
  const got = codeOfFailure(err, timeoutCode);
  if (!got) throw err;
  return got;
}

/** Fails the workflow with the code as the failure type (batch parents branch on it). */
export function callFailure(
  code: string,
  message: string,
  details: unknown[] = [],
): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true, details });
}

/** How a failed submit attempt is seen by the call policy. */
function submitFaultOf(err: ActivityFailure, sending: boolean): SubmitFault {
  const cause = err.cause;
  // Lost before it could send (its permit did not come in time, or its worker died while it
  // waited): nothing reached the service.
  if (cause instanceof TimeoutFailure && !sending) return { kind: 'lost_before_send' };
  if (!(cause instanceof ApplicationFailure) || cause.nonRetryable)
    return { kind: 'refused', code: codeOfFailure(err)?.code ?? '', retryable: false };
  // The activity states its chosen wait in the details (nextRetryDelay is for Temporal's own retries).
  const chosen = failureDetailsOf(cause.details).retryDelayMs;
  const delayMs =
    typeof chosen === 'number'
      ? chosen
      : cause.nextRetryDelay !== undefined && cause.nextRetryDelay !== null
        ? msToNumber(cause.nextRetryDelay)
        : undefined;
  return {
    kind: 'refused',
    code: cause.type ?? '',
    retryable: true,
    ...(delayMs !== undefined ? { delayMs } : {}),
  };
}

/**
 * How long a submit attempt that timed out after recording its intent is given to hand over an
 * accepted job (submitAccepted) before it is called submit_outcome_unknown. The activity retries
 * until the server answers, so this covers the moments after an outage of the Temporal server.
 */
const ACCEPTANCE_GRACE_MS = 2 * 60_000;

/** What a timed-out attempt of this token left in its last heartbeat: its claim, or its job. */
function lastHeartbeatOf(err: ActivityFailure, token: string): Partial<AcceptedSubmit> | undefined {
  const cause = err.cause;
  if (!(cause instanceof TimeoutFailure)) return undefined;
  const details = cause.lastHeartbeatDetails as Partial<AcceptedSubmit> | undefined;
  return details?.token === token ? details : undefined;
}

/** The accepted job a timed-out attempt left in its last heartbeat, if it is this attempt's. */
function acceptedInHeartbeat(err: ActivityFailure, token: string): AcceptedSubmit | undefined {
  const details = lastHeartbeatOf(err, token);
  return typeof details?.requestId === 'string' ? (details as AcceptedSubmit) : undefined;
}

/**
 * Runs one submit-like activity, repeating it only when the service cannot have accepted it: a
 * failure the activity marked retryable (after its nextRetryDelay), or an attempt lost (timed out,
 * its worker gone) before it claimed its send. Each attempt gets a token; the activity claims its
 * send just before its POST in a heartbeat carrying the token (older activities: the submitIntent
 * update), which the server refuses once it gave the attempt up, so an activity that outlived its
 * timeout cannot send after the retry; one whose earlier heartbeats could erase that claim also
 * signals it. A lost attempt that had claimed may have been sent: submit_outcome_unknown.
 *
 * Only the service's own refusals count against `serviceWaitMs` (the call's maximum wait): the
 * waits it asked for (Retry-After, back-off after a 503). An attempt that timed out waiting for a
 * permit of our own throttle is "throttled", never late: it is made again however long that takes.
 */
export async function submitOnce<T>(
  run: (intentToken: string) => Promise<T>,
  serviceWaitMs: number,
  onThrottled: () => void,
  /** For activities that hand over an accepted job when their attempt timed out (endpoint calls). */
  fromAccepted?: (accepted: AcceptedSubmit) => T,
): Promise<T> {
  // The attempt the workflow waits on, and whether it said it is sending.
  let current: string | undefined;
  let sending = false;
  // A timed-out attempt that had recorded its intent: its accepted job may still be handed over.
  let lost: string | undefined;
  let handedOver: AcceptedSubmit | undefined;
  if (fromAccepted)
    setHandler(
      submitAcceptedUpdate,
      (accepted) => {
        handedOver = accepted;
      },
      {
        validator: ({ token }) => {
          if (token === undefined || (token !== lost && token !== current))
            throw new Error('this submit attempt is no longer awaited');
        },
      },
    );
  // Claims made by signal (see submitClaimedSignal): read before an attempt's failure.
  const signalled = new Set<string>();
  setHandler(submitClaimedSignal, ({ token }) => {
    signalled.add(token);
  });
  setHandler(
    submitIntentUpdate,
    () => {
      sending = true;
    },
    {
      validator: ({ token }) => {
        if (token !== current) throw new Error('this submit attempt was given up: do not send it');
      },
    },
  );
  let standing = FIRST_SUBMIT;
  for (;;) {
    const token = uuid4();
    current = token;
    sending = false;
    try {
      return await run(token);
    } catch (err) {
      // Given up: a late intent for this attempt is refused from now on.
      current = undefined;
      if (!(err instanceof ActivityFailure)) throw err;
      // Claimed in its last heartbeat, by signal, or by the update of an older activity.
      const claimed = sending || signalled.has(token) || lastHeartbeatOf(err, token) !== undefined;
      if (fromAccepted && err.cause instanceof TimeoutFailure && claimed) {
        // Sent, and the attempt timed out: the service may have accepted the job. The activity
        // left it in its heartbeat, or hands it over by update once the server answers again.
        const kept = acceptedInHeartbeat(err, token);
        if (kept) return fromAccepted(kept);
        lost = token;
        await condition(() => handedOver !== undefined, ACCEPTANCE_GRACE_MS);
        lost = undefined;
        if (handedOver) return fromAccepted(handedOver);
      }
      // A failure that named no wait (an older activity's) waits the back-off's ceiling: a
      // recorded timer keeps its duration.
      const next = afterSubmitFault(
        { maxWaitMs: serviceWaitMs },
        standing,
        submitFaultOf(err, claimed),
        NO_JITTER,
      );
      standing = next.standing;
      if (next.step.kind === 'fail') {
        const f = failureCode(err, 'submit_outcome_unknown');
        throw callFailure(f.code, f.message, f.details);
      }
      if (next.step.throttled) onThrottled();
      await sleep(next.step.afterMs);
    }
  }
}
