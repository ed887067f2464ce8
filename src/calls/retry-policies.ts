// Temporal's retry policies of every activity proxy, in one place (the in-process loops' back-off
// is backoff.ts beside it). Pure and workflow-safe: the workflows' proxies take theirs from here.
import type { RetryPolicy } from '@temporalio/common';
import { SERVICE_BACKOFF } from './backoff.js';

/**
 * Submits are never retried by Temporal: a timed-out attempt may have reached the service. The
 * workflow repeats only failures the activity marked retryable (connect errors, 429, 503).
 */
export const SUBMIT_RETRY: RetryPolicy = { maximumAttempts: 1 };

/**
 * Polls and page reads are free and safe to repeat: Temporal retries them as the service's own
 * back-off does (1 s, doubling up to a minute), or after the activity's nextRetryDelay.
 */
export const SERVICE_READ_RETRY: RetryPolicy = {
  initialInterval: SERVICE_BACKOFF.baseMs,
  backoffCoefficient: 2,
  maximumInterval: SERVICE_BACKOFF.capMs,
};

/** Store and file steps (idempotent): from 1 s up to 30 s apart, until they succeed. */
export const STORE_STEP_RETRY: RetryPolicy = {
  initialInterval: '1 second',
  maximumInterval: '30 seconds',
};

/**
 * A compact row's activity: as a store step, but at most 20 attempts (an attempt lost with its
 * worker finds where the row stands in the row journal; one that keeps failing fails the row).
 */
export const COMPACT_ROW_RETRY: RetryPolicy = { ...STORE_STEP_RETRY, maximumAttempts: 20 };
