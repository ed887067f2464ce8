// A submit whose ledger is its workflow claims its send in an acknowledged heartbeat, and the
// server keeps only the last heartbeat it receives. The SDK sends its own heartbeats on a path of
// their own, so one it sent before the claim could land after it and erase it (the send would then
// look never made, and be made again). A submit starts quietly, so a quick permit's claim has no
// heartbeat of the SDK before it; one that waited with them also signals its claim to the workflow,
// where nothing erases it, before it sends, and sends nothing if the signal does not come back in
// time. Here the server is a client that keeps a timeline of what reached it.
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../../src/activities/deps.js';
import { sendSubmit, type Sent } from '../../../src/activities/submit.js';
import { workflowLedger } from '../../../src/activities/submit-intent.js';
import { getEndpoint, interactiveRequester } from '../../../src/contract/index.js';
import type { AcquireOptions } from '../../../src/throttle/permits.js';

const RID = '9f86d081884c7d659a2feaa0c55ad015_1718000000_1';
type Event = { what: 'sdk' | 'recorded' | 'signal' | 'post'; details?: unknown };

/** A server that records acknowledged heartbeats and signals (a signal that hangs when told). */
function timelineClient(events: Event[], o: { signalHangs?: boolean } = {}): Client {
  return {
    withAbortSignal: <T>(_signal: AbortSignal, fn: () => Promise<T>) => fn(),
    activity: {
      heartbeat: async (_token: unknown, details: unknown) => {
        await new Promise((r) => setTimeout(r, 10));
        events.push({ what: 'recorded', details });
      },
    },
    workflow: {
      getHandle: () => ({
        signal: async (signal: { name: string }, details: unknown) => {
          if (o.signalHangs) return new Promise(() => undefined);
          await new Promise((r) => setTimeout(r, 10));
          events.push({ what: 'signal', details: { name: signal.name, ...(details as object) } });
        },
      }),
    },
  } as unknown as Client;
}

/** A service that accepts the job; a permit that comes after `waitMs`. */
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
      acquire: async (_k: string, _kind: string, { beforeSend }: AcquireOptions) => {
        await new Promise((r) => setTimeout(r, waitMs));
        await beforeSend?.();
      },
      rateLimited: () => Promise.resolve(),
      creditsExhausted: () => Promise.resolve(),
    },
  } as unknown as ActivityDeps;
  return { deps, posts: () => posts };
}

/** A heartbeat timeout of 1.2 s: the activity heartbeats every 200 ms; a signal has 400 ms. */
async function submitAfter(waitMs: number, client: (events: Event[]) => Client) {
  const events: Event[] = [];
  const { deps, posts } = service(events, waitMs);
  const env = new MockActivityEnvironment(
    { workflowExecution: { workflowId: 'w', runId: 'r' }, heartbeatTimeoutMs: 1_200 },
    { client: client(events) },
  );
  env.on('heartbeat', (details: unknown) => events.push({ what: 'sdk', details }));
  const sent = env.run<[], Sent, () => Promise<Sent>>(() =>
    sendSubmit(deps, {
      keyId: 'k1',
      requester: interactiveRequester(),
      endpoint: getEndpoint('person_enrichment'),
      params: { email: 'a@b.example' },
      ledger: workflowLedger('t1', { reportAccepted: true }),
    }),
  );
  return { sent, events, posts };
}

const claim = { token: 't1' };
const at = (events: Event[], what: Event['what'], details?: unknown) =>
  events.findIndex(
    (e) =>
      e.what === what &&
      (details === undefined || JSON.stringify(e.details) === JSON.stringify(details)),
  );

describe('a submit whose workflow keeps its ledger', () => {
  it('with a quick permit, claims with no heartbeat of the SDK before it, and signals nothing', async () => {
    const { sent, events, posts } = await submitAfter(50, timelineClient);
    expect((await sent).kind).toBe('accepted');
    expect(posts()).toBe(1);
    const claimed = at(events, 'recorded', claim);
    expect(claimed).toBeGreaterThanOrEqual(0);
    expect(at(events, 'post')).toBeGreaterThan(claimed);
    // The SDK's first heartbeat carried the claim: none before it could land after it.
    expect(events.find((e) => e.what === 'sdk')).toEqual({ what: 'sdk', details: claim });
    expect(at(events, 'signal')).toBe(-1);
  });

  it('after a wait with heartbeats of the SDK, signals its claim to the workflow before it sends', async () => {
    const { sent, events, posts } = await submitAfter(700, timelineClient);
    expect((await sent).kind).toBe('accepted');
    expect(posts()).toBe(1);
    // The SDK heartbeated while it waited for its permit, with nothing to say yet.
    expect(events.some((e) => e.what === 'sdk' && e.details === undefined)).toBe(true);
    const claimed = at(events, 'recorded', claim);
    const signalled = at(events, 'signal', { name: 'submitClaimed', token: 't1' });
    expect(claimed).toBeGreaterThanOrEqual(0);
    expect(signalled).toBeGreaterThan(claimed);
    expect(at(events, 'post')).toBeGreaterThan(signalled);
  });

  it("sends nothing when its claim's signal does not come back in time", async () => {
    const { sent, posts } = await submitAfter(700, (events) =>
      timelineClient(events, { signalHangs: true }),
    );
    // Made again by the workflow after the delay: this attempt sent nothing.
    await expect(sent).rejects.toMatchObject({
      type: 'submit_intent_not_recorded',
      nonRetryable: false,
    });
    expect(posts()).toBe(0);
  });
});
