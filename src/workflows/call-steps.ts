// Steps shared by the call workflows: submit with the no-replay rule, poll on a friendly schedule,
// and turn activity failures into the call's failure (type = the service's error code).
import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  proxyActivities,
  sleep,
  upsertSearchAttributes,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import type { Activities } from '../activities';
import { PcdsOutcome, PcdsState } from '../temporal/search-attributes';

export const DEFAULT_POLL_INTERVAL_MS = 1_000;
export const DEFAULT_MAX_WAIT_MS = 30 * 60_000;
export const DEFAULT_POLL_BACKOFF = 1.5;
export const DEFAULT_MAX_POLL_INTERVAL_MS = 15_000;
const SUBMIT_BACKOFF_BASE_MS = 1_000;
const SUBMIT_BACKOFF_CAP_MS = 60_000;

/** What operators filter on: what the workflow does now. */
export type CallStateAttr = 'submitting' | 'polling' | 'waiting_for_webhook' | 'throttled' | 'done';

export function setState(state: CallStateAttr): void {
  upsertSearchAttributes([{ key: PcdsState, value: state }] as SearchAttributeUpdatePair[]);
}

export function setOutcome(outcome: 'running' | 'found' | 'empty' | 'failed'): void {
  upsertSearchAttributes([{ key: PcdsOutcome, value: outcome }] as SearchAttributeUpdatePair[]);
}

// Heartbeats every 5 s (see activities/heartbeat.ts): a worker that died is noticed in 30 s.
const HTTP_ACTIVITY: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
};

/**
 * Submits are never retried by Temporal: a timed-out attempt may have reached the service. The
 * workflow repeats only failures the activity marked retryable (connect errors, 429, 503).
 */
export const submitActivities = proxyActivities<Activities>({
  ...HTTP_ACTIVITY,
  retry: { maximumAttempts: 1 },
});

/** Polls and page reads are free and safe to repeat: Temporal retries them, waiting the activity's nextRetryDelay. */
export function pollActivities(scheduleToCloseMs: number) {
  return proxyActivities<Activities>({
    ...HTTP_ACTIVITY,
    scheduleToCloseTimeout: Math.max(1_000, scheduleToCloseMs),
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  });
}

/** The service's error code behind an activity failure, or a local code for timeouts. */
export function failureCode(
  err: unknown,
  timeoutCode: string,
): { code: string; message: string; details: unknown[] } {
  if (err instanceof ActivityFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type) {
      return { code: cause.type, message: cause.message, details: [...(cause.details ?? [])] };
    }
    if (cause instanceof TimeoutFailure) {
      return {
        code: timeoutCode,
        message: `${timeoutCode}: the activity timed out (${cause.timeoutType})`,
        details: [],
      };
    }
  }
  if (err instanceof ApplicationFailure && err.type) {
    return { code: err.type, message: err.message, details: [...(err.details ?? [])] };
  }
  throw err;
}

/** Fails the workflow with the code as the failure type (batch parents branch on it). */
export function callFailure(
  code: string,
  message: string,
  details: unknown[] = [],
): ApplicationFailure {
  return ApplicationFailure.create({ type: code, message, nonRetryable: true, details });
}

function retryDelayOf(err: ActivityFailure, attempt: number): number | undefined {
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure) || cause.nonRetryable) return undefined;
  // The activity states its chosen wait in the details (nextRetryDelay is for Temporal's own retries).
  const chosen = (cause.details?.[0] as { retryDelayMs?: unknown } | undefined)?.retryDelayMs;
  if (typeof chosen === 'number') return chosen;
  if (cause.nextRetryDelay !== undefined && cause.nextRetryDelay !== null)
    return msToNumber(cause.nextRetryDelay);
  return Math.min(SUBMIT_BACKOFF_CAP_MS, SUBMIT_BACKOFF_BASE_MS * 2 ** (attempt - 1));
}

/**
 * Runs one submit-like activity, repeating it only after a failure the activity marked
 * retryable, waiting its nextRetryDelay. A timeout means "maybe sent": submit_outcome_unknown.
 */
export async function submitOnce<T>(
  run: () => Promise<T>,
  deadline: number,
  onThrottled: () => void,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      const delay = retryDelayOf(err, attempt);
      if (delay === undefined || Date.now() + delay > deadline) {
        const f = failureCode(err, 'submit_outcome_unknown');
        throw callFailure(f.code, f.message, f.details);
      }
      if (err.cause instanceof ApplicationFailure && err.cause.type === 'rate_limit_exceeded')
        onThrottled();
      await sleep(delay);
    }
  }
}

/** Next poll interval: starts at the configured one, grows gently for long jobs. */
export function nextPollInterval(current: number, factor: number, max: number): number {
  return Math.min(max, Math.round(current * factor));
}
