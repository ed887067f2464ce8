// A submit whose ledger is its workflow claims its send in a heartbeat, and the server keeps only
// the last heartbeat it receives. The SDK sends its own heartbeats beside the activity's
// acknowledged ones, so one it sent before the claim could land after it and erase it (the send
// would then look never made, and be made again). Such an activity's heartbeats go one at a time,
// each acknowledged, none through the SDK, until its accepted job is recorded. Here the server is a
// client that keeps a timeline of what reached it.
import { ActivityCancelledError, type Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../../src/activities/deps.js';
import { sendSubmit, type Sent } from '../../../src/activities/submit.js';
import { workflowLedger } from '../../../src/activities/submit-intent.js';
import { getEndpoint, interactiveRequester } from '../../../src/contract/index.js';
import type { AcquireOptions } from '../../../src/throttle/permits.js';

const RID = '9f86d081884c7d659a2feaa0c55ad015_1718000000_1';
type Event = { what: 'sent' | 'recorded' | 'sdk' | 'post'; details?: unknown };

/** A server that records each acknowledged heartbeat a moment after it is sent. */
function timelineClient(events: Event[], answer?: () => Error | undefined): Client {
  return {
    withAbortSignal: <T>(_signal: AbortSignal, fn: () => Promise<T>) => fn(),
    activity: {
      heartbeat: async (_token: unknown, details: unknown) => {
        events.push({ what: 'sent', details });
        await new Promise((r) => setTimeout(r, 30));
        const err = answer?.();
        events.push({ what: 'recorded', details });
        if (err) throw err;
      },
    },
  } as unknown as Client;
}

/** A service that accepts the job; a permit that comes after `waitMs` (or when the signal aborts). */
function service(events: Event[], waitMs: number) {
  let posts = 0;
  const deps = {
    clients: {
      get: () => ({
        submit: () => {
          posts += 1;
          events.push({ what: 'post' });
          return Promise.resolve({
            httpStatus: 202,
            body: { success: true, data: { request_id: RID, status: 'queued' } },
          });
        },
      }),
    },
    permits: {
      acquire: async (_k: string, _kind: string, { beforeSend, signal }: AcquireOptions) => {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, waitMs);
          signal?.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(new Error('permit wait aborted'));
          });
        });
        await beforeSend?.();
      },
      rateLimited: () => Promise.resolve(),
      creditsExhausted: () => Promise.resolve(),
    },
  } as unknown as ActivityDeps;
  return { deps, posts: () => posts };
}

/** A heartbeat timeout of 1.2 s: the activity heartbeats every 200 ms, in order every 400 ms. */
function environment(events: Event[], client: Client): MockActivityEnvironment {
  const env = new MockActivityEnvironment(
    { workflowExecution: { workflowId: 'w', runId: 'r' }, heartbeatTimeoutMs: 1_200 },
    { client },
  );
  env.on('heartbeat', (details: unknown) => events.push({ what: 'sdk', details }));
  return env;
}

const submit = (deps: ActivityDeps, token: string) =>
  sendSubmit(deps, {
    keyId: 'k1',
    requester: interactiveRequester(),
    endpoint: getEndpoint('person_enrichment'),
    params: { email: 'a@b.example' },
    ledger: workflowLedger(token, { reportAccepted: true }),
  });

describe('a submit activity whose workflow keeps its ledger', () => {
  it('heartbeats one at a time, none through the SDK, until its job is recorded', async () => {
    const events: Event[] = [];
    const { deps, posts } = service(events, 1_000);
    const env = environment(events, timelineClient(events));
    const sent = await env.run<[], Sent, () => Promise<Sent>>(() => submit(deps, 't1'));
    expect(sent.kind).toBe('accepted');
    expect(posts()).toBe(1);
    const claim = { token: 't1' };
    const claimed = events.findIndex((e) => e.what === 'recorded' && eq(e.details, claim));
    const post = events.findIndex((e) => e.what === 'post');
    // Heartbeats while it waited for its permit went out, each acknowledged, before it.
    expect(events[0]).toEqual({ what: 'sent', details: undefined });
    expect(
      events.filter((e) => e.what === 'sent' && e.details === undefined).length,
    ).toBeGreaterThan(1);
    expect(claimed).toBeGreaterThan(0);
    expect(post).toBeGreaterThan(claimed);
    // No heartbeat of the SDK before the job was recorded: none can land after the claim.
    const accepted = events.findIndex(
      (e) => e.what === 'recorded' && (e.details as { requestId?: string })?.requestId === RID,
    );
    expect(accepted).toBeGreaterThan(post);
    expect(events.slice(0, accepted).some((e) => e.what === 'sdk')).toBe(false);
    // Never two on their way at once: each sent after the one before was recorded.
    let onTheWay = 0;
    for (const e of events) {
      if (e.what === 'sent') onTheWay += 1;
      if (e.what === 'recorded') onTheWay -= 1;
      expect(onTheWay).toBeLessThanOrEqual(1);
    }
    // Then the SDK heartbeats again, with the job.
    expect(events.slice(accepted)).toContainEqual({
      what: 'sdk',
      details: expect.objectContaining({ token: 't1', requestId: RID }),
    });
  });

  it('stops waiting for its permit, and sends nothing, when a heartbeat says it is cancelled', async () => {
    const events: Event[] = [];
    const { deps, posts } = service(events, 60_000);
    const env = environment(
      events,
      timelineClient(events, () => new ActivityCancelledError('cancelled')),
    );
    const started = Date.now();
    await expect(env.run(() => submit(deps, 't2'))).rejects.toThrow('permit wait aborted');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(posts()).toBe(0);
    expect(events.some((e) => e.what === 'sdk')).toBe(false);
  });
});

const eq = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
