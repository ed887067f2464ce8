// The one mapping from a failure to its error code: a Temporal failure (an activity's, a child's,
// the workflow's own) by the SDK's classes, and a code's message from the error taxonomy (never
// from request data). Pure and workflow-safe: the call workflows and the activities share it.
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

/**
 * The code behind a failure: an ApplicationFailure's type (directly, or as the cause of an
 * activity's or a child's failure), or `timeoutCode` for an activity that timed out when one is
 * given; undefined for anything else (a cancellation, a bug: not an outcome of the call).
 */
export function codeOfFailure(err: unknown, timeoutCode?: string): CodedFailure | undefined {
  const cause =
    err instanceof ActivityFailure || err instanceof ChildWorkflowFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type)
    return coded(cause.type, cause.message, cause.details ?? []);
  if (
    timeoutCode !== undefined &&
    err instanceof ActivityFailure &&
    cause instanceof TimeoutFailure
  )
    return coded(timeoutCode, `${timeoutCode}: the activity timed out (${cause.timeoutType})`);
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
  const cause =
    err instanceof ActivityFailure || err instanceof ChildWorkflowFailure ? err.cause : err;
  if (cause instanceof CancelledFailure)
    return { code: 'cancelled', message: 'the row was cancelled', details: [], ...known };
  if (cause instanceof TerminatedFailure)
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
