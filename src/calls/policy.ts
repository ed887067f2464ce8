// What one call (a per-call workflow, or a compact batch row) does next, given the last reply or
// failure and where it stands: poll after how long, wait for its key, make the submit again, or
// end with a code. The delays and the deadline rule live here only; the engines differ only in
// where they wait (workflow timers, or inside a heartbeating activity). Pure and workflow-safe.
import type { PollOutcome } from '../contract/classify.js';
import { isKeyFault } from '../contract/errors.js';
import {
  DEFAULT_MAX_POLL_INTERVAL_MS,
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_POLL_BACKOFF,
  DEFAULT_POLL_INTERVAL_MS,
  pollDelayMs,
  type PollScheduleOptions,
} from './poll-schedule.js';
import { FULL_JITTER, retryDelayMs } from './backoff.js';

export const DEFAULT_WEBHOOK_FALLBACK_POLL_MS = 60_000;
/** How long before a submit lost before it could send (nothing reached the service) is made again. */
export const LOST_SUBMIT_RETRY_MS = 1_000;

/** A call's tuning, as its input gives it (absent: the defaults). */
export interface CallPolicyInput {
  maxWaitMs?: number;
  pollIntervalMs?: number;
  pollBackoff?: number;
  maxPollIntervalMs?: number;
  /** The batch's estimate of when the job is done (the first poll's delay). */
  firstPollDelayMs?: number;
  /** The result comes by webhook: polls are only the fallback, this far apart. */
  webhookFallbackPollMs?: number;
}

export interface CallPolicy {
  /** The job's maximum wait, from its acceptance. */
  maxWaitMs: number;
  schedule: PollScheduleOptions;
  /** Set for a webhook call: the fallback poll's spacing. */
  webhookFallbackPollMs?: number;
}

export function callPolicyOf(input: CallPolicyInput, webhook = false): CallPolicy {
  return {
    maxWaitMs: input.maxWaitMs ?? DEFAULT_MAX_WAIT_MS,
    schedule: {
      intervalMs: input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
      backoff: input.pollBackoff ?? DEFAULT_POLL_BACKOFF,
      maxIntervalMs: input.maxPollIntervalMs ?? DEFAULT_MAX_POLL_INTERVAL_MS,
      ...(input.firstPollDelayMs !== undefined ? { firstPollDelayMs: input.firstPollDelayMs } : {}),
    },
    ...(webhook
      ? { webhookFallbackPollMs: input.webhookFallbackPollMs ?? DEFAULT_WEBHOOK_FALLBACK_POLL_MS }
      : {}),
  };
}

// ---- The submit ----

/** Where the submit stands: its attempts so far and the waits the service asked for. */
export interface SubmitStanding {
  /** The attempt that just failed (1 for the first). */
  attempt: number;
  /** The service's waits so far (Retry-After, back-off after a 503): they count against maxWaitMs. */
  waitedMs: number;
}

export const FIRST_SUBMIT: SubmitStanding = { attempt: 1, waitedMs: 0 };

export type SubmitFault =
  /** The attempt was lost before it could send (its permit late, its worker gone): nothing sent. */
  | { kind: 'lost_before_send' }
  /** The service (or the connection) refused it; `retryable` when it cannot have been accepted. */
  | {
      kind: 'refused';
      code: string;
      retryable: boolean;
      /** The wait already chosen for this failure (by the activity that saw it). */
      delayMs?: number;
      retryAfterMs?: number;
    };

export type SubmitStep =
  /** Make the submit again after `afterMs`; `throttled`: the wait is a throttle's, not a fault's. */
  { kind: 'retry_submit'; afterMs: number; throttled: boolean } | { kind: 'fail'; code: string };

/**
 * After a failed submit: a lost attempt is made again shortly, however long that takes (a wait of
 * our own throttle is never late); a refusal that cannot have been accepted is made again after
 * its wait while the service's waits stay within the maximum wait; anything else ends the call.
 * `random` draws the jitter of a wait no activity chose.
 */
export function afterSubmitFault(
  policy: Pick<CallPolicy, 'maxWaitMs'>,
  standing: SubmitStanding,
  fault: SubmitFault,
  random: () => number = FULL_JITTER,
): { step: SubmitStep; standing: SubmitStanding } {
  const next = { ...standing, attempt: standing.attempt + 1 };
  if (fault.kind === 'lost_before_send')
    return {
      step: { kind: 'retry_submit', afterMs: LOST_SUBMIT_RETRY_MS, throttled: true },
      standing: next,
    };
  if (!fault.retryable) return { step: { kind: 'fail', code: fault.code }, standing };
  const delay = fault.delayMs ?? retryDelayMs(standing.attempt, fault.retryAfterMs, random);
  if (standing.waitedMs + delay > policy.maxWaitMs)
    return { step: { kind: 'fail', code: fault.code }, standing };
  return {
    step: { kind: 'retry_submit', afterMs: delay, throttled: fault.code === 'rate_limit_exceeded' },
    standing: { ...next, waitedMs: standing.waitedMs + delay },
  };
}

// ---- The polls ----

/** Where an accepted job stands. */
export interface JobStanding {
  /** When the job was accepted, by the clock the engine waits on: the deadline counts from it. */
  acceptedAt: number;
  /** The same moment by the worker's clock, when known: compared with a poll's `sentAt`. */
  acceptedAtWorker?: number;
  /** Polls made (a poll made again after a fault counts once). */
  polls: number;
  /** Key faults in a row of the poll under way. */
  keyFaults: number;
  /** Transient failures in a row of the poll under way (429, 503, a lost connection). */
  retries: number;
}

