// The call policy without a server: each branch of what a call does after a reply or a failure,
// with the delays and the deadline as numbers, so a changed rule fails here.
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_WEBHOOK_FALLBACK_POLL_MS,
  FIRST_SUBMIT,
  LOST_SUBMIT_RETRY_MS,
  acceptedJob,
  afterPoll,
  afterSubmitFault,
  callPolicyOf,
  keyRetryDelayMs,
  nextWait,
  pastDeadline,
  pollMade,
  pollReplyOf,
  type JobStanding,
} from '../../../src/calls/policy.js';

const T0 = 1_000_000;
const policy = callPolicyOf({ maxWaitMs: 60_000 });
const half = () => 0.5;

describe('call policy: defaults', () => {
  it('takes the defaults of the poll schedule and the maximum wait', () => {
    expect(callPolicyOf({})).toEqual({
      maxWaitMs: 30 * 60_000,
      schedule: { intervalMs: 1_000, backoff: 1.5, maxIntervalMs: 15_000 },
    });
    expect(callPolicyOf({}, true).webhookFallbackPollMs).toBe(DEFAULT_WEBHOOK_FALLBACK_POLL_MS);
    expect(callPolicyOf({ firstPollDelayMs: 4_000, pollIntervalMs: 200 }).schedule).toMatchObject({
      intervalMs: 200,
      firstPollDelayMs: 4_000,
    });
  });
});

describe('call policy: the submit', () => {
  it('makes a submit lost before it could send again after 1 s, outside the service budget', () => {
    const { step, standing } = afterSubmitFault(
      policy,
      { attempt: 3, waitedMs: 59_999 },
      { kind: 'lost_before_send' },
    );
    expect(step).toEqual({ kind: 'retry_submit', afterMs: LOST_SUBMIT_RETRY_MS, throttled: true });
    expect(LOST_SUBMIT_RETRY_MS).toBe(1_000);
    expect(standing).toEqual({ attempt: 4, waitedMs: 59_999 });
  });

  it('ends on a refusal that may have been accepted, with its code', () => {
    const { step } = afterSubmitFault(policy, FIRST_SUBMIT, {
      kind: 'refused',
      code: 'invalid_credentials',
      retryable: false,
    });
    expect(step).toEqual({ kind: 'fail', code: 'invalid_credentials' });
  });

  it('waits the wait an activity chose, and counts it against the maximum wait', () => {
    const first = afterSubmitFault(policy, FIRST_SUBMIT, {
      kind: 'refused',
      code: 'service_unavailable',
      retryable: true,
      delayMs: 700,
    });
    expect(first.step).toEqual({ kind: 'retry_submit', afterMs: 700, throttled: false });
    expect(first.standing).toEqual({ attempt: 2, waitedMs: 700 });
  });

  it('waits a Retry-After plus jitter on 429, and says the wait is a throttle', () => {
    const { step } = afterSubmitFault(
      policy,
      FIRST_SUBMIT,
      { kind: 'refused', code: 'rate_limit_exceeded', retryable: true, retryAfterMs: 2_000 },
      half,
    );
    expect(step).toEqual({ kind: 'retry_submit', afterMs: 2_125, throttled: true });
  });

  it('backs off 1 s doubling to a minute (full jitter) when no wait was given', () => {
    const delays = [1, 2, 3, 7, 8].map((attempt) => {
      const { step } = afterSubmitFault(
        callPolicyOf({}),
        { attempt, waitedMs: 0 },
        { kind: 'refused', code: 'transport_error', retryable: true },
        () => 1,
      );
      return step.kind === 'retry_submit' ? step.afterMs : -1;
    });
    expect(delays).toEqual([1_000, 2_000, 4_000, 60_000, 60_000]);
  });

  it("ends with the refusal's code once the service's waits would pass the maximum wait", () => {
    const fault = {
      kind: 'refused',
      code: 'service_unavailable',
      retryable: true,
      delayMs: 1_000,
    } as const;
    expect(afterSubmitFault(policy, { attempt: 9, waitedMs: 59_000 }, fault).step.kind).toBe(
      'retry_submit',
    );
    expect(afterSubmitFault(policy, { attempt: 9, waitedMs: 59_001 }, fault).step).toEqual({
      kind: 'fail',
      code: 'service_unavailable',
    });
  });
});

