// How HTTP outcomes become activity failures: terminal codes are non-retryable with the service's
// code as the failure type; 429 waits its Retry-After; 503 and transport errors back off with
// full jitter (src/calls/backoff.ts). Messages come from the error taxonomy, never from request
// data (no PII).
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { retryDelayMs } from '../calls/backoff.js';
import { describeCode } from '../calls/failure-code.js';
import type { FailureDetails } from '../contract/failure-details.js';
import type { Failure } from '../contract/index.js';

export function terminalFailure(
  failure: Pick<Failure, 'code'> & { httpStatus?: number },
  requestId?: string,
  message?: string,
): ApplicationFailure {
  const details: FailureDetails = {
    code: failure.code,
    ...(failure.httpStatus ? { httpStatus: failure.httpStatus } : {}),
    ...(requestId ? { requestId } : {}),
  };
  return ApplicationFailure.create({
    type: failure.code,
    message: message ?? describeCode(failure.code, failure.httpStatus),
    nonRetryable: true,
    details: [details],
  });
}

/** A transient failure; Temporal (or the workflow, for submits) waits `nextRetryDelay` first. */
export function retryableFailure(
  failure: Pick<Failure, 'code'> & { httpStatus?: number },
  delayMs: number,
  retryAfterMs?: number,
): ApplicationFailure {
  const details: FailureDetails = {
    code: failure.code,
    ...(failure.httpStatus ? { httpStatus: failure.httpStatus } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    retryDelayMs: delayMs,
  };
  return ApplicationFailure.create({
    type: failure.code,
    message: describeCode(failure.code, failure.httpStatus),
    nonRetryable: false,
    nextRetryDelay: delayMs,
    details: [details],
  });
}

/** The running activity's attempt number (1 for the first). */
function currentAttempt(): number {
  return Context.current().info.attempt;
}

/** A transient failure: wait the service's Retry-After when it gave one, else this attempt's backoff. */
export function transientFailure(
  failure: Pick<Failure, 'code'> & { httpStatus?: number },
  retryAfterMs?: number,
): ApplicationFailure {
  return retryableFailure(failure, retryDelayMs(currentAttempt(), retryAfterMs), retryAfterMs);
}
