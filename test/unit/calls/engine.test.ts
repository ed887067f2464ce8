// The call engine without a server: the steps a call takes from its acceptance to its end, by
// polling, by webhook and for a search page, with an injected clock, so a change to polling,
// webhooks, deadlines or timing fails here before any driver runs it.
import { describe, expect, it } from 'vitest';
import { CallEngine, type Reply } from '../../../src/calls/engine.js';
import { callPolicyOf } from '../../../src/calls/policy.js';
import { getEndpoint } from '../../../src/contract/index.js';

const enrichment = getEndpoint('person_enrichment');
const search = getEndpoint('person_search');

/** An engine on a clock the test moves. */
function rig(o: {
  endpoint?: typeof enrichment;
  maxWaitMs?: number;
  webhook?: boolean;
  firstPollDelayMs?: number;
}) {
  const clock = { now: 1_000_000 };
  const policy = callPolicyOf(
    {
      maxWaitMs: o.maxWaitMs ?? 60_000,
      pollIntervalMs: 1_000,
      ...(o.firstPollDelayMs !== undefined ? { firstPollDelayMs: o.firstPollDelayMs } : {}),
    },
    o.webhook === true,
  );
  const engine = new CallEngine({
    endpoint: o.endpoint ?? enrichment,
    policy,
    now: () => clock.now,
    ...(o.firstPollDelayMs !== undefined ? { firstPollDelayMs: o.firstPollDelayMs } : {}),
  });
  return { engine, clock };
}

const running: Reply = { kind: 'running' };
const found = { kind: 'found' as const, status: 'completed', result: { name: 'Ada' } };
const delivered = (status: string, data: Record<string, unknown> = {}) => ({
  requestId: 'r1',
  body: { success: true, data: { request_id: 'r1', status, ...data } },
});

describe('the call engine: polling', () => {
  it('polls on the schedule, counts each poll once, and finishes with the terminal reply', () => {
    const { engine, clock } = rig({});
    expect(engine.accepted(clock.now)).toEqual({ kind: 'poll', afterMs: 1_000 });
    clock.now += 1_000;
    engine.pollBegins();
    expect(engine.afterReply(running)).toEqual({ kind: 'poll', afterMs: 1_500 });
    clock.now += 1_500;
    engine.pollBegins();
    expect(engine.afterReply(found)).toEqual({ kind: 'finish', reply: found });
    expect(engine.polls).toBe(2);
  });

  it('tells a submit that makes the first poll when it is due, as accepting the job schedules it', () => {
    // The default schedule, a learned first delay, and a maximum wait shorter than either.
    for (const o of [
      {},
      { firstPollDelayMs: 4_200 },
      { maxWaitMs: 700, firstPollDelayMs: 4_200 },
    ]) {
      const { engine, clock } = rig(o);
      const told = engine.firstPollAfterMs();
      expect(engine.accepted(clock.now)).toEqual({ kind: 'poll', afterMs: told });
    }
    expect(rig({ firstPollDelayMs: 4_200 }).engine.firstPollAfterMs()).toBe(4_200);
    expect(rig({ maxWaitMs: 700, firstPollDelayMs: 4_200 }).engine.firstPollAfterMs()).toBe(700);
  });

  it('ends poll_timeout when the job still runs at the deadline, the last poll landing on it', () => {
    const { engine, clock } = rig({ maxWaitMs: 2_000 });
    engine.accepted(clock.now);
    clock.now += 1_000;
    engine.pollBegins();
    // 1.5 s would pass the deadline: the next poll lands on it.
    expect(engine.afterReply(running)).toEqual({ kind: 'poll', afterMs: 1_000 });
    clock.now += 1_000;
    engine.pollBegins();
    expect(engine.afterReply(running)).toMatchObject({ kind: 'fail', code: 'poll_timeout' });
  });

  it('judges the deadline on when the poll was sent, by the accepting worker’s clock', () => {
    const { engine, clock } = rig({ maxWaitMs: 2_000 });
    engine.accepted(clock.now, { atWorker: 500 });
    clock.now += 5_000;
    engine.pollBegins();
    // Sent 1.9 s after acceptance, though the reply came late: not past the deadline.
    expect(engine.afterReply({ kind: 'running', sentAt: 2_400 }).kind).toBe('poll');
  });

  it('waits for a refused key, making the same poll again (not counted) until it works', () => {
    const { engine, clock } = rig({});
    engine.accepted(clock.now);
    engine.pollBegins();
    const step = engine.afterFailure('invalid_credentials');
    expect(step).toMatchObject({ kind: 'poll', keyFault: 'invalid_credentials' });
    expect(engine.keyWasRefused).toBe(true);
    engine.pollBegins();
    expect(engine.polls).toBe(1);
    engine.afterReply(running);
    expect(engine.keyWasRefused).toBe(false);
  });

  it('ends with the service’s code for a failure that is not the key’s', () => {
    const { engine, clock } = rig({});
    engine.accepted(clock.now);
    engine.pollBegins();
    expect(engine.afterFailure('request_not_found')).toEqual({
      kind: 'fail',
      code: 'request_not_found',
    });
  });

  it('makes a poll that never reached the job again after the wait asked for', () => {
    const { engine, clock } = rig({});
    engine.accepted(clock.now);
    engine.pollBegins();
    expect(engine.afterLostPoll('rate_limit_exceeded', 7_000, () => 0)).toEqual({
      kind: 'poll',
      afterMs: 7_000,
    });
    engine.pollBegins();
    expect(engine.polls).toBe(1);
  });

  it('starts with the batch’s learned first-poll delay and reports it in the timing', () => {
    const { engine, clock } = rig({ firstPollDelayMs: 4_000 });
    expect(engine.accepted(clock.now, { atWorker: 100 })).toEqual({ kind: 'poll', afterMs: 4_000 });
    clock.now += 4_000;
    engine.pollBegins();
    expect(engine.timing({ ...found, sentAt: 4_200, serviceJobMs: 2_000 })).toEqual({
      jobMs: 3_000,
      polls: 1,
      firstPollDelayMs: 4_000,
    });
  });
});