export function acceptedJob(acceptedAt: number, acceptedAtWorker?: number): JobStanding {
  return {
    acceptedAt,
    ...(acceptedAtWorker !== undefined ? { acceptedAtWorker } : {}),
    polls: 0,
    keyFaults: 0,
    retries: 0,
  };
}

/** The next poll begins: counted, with no faults yet. */
export function pollMade(job: JobStanding): JobStanding {
  return { ...job, polls: job.polls + 1, keyFaults: 0, retries: 0 };
}

export type PollReply =
  | { kind: 'running'; /** When the poll really went out (worker clock). */ sentAt?: number }
  | { kind: 'found' | 'empty' }
  | { kind: 'failed'; code: string }
  /** A poll that did not reach the job (429, 503, a lost connection): made again. */
  | { kind: 'transient'; code: string; retryAfterMs?: number };

/** A poll's classified reply (src/contract/classify.ts) as the policy sees it. */
export function pollReplyOf(outcome: PollOutcome, sentAt?: number): PollReply {
  switch (outcome.kind) {
    case 'found':
    case 'empty':
      return { kind: outcome.kind };
    case 'running':
      return { kind: 'running', ...(sentAt !== undefined ? { sentAt } : {}) };
    case 'failed':
      return { kind: 'failed', code: outcome.failure.code };
    case 'retry':
      return {
        kind: 'transient',
        code: outcome.failure.code,
        ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
      };
  }
}

export type WaitStep =
  /** The next poll, after `afterMs` (the last lands at the deadline). */
  | { kind: 'poll'; afterMs: number }
  /** Wait for the webhook; none by `afterMs`: one fallback poll. */
  | { kind: 'await_webhook'; afterMs: number };

export type PollStep =
  | WaitStep
  | { kind: 'finish' }
  /** The same poll again after a transient failure. */
  | { kind: 'retry_poll'; afterMs: number }
  /** The key is refused (revoked, rotated, fenced off): the same poll again once it may work. */
  | { kind: 'wait_for_key'; afterMs: number; code: string }
  | { kind: 'fail'; code: string; message?: string };

/** The deadline rule: the service said "running" at or after the maximum wait from acceptance. */
export function pastDeadline(
  policy: CallPolicy,
  job: JobStanding,
  sentAt: number | undefined,
  now: number,
): boolean {
  return sentAt !== undefined && job.acceptedAtWorker !== undefined
    ? sentAt - job.acceptedAtWorker >= policy.maxWaitMs
    : now >= job.acceptedAt + policy.maxWaitMs;
}

/**
 * The wait before the next poll (or for the webhook), never past the deadline, never zero. At or
 * past the deadline by the engine's clock the next poll decides; it comes a poll interval later,
 * not at once: the deadline rule compares the polling worker's clock at the send with the
 * accepting worker's, and a polling worker whose clock runs behind would otherwise poll without
 * pause until its clock caught up.
 */
export function nextWait(policy: CallPolicy, job: JobStanding, now: number): WaitStep {
  const left = job.acceptedAt + policy.maxWaitMs - now;
  const bound = left > 0 ? left : policy.schedule.intervalMs;
  if (policy.webhookFallbackPollMs !== undefined)
    return {
      kind: 'await_webhook',
      afterMs: Math.max(1, Math.min(policy.webhookFallbackPollMs, bound)),
    };
  return {
    kind: 'poll',
    afterMs: Math.max(1, Math.min(pollDelayMs(job.polls + 1, policy.schedule), bound)),
  };
}

/**
 * Spacing of the polls that ask whether a faulted key works again: 30 poll intervals at first,
 * doubling up to 600 (30 s to 10 minutes with the default 1 s), so rows waiting on a revoked key
 * spend little of its rate.
 */
export function keyRetryDelayMs(keyFaults: number, pollIntervalMs: number): number {
  return Math.min(600, 30 * 2 ** keyFaults) * pollIntervalMs;
}

function pollTimeoutMessage(policy: CallPolicy): string {
  return `poll_timeout: the job was still running ${Math.round(policy.maxWaitMs / 1000)} s after the service accepted it`;
}

/**
 * After a poll. A key fault never ends the job: it is the key's (another key cannot read it) and
 * may be charged, so it is never submitted again; the poll waits, keeping its request id. A
 * transient failure makes the same poll again after its wait (the deadline does not cut it: the
 * job is read however long an outage lasts). Still running at the deadline: poll_timeout.
 */
export function afterPoll(
  policy: CallPolicy,
  job: JobStanding,
  reply: PollReply,
  now: number,
  random: () => number = FULL_JITTER,
): { step: PollStep; job: JobStanding } {
  switch (reply.kind) {
    case 'found':
    case 'empty':
      return { step: { kind: 'finish' }, job };
    case 'running':
      if (pastDeadline(policy, job, reply.sentAt, now))
        return {
          step: { kind: 'fail', code: 'poll_timeout', message: pollTimeoutMessage(policy) },
          job,
        };
      return { step: nextWait(policy, job, now), job: { ...job, keyFaults: 0, retries: 0 } };
    case 'transient': {
      const retries = job.retries + 1;
      return {
        step: { kind: 'retry_poll', afterMs: retryDelayMs(retries, reply.retryAfterMs, random) },
        job: { ...job, retries },
      };
    }
    case 'failed':
      if (!isKeyFault(reply.code)) return { step: { kind: 'fail', code: reply.code }, job };
      return {
        step: {
          kind: 'wait_for_key',
          afterMs: keyRetryDelayMs(job.keyFaults, policy.schedule.intervalMs),
          code: reply.code,
        },
        job: { ...job, keyFaults: job.keyFaults + 1, retries: 0 },
      };
  }
}