describe('call policy: the polls', () => {
  const accepted = acceptedJob(T0, T0 + 5);

  it('waits the schedule before each poll, the last one landing at the deadline', () => {
    expect(nextWait(policy, accepted, T0)).toEqual({ kind: 'poll', afterMs: 1_000 });
    const later: JobStanding = { ...accepted, polls: 3 };
    expect(nextWait(policy, later, T0)).toEqual({ kind: 'poll', afterMs: 3_375 });
    expect(nextWait(policy, later, T0 + 58_000)).toEqual({ kind: 'poll', afterMs: 2_000 });
    // A moment before the deadline: the last poll lands on it.
    expect(nextWait(policy, later, T0 + 59_999)).toEqual({ kind: 'poll', afterMs: 1 });
    // At or past the deadline: one more poll (it decides) a poll interval later.
    expect(nextWait(policy, later, T0 + 70_000)).toEqual({ kind: 'poll', afterMs: 1_000 });
  });

  it("polls from a worker whose clock runs behind the accepting worker's once a poll interval, not at once", () => {
    // Accepted by a worker whose clock agrees with the engine's; polled by one 20 s behind.
    let job = acceptedJob(T0, T0);
    let engineNow = T0 + 60_000; // the deadline
    const polls: number[] = [];
    for (let i = 0; i < 100; i++) {
      const sentAt = engineNow - 20_000; // the polling worker's clock
      polls.push(sentAt);
      const next = afterPoll(policy, pollMade(job), { kind: 'running', sentAt }, engineNow);
      if (next.step.kind === 'fail') break;
      expect(next.step).toMatchObject({ kind: 'poll', afterMs: 1_000 });
      job = next.job;
      engineNow += (next.step as { afterMs: number }).afterMs;
    }
    // Until its clock reaches the deadline: 20 s at a poll a second, then the one that decides.
    expect(polls).toHaveLength(21);
    expect(polls.at(-1)).toBe(T0 + 60_000);
  });

  it('starts with a learned first delay', () => {
    const learned = callPolicyOf({ maxWaitMs: 60_000, firstPollDelayMs: 5_400 });
    expect(nextWait(learned, accepted, T0)).toEqual({ kind: 'poll', afterMs: 5_400 });
  });

  it('in webhook mode waits for the delivery, then one fallback poll, never past the deadline', () => {
    const hooked = callPolicyOf({ maxWaitMs: 90_000 }, true);
    expect(nextWait(hooked, accepted, T0)).toEqual({ kind: 'await_webhook', afterMs: 60_000 });
    expect(nextWait(hooked, accepted, T0 + 60_000)).toEqual({
      kind: 'await_webhook',
      afterMs: 30_000,
    });
    expect(nextWait(hooked, accepted, T0 + 95_000)).toEqual({
      kind: 'await_webhook',
      afterMs: 1_000,
    });
  });

  it('counts a poll once, however often it is made again', () => {
    const one = pollMade({ ...accepted, keyFaults: 2, retries: 1 });
    expect(one).toMatchObject({ polls: 1, keyFaults: 0, retries: 0 });
  });

  it('finishes on found or empty', () => {
    for (const kind of ['found', 'empty'] as const)
      expect(afterPoll(policy, accepted, { kind }, T0).step).toEqual({ kind: 'finish' });
  });

  it('polls on while running, and ends with poll_timeout when running at the deadline', () => {
    const running = pollMade(accepted);
    expect(
      afterPoll(policy, running, { kind: 'running', sentAt: T0 + 5_000 }, T0 + 5_000).step,
    ).toEqual({ kind: 'poll', afterMs: 1_500 });
    // Judged by when the poll went out (worker clock), not when its answer arrived.
    expect(
      afterPoll(policy, running, { kind: 'running', sentAt: T0 + 60_004 }, T0 + 61_000).step.kind,
    ).toBe('poll');
    expect(afterPoll(policy, running, { kind: 'running', sentAt: T0 + 60_005 }, T0).step).toEqual({
      kind: 'fail',
      code: 'poll_timeout',
      message: 'poll_timeout: the job was still running 60 s after the service accepted it',
    });
  });

  it('without a send time judges the deadline by the engine clock', () => {
    const noWorkerClock = acceptedJob(T0);
    expect(pastDeadline(policy, noWorkerClock, T0 + 99_999, T0 + 59_999)).toBe(false);
    expect(pastDeadline(policy, noWorkerClock, undefined, T0 + 60_000)).toBe(true);
    expect(pastDeadline(policy, noWorkerClock, undefined, T0 + 59_999)).toBe(false);
  });

  it('waits for a faulted key 30 poll intervals, doubling up to 600, and keeps the job', () => {
    let job = pollMade(accepted);
    const waits: number[] = [];
    for (let i = 0; i < 7; i++) {
      const next = afterPoll(policy, job, { kind: 'failed', code: 'invalid_credentials' }, T0);
      expect(next.step).toMatchObject({ kind: 'wait_for_key', code: 'invalid_credentials' });
      if (next.step.kind === 'wait_for_key') waits.push(next.step.afterMs);
      job = next.job;
    }
    expect(waits).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 600_000, 600_000]);
    expect(keyRetryDelayMs(0, 200)).toBe(6_000);
    // A reply that reaches the job again starts the count afresh.
    const back = afterPoll(policy, job, { kind: 'running', sentAt: T0 }, T0);
    expect(back.job.keyFaults).toBe(0);
  });

  it('ends a job failure that is not the key with its code', () => {
    expect(afterPoll(policy, accepted, { kind: 'failed', code: 'job_failed' }, T0).step).toEqual({
      kind: 'fail',
      code: 'job_failed',
    });
    // 402 is systemic but not a key fault: the job ends.
    expect(
      afterPoll(policy, accepted, { kind: 'failed', code: 'insufficient_credits' }, T0).step.kind,
    ).toBe('fail');
  });

  it('makes a poll that did not reach the job again after its back-off, past the deadline too', () => {
    let job = pollMade(accepted);
    const waits: number[] = [];
    for (let i = 0; i < 3; i++) {
      const next = afterPoll(
        policy,
        job,
        { kind: 'transient', code: 'service_unavailable' },
        T0 + 120_000,
        () => 1,
      );
      if (next.step.kind === 'retry_poll') waits.push(next.step.afterMs);
      job = next.job;
    }
    expect(waits).toEqual([1_000, 2_000, 4_000]);
    const after429 = afterPoll(
      policy,
      job,
      { kind: 'transient', code: 'rate_limit_exceeded', retryAfterMs: 3_000 },
      T0,
      () => 0,
    );
    expect(after429.step).toEqual({ kind: 'retry_poll', afterMs: 3_000 });
    expect(after429.job.polls).toBe(1);
  });

  it('reads a classified reply as the policy sees it', () => {
    expect(pollReplyOf({ kind: 'running', status: 'processing' }, 42)).toEqual({
      kind: 'running',
      sentAt: 42,
    });
    expect(
      pollReplyOf({
        kind: 'retry',
        failure: { code: 'rate_limit_exceeded', message: '', httpStatus: 429 },
        retryAfterMs: 5,
      }),
    ).toEqual({ kind: 'transient', code: 'rate_limit_exceeded', retryAfterMs: 5 });
    expect(
      pollReplyOf({
        kind: 'failed',
        failure: { code: 'invalid_credentials', message: '', httpStatus: 401 },
      }),
    ).toEqual({ kind: 'failed', code: 'invalid_credentials' });
    expect(pollReplyOf({ kind: 'empty', status: 'completed', data: {} })).toEqual({
      kind: 'empty',
    });
  });
});