describe('the call engine: the answer at submit', () => {
  it('ends at once with a terminal answer', () => {
    const { engine, clock } = rig({});
    expect(engine.accepted(clock.now, { immediate: found })).toEqual({
      kind: 'finish',
      reply: found,
    });
    expect(engine.outcome(found, 'r1')).toMatchObject({ outcome: 'found', timing: { polls: 0 } });
  });

  it('reads a person search’s page by GET: its answer at once carries no rows', () => {
    const { engine, clock } = rig({ endpoint: search });
    expect(engine.accepted(clock.now, { immediate: found }).kind).toBe('poll');
    // A workflow started before the rule took the answer as it was (its patch says so).
    const old = rig({ endpoint: search }).engine;
    expect(old.accepted(clock.now, { immediate: found, readsSearchPage: () => false }).kind).toBe(
      'finish',
    );
  });

  it('gives a cached answer no timing: no job ran', () => {
    const { engine, clock } = rig({});
    engine.accepted(clock.now);
    const cached = { ...found, cached: true as const, fetchedAt: '2026-01-01T00:00:00.000Z' };
    expect(engine.outcome(cached, 'r0')).toEqual({
      outcome: 'found',
      requestId: 'r0',
      status: 'completed',
      result: found.result,
      cached: true,
      fetchedAt: '2026-01-01T00:00:00.000Z',
    });
  });
});

describe('the call engine: webhooks', () => {
  it('waits for a delivery, at most the fallback spacing, and polls once when none comes', () => {
    const { engine, clock } = rig({ webhook: true, maxWaitMs: 600_000 });
    expect(engine.accepted(clock.now)).toEqual({ kind: 'await_delivery', afterMs: 60_000 });
    clock.now += 60_000;
    expect(engine.noDelivery()).toEqual({ kind: 'poll', afterMs: 0 });
    engine.pollBegins();
    expect(engine.afterReply(running)).toEqual({ kind: 'await_delivery', afterMs: 60_000 });
    expect(engine.polls).toBe(1);
  });

  it('takes a delivered success that names the job as its reply, without a poll', () => {
    const { engine, clock } = rig({ webhook: true });
    engine.accepted(clock.now);
    const step = engine.delivered(
      delivered('completed', { result: { name: 'Ada' }, created_on: 1, completed_on: 3 }),
    );
    expect(step.kind).toBe('finish');
    expect(engine.polls).toBe(0);
  });

  it('waits on after a delivery that says the job still runs', () => {
    const { engine, clock } = rig({ webhook: true, maxWaitMs: 600_000 });
    engine.accepted(clock.now);
    expect(engine.delivered(delivered('processing'))).toEqual({
      kind: 'await_delivery',
      afterMs: 60_000,
    });
  });

  it('confirms a delivered failure, or a body naming no job, with one poll before ending', () => {
    const { engine, clock } = rig({ webhook: true, maxWaitMs: 600_000 });
    engine.accepted(clock.now);
    const failure = { body: { success: false, error: { code: 'internal_error', message: 'x' } } };
    expect(engine.delivered(failure)).toEqual({ kind: 'poll', afterMs: 0 });
    engine.pollBegins();
    // Still running: the confirmation does not judge the deadline; the call waits on.
    expect(engine.afterReply(running)).toEqual({ kind: 'await_delivery', afterMs: 60_000 });
  });

  it('reads a person search’s rows by GET: its delivery only reports completion', () => {
    const { engine, clock } = rig({ endpoint: search, webhook: true });
    engine.accepted(clock.now);
    expect(engine.delivered(delivered('completed', { results: [] }))).toEqual({
      kind: 'poll',
      afterMs: 0,
    });
  });
});

describe('the call engine: a search page read', () => {
  it('reads at once, then on the poll schedule, and ends poll_timeout at the maximum wait', () => {
    const { engine, clock } = rig({ endpoint: search, maxWaitMs: 3_000 });
    expect(engine.accepted(clock.now, { firstLookNow: true })).toEqual({
      kind: 'poll',
      afterMs: 0,
    });
    engine.pollBegins();
    expect(engine.afterReply(running)).toEqual({ kind: 'poll', afterMs: 1_000 });
    clock.now += 1_000;
    engine.pollBegins();
    expect(engine.afterReply(running)).toEqual({ kind: 'poll', afterMs: 1_500 });
    clock.now += 1_500;
    engine.pollBegins();
    // 2.5 s in: the next read lands on the deadline, and a page still running there times out.
    expect(engine.afterReply(running)).toEqual({ kind: 'poll', afterMs: 500 });
    clock.now += 500;
    engine.pollBegins();
    expect(engine.afterReply(running)).toMatchObject({ kind: 'fail', code: 'poll_timeout' });
  });
});
