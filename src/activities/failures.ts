// How HTTP outcomes become activity failures: terminal codes are non-retryable with the service's
// code as the failure type; 429 waits its Retry-After; 503 and transport errors back off with
// full jitter. Messages come from the error taxonomy, never from request data (no PII).
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { errorInfo, type Failure } from '../contract/index.js';

export const BACKOFF_BASE_MS = 1_000;
export const BACKOFF_CAP_MS = 60_000;
/** Added to a Retry-After so that callers released together do not all arrive at once. */
export const RETRY_AFTER_JITTER_MS = 250;

/** Exponential back-off with full jitter (attempt 1 waits up to the base), with a small floor. */
export function backoffDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempt - 1));
  return Math.max(100, Math.round(random() * ceiling));
}

export function retryAfterDelayMs(
  retryAfterMs: number,
  random: () => number = Math.random,
): number {
  return retryAfterMs + Math.round(random() * RETRY_AFTER_JITTER_MS);
}

/** Failure details carried in the failure's payload (encrypted with the other payloads). */
export interface FailureDetails {
  code: string;
  httpStatus?: number;
  requestId?: string;
  retryAfterMs?: number;
  /** The wait chosen for the next attempt (the workflow reads it to repeat a submit). */
  retryDelayMs?: number;
}

export function describeCode(code: string, httpStatus?: number): string {
  const meaning = errorInfo(code)?.meaning ?? 'the service refused the request';
  return `${code}${httpStatus ? ` (HTTP ${httpStatus})` : ''}: ${meaning}`;
}

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
export function currentAttempt(): number {
  return Context.current().info.attempt;
}

/** A transient failure: wait the service's Retry-After when it gave one, else this attempt's backoff. */
export function transientFailure(
  failure: Pick<Failure, 'code'> & { httpStatus?: number },
  retryAfterMs?: number,
): ApplicationFailure {
  const delay =
    retryAfterMs !== undefined ? retryAfterDelayMs(retryAfterMs) : backoffDelayMs(currentAttempt());
  return retryableFailure(failure, delay, retryAfterMs);
}
