// The one mapping from a failure to its error code: a Temporal failure (an activity's, a child's,
// the workflow's own) by the SDK's classes, and a code's message from the error taxonomy (never
// from request data). Pure and workflow-safe: the workflows, the activities and the client share it.
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  TerminatedFailure,
  TimeoutFailure,
} from '@temporalio/common';
import { errorInfo } from '../contract/errors.js';
import { failureDetailsOf } from '../contract/failure-details.js';

/** A failure as an error code, the message to show and what the failure carried. */
export interface CodedFailure {
  code: string;
  message: string;
  details: unknown[];
  /** The job's request id, when the failure names one (in its first detail). */
  requestId?: string;
}

/** E.g. "invalid_credentials (HTTP 401): key or secret wrong, or key disabled". */
export function describeCode(code: string, httpStatus?: number): string {
  const meaning = errorInfo(code)?.meaning ?? 'the service refused the request';
  return `${code}${httpStatus ? ` (HTTP ${httpStatus})` : ''}: ${meaning}`;
}

function coded(code: string, message: string, details: readonly unknown[] = []): CodedFailure {
  const { requestId } = failureDetailsOf(details);
  return {
    code,
    message,
    details: [...details],
    ...(requestId !== undefined ? { requestId } : {}),
  };
}

/** A failure by what ended the work: the SDK's failure classes, read once for every caller. */
export type FailureCause =
  /** An ApplicationFailure: its type is the code (none: a failure with no code). */
  | { kind: 'application'; failure: ApplicationFailure }
  /** An activity that timed out (the outer failure an ActivityFailure). */
  | { kind: 'activity_timeout'; failure: TimeoutFailure }
  | { kind: 'cancelled' }
  | { kind: 'terminated' }
  /** Anything else (a bug, a workflow timeout): the innermost failure reached, if any. */
  | { kind: 'other'; failure: unknown };

/**
 * The failure that says why: unwraps up to `depth` activity or child failures to their cause. The
 * workflows read one level (a call's activity, a row's child: what their recorded histories
 * decided on); the client reads a batch's through its row's child and activity.
 */
export function innermostFailure(err: unknown, depth = 1): unknown {
  let at = err;
  for (let level = 0; level < depth; level++) {
    if (!(at instanceof ActivityFailure || at instanceof ChildWorkflowFailure) || !at.cause)
      return at;
    at = at.cause;
  }
  return at;
}

/** The one mapping of a failure to what ended it; codeOfFailure, rowFailureCode and the client read it. */
export function failureCause(err: unknown, depth = 1): FailureCause {
  const cause = innermostFailure(err, depth);
  if (cause instanceof ApplicationFailure) return { kind: 'application', failure: cause };
  if (err instanceof ActivityFailure && cause instanceof TimeoutFailure)
    return { kind: 'activity_timeout', failure: cause };
  if (cause instanceof CancelledFailure) return { kind: 'cancelled' };
  if (cause instanceof TerminatedFailure) return { kind: 'terminated' };
  return { kind: 'other', failure: cause };
}

/**
 * The code behind a failure: an ApplicationFailure's type (directly, or as the cause of an
 * activity's or a child's failure), or `timeoutCode` for an activity that timed out when one is
 * given; undefined for anything else (a cancellation, a bug: not an outcome of the call).
 */
export function codeOfFailure(err: unknown, timeoutCode?: string): CodedFailure | undefined {
  const cause = failureCause(err);
  if (cause.kind === 'application' && cause.failure.type)
    return coded(cause.failure.type, cause.failure.message, cause.failure.details ?? []);
  if (timeoutCode !== undefined && cause.kind === 'activity_timeout')
    return coded(
      timeoutCode,
      `${timeoutCode}: the activity timed out (${cause.failure.timeoutType})`,
    );
  return undefined;
}

/**
 * How a batch row's call ended when it failed: its code as above, else cancelled, terminated, or
 * child_failed (a call that ended without an error code). The job's request id is the failure's,
 * else the one the row knew.
 */
export function rowFailureCode(err: unknown, knownRequestId?: string): CodedFailure {
  const known = knownRequestId !== undefined ? { requestId: knownRequestId } : {};
  const got = codeOfFailure(err);
  if (got) return { ...known, ...got };
  const { kind } = failureCause(err);
  if (kind === 'cancelled')
    return { code: 'cancelled', message: 'the row was cancelled', details: [], ...known };
  if (kind === 'terminated')
    return { code: 'terminated', message: "the row's call was terminated", details: [], ...known };
  return {
    code: 'child_failed',
    message: "the row's call ended without an error code",
    details: [],
    ...known,
  };
}

/** rowFailureCode as a row's failure: its code, message and, when known, its job's request id. */
export function rowFailure(
  err: unknown,
  knownRequestId?: string,
): { code: string; message: string; requestId?: string } {
  const { code, message, requestId } = rowFailureCode(err, knownRequestId);
  return { code, message, ...(requestId !== undefined ? { requestId } : {}) };
}
