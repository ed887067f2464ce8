// Durable endpoint calls against the real dev server and the emulator over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callWorkflowId } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import {
  PcdsEndpoint,
  PcdsKeyId,
  PcdsOutcome,
  PcdsState,
} from '../../src/temporal/search-attributes.js';
import { submitIntentUpdate } from '../../src/calls/signals.js';
import {
  envConfig,
  startCallEnv,
  TEST_KEYS,
  withCallWorker,
  type CallEnv,
  callFailureOf,
} from './call-env.js';

let env: CallEnv;
const knownEmail = sampleRows({ rows: 1 })[0].email;
const ENRICH = 'POST /person/enrichment';
const POLL = 'GET /person/enrichment';

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

describe('endpoint call', () => {
  it('returns a found result with its payload', async () => {
    await withCallWorker(env, async (client) => {
      const out = await client.call('person_enrichment', { email: knownEmail });
      expect(out.outcome).toBe('found');
      if (out.outcome !== 'found') return;
      expect(out.requestId).toMatch(/_\d+_\d+$/);
      expect(
        (out.result as Record<string, unknown>).best_business_email ??
          (out.result as Record<string, unknown>).altemails,
      ).toBeTruthy();
    });
  });

  it('leaves search attributes an operator can filter on: endpoint, key, state and outcome', async () => {
    await withCallWorker(env, async (client) => {
      const handle = await client.startCall('person_enrichment', { email: knownEmail });
      await handle.result();
      const attrs = (await handle.workflow.describe()).typedSearchAttributes;
      expect(attrs.get(PcdsEndpoint)).toBe('person_enrichment');
      expect(attrs.get(PcdsKeyId)).toBe(env.emulator.devKey.id);
      expect(attrs.get(PcdsState)).toBe('done');
      expect(attrs.get(PcdsOutcome)).toBe('found');
    });
  });

  it('returns an explicit no-match outcome for an empty result', async () => {
    await withCallWorker(env, async (client) => {
      const out = await client.call('person_enrichment', {
        email: 'nobody.at.all.zz9@nowhere-known.org',
      });
      expect(out).toMatchObject({ outcome: 'empty' });
    });
  });

  it.each([
    ['invalid_credentials', TEST_KEYS.wrongSecret.id, 401],
    ['subscription_required', TEST_KEYS.searchOnly.id, 403],
    ['insufficient_credits', TEST_KEYS.broke.id, 402],
  ])('fails with %s without retrying the submit', async (code, keyId, httpStatus) => {
    await withCallWorker(env, async (client) => {
      const before = env.proxy.seen(ENRICH).length;
      const err = await callFailureOf(
        client.call('person_enrichment', { email: knownEmail }, { keyId }),
      );
      expect(err.code).toBe(code);
      expect(err.httpStatus).toBe(httpStatus);
      expect(env.proxy.seen(ENRICH).length - before).toBe(1);
    });
  });

  it.each([
    ['search_error', { jobSearchErrorShare: 1 }],
    ['internal_error', { jobInternalErrorShare: 1 }],
    ['job_rate_limited', { jobRateLimitedShare: 1 }],
  ])(
    'fails with %s when the job ends in that terminal error, and does not resubmit',
    async (code, faults) => {
      env.emulator.setFaults({ ...faults, paths: ['/person/enrichment'] });
      try {
        await withCallWorker(env, async (client) => {
          const before = env.proxy.seen(ENRICH).length;
          const err = await callFailureOf(client.call('person_enrichment', { email: knownEmail }));
          expect(err.code).toBe(code);
          expect(env.proxy.seen(ENRICH).length - before).toBe(1);
        });
      } finally {
        env.emulator.setFaults({
          jobSearchErrorShare: 0,
          jobInternalErrorShare: 0,
          jobRateLimitedShare: 0,
          paths: [],
        });
      }
    },
  );

  it('ends with result_too_large and its request id when the result is over the bound, after one submit and no further poll', async () => {
    // A bound far below any found result; the worker is otherwise the same.
    const config = envConfig(env.emulator, env.proxy.url, { PCDS_MAX_RESULT_BYTES: '200' });
    await withCallWorker({ ...env, config }, async (client) => {
      const submitsBefore = env.emulator.stats().jobsSubmitted;
      const err = await callFailureOf(client.call('person_enrichment', { email: knownEmail }));
      expect(err.code).toBe('result_too_large');
      expect(err.requestId).toMatch(/_\d+_\d+$/);
      expect(err.message).toContain(err.requestId);
      const polls = env.proxy.seen(POLL).length;
      await new Promise((r) => setTimeout(r, 1_000));
      expect(env.proxy.seen(POLL).length).toBe(polls);
      expect(env.emulator.stats().jobsSubmitted - submitsBefore).toBe(1);
    });
  });

  it('fails with request_not_found when the service no longer knows the job', async () => {
    env.emulator.setFaults({ jobNeverFinishShare: 1, paths: ['/person/enrichment'] });
    try {
      await withCallWorker(env, async (client) => {
        const handle = await client.startCall('person_enrichment', { email: knownEmail });
        await expect
          .poll(async () => (await handle.state()).polls, { timeout: 10_000 })
          .toBeGreaterThan(0);
        // The emulator forgets every job: the next poll answers 404.
        env.emulator.reset();
        const err = await callFailureOf(handle.result());
        expect(err.code).toBe('request_not_found');
        expect(err.httpStatus).toBe(404);
      });
    } finally {
      env.emulator.setFaults({ jobNeverFinishShare: 0, paths: [] });
    }
  });

  it('fails with poll_timeout once the service still says running a maximum wait after accepting the job', async () => {
    env.emulator.setFaults({ jobNeverFinishShare: 1, paths: ['/person/enrichment'] });
    try {
      await withCallWorker(env, async (client) => {
        const started = Date.now();
        const handle = await client.startCall(
          'person_enrichment',
          { email: knownEmail },
          { maxWaitMs: 1_500, pollIntervalMs: 100 },
        );
        const err = await callFailureOf(handle.result());
        expect(err.code).toBe('poll_timeout');
        expect(err.message).toContain('after the service accepted it');
        expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
        // The last poll went out at the deadline and found the job still running.
        expect((await handle.state()).lastStatus).toMatch(/queued|processing/);
      });
    } finally {
      env.emulator.setFaults({ jobNeverFinishShare: 0, paths: [] });
    }
  });

  it('retries a 503 on submit and on poll, then succeeds with one job', async () => {
    await withCallWorker(env, async (client) => {
      const submitsBefore = env.emulator.stats().jobsSubmitted;
      env.proxy.script(ENRICH, [{ status: 503, code: 'service_unavailable' }]);
      env.proxy.script(POLL, [{ status: 503, code: 'service_unavailable' }]);
      const pollsBefore = env.proxy.seen(POLL).length;
      const out = await client.call('person_enrichment', { email: knownEmail });
      expect(out.outcome).toBe('found');
      const posts = env.proxy
        .seen(ENRICH)
        .slice(-2)
        .map((s) => s.answered);
      expect(posts).toEqual([503, 202]);
      expect(env.proxy.seen(POLL).slice(pollsBefore)[0].answered).toBe(503);
      expect(env.emulator.stats().jobsSubmitted - submitsBefore).toBe(1);
    });
  });

  it('keeps an accepted job when its key fails on a poll (revoked, then restored): waits, reads it, never submits again', async () => {
    await withCallWorker(env, async (client) => {
      const submitsBefore = env.emulator.stats().jobsSubmitted;
      const pollsBefore = env.proxy.seen(POLL).length;
      env.proxy.script(POLL, [
        { status: 401, code: 'invalid_credentials' },
        { status: 403, code: 'ip_not_allowed' },
      ]);
      const handle = await client.startCall(
        'person_enrichment',
        { email: knownEmail },
        { pollIntervalMs: 50 },
      );
      await expect
        .poll(async () => (await handle.workflow.describe()).typedSearchAttributes.get(PcdsState), {
          timeout: 10_000,
          interval: 100,
        })
        .toBe('waiting_for_key');
      const out = await handle.result();
      expect(out.outcome).toBe('found');
      const answered = env.proxy
        .seen(POLL)
        .slice(pollsBefore)
        .map((r) => r.answered);
      expect(answered.slice(0, 3)).toEqual([401, 403, 200]);
      expect(env.emulator.stats().jobsSubmitted - submitsBefore).toBe(1);
    });
  });

  it('waits at least Retry-After after a 429 before the next request', async () => {
    await withCallWorker(env, async (client) => {
      env.proxy.script(ENRICH, [
        { status: 429, code: 'rate_limit_exceeded', retryAfterSeconds: 2 },
      ]);
      env.proxy.script(POLL, [{ status: 429, code: 'rate_limit_exceeded', retryAfterSeconds: 2 }]);
      const from = Date.now();
      const out = await client.call('person_enrichment', { email: knownEmail });
      expect(out.outcome).toBe('found');
      const posts = env.proxy.seen(ENRICH).filter((s) => s.at >= from);
      expect(posts.map((s) => s.answered)).toEqual([429, 202]);
      expect(posts[1].at - posts[0].at).toBeGreaterThanOrEqual(2_000);
      const polls = env.proxy.seen(POLL).filter((s) => s.at >= from);
      expect(polls[0].answered).toBe(429);
      expect(polls[1].at - polls[0].at).toBeGreaterThanOrEqual(2_000);
    });
  });

  it('does not repeat a submit whose request may have reached the service', async () => {
    await withCallWorker(env, async (client) => {
      env.proxy.script(ENRICH, [{ drop: true }]);
      const before = env.proxy.seen(ENRICH).length;
      const err = await callFailureOf(client.call('person_enrichment', { email: knownEmail }));
      expect(err.code).toBe('submit_outcome_unknown');
      expect(env.proxy.seen(ENRICH).length - before).toBe(1);
    });
  });

  it('attaches a repeated start with the same key to the same call', async () => {
    await withCallWorker(env, async (client) => {
      const before = env.proxy.seen(ENRICH).length;
      const a = await client.startCall(
        'person_enrichment',
        { email: knownEmail },
        { idempotencyKey: 'order-17' },
      );
      const b = await client.startCall(
        'person_enrichment',
        { email: knownEmail },
        { idempotencyKey: 'order-17' },
      );
      expect(a.workflowId).toBe(callWorkflowId('person_enrichment', 'order-17'));
      expect(a.workflowId).not.toContain('order-17');
      expect(b.workflowId).toBe(a.workflowId);
      await a.result();
      const c = await client.call(
        'person_enrichment',
        { email: knownEmail },
        { idempotencyKey: 'order-17' },
      );
      expect(c.outcome).toBe('found');
      expect(env.proxy.seen(ENRICH).length - before).toBe(1);
    });
  });

  it('claims its send in a heartbeat, not in its history, and refuses an intent it did not ask for', async () => {
    env.emulator.setFaults({ jobNeverFinishShare: 1 });
    try {
      await withCallWorker(env, async (client) => {
        const handle = await client.startCall('person_enrichment', { email: knownEmail });
        await expect.poll(async () => (await handle.state()).phase).toBe('polling');
        const history = await handle.workflow.fetchHistory();
        const updates = (history.events ?? []).filter(
          (e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name,
        );
        // The claim went to the server with the attempt's heartbeat: no event, no workflow task.
        expect(updates).toEqual([]);
        // An older activity's intent for an attempt the workflow is not waiting on may never send.
        const refused = await handle.workflow
          .executeUpdate(submitIntentUpdate, { args: [{ token: 'stale' }] })
          .then(
            () => undefined,
            (e: unknown) => e as Error & { cause?: Error },
          );
        expect(refused?.cause?.message).toMatch(/given up: do not send/);
        await handle.workflow.terminate('test over');
      });
    } finally {
      env.emulator.setFaults({});
    }
  });

  it('refuses invalid parameters before starting anything, naming the field', async () => {
    await withCallWorker(env, async (client) => {
      await expect(
        client.startCall('person_enrichment', { email: 'not-an-email' }),
      ).rejects.toThrow(/email/);
      // @ts-expect-error not an endpoint of the catalogue: refused at run time too
      await expect(client.startCall('no_such_endpoint', {})).rejects.toThrow(/unknown endpoint/);
    });
  });
});
