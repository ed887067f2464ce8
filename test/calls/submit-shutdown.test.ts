// A submit activity reports to its workflow: its claim to send (an acknowledged heartbeat), and a
// job the server no longer waits for (by update). Only a worker running the workflow answers an
// update: when the worker shuts down, none may be left, and the activity is cancelled. These
// reports then end at once, so a worker's shutdown never waits on them. Here no worker polls the
// workflow's task queue at all. An attempt the server gave up on still hands its accepted job
// over, and can no longer claim a send.
import { ActivityCancellationDetails } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ActivityNotFoundError, type Client, type Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptanceReporter, claimRecorder } from '../../src/activities/submit-intent.js';
import { connectClient, uniqueTaskQueue } from '../harness/temporal.js';

let client: Client;
let connection: Connection;
const started: string[] = [];
beforeAll(async () => {
  ({ client, connection } = await connectClient());
});
afterAll(async () => {
  for (const id of started)
    await client.workflow
      .getHandle(id)
      .terminate('test cleanup')
      .catch(() => undefined);
  await connection?.close();
});

/** A workflow no worker runs: an update to it waits for as long as nobody cancels it. */
async function unattendedWorkflow(): Promise<{ workflowId: string; runId: string }> {
  const workflowId = `submit-shutdown-${process.pid}-${started.length}-${Date.now().toString(36)}`;
  const handle = await client.workflow.start('endpointCall', {
    taskQueue: uniqueTaskQueue('unpolled'),
    workflowId,
    args: [],
  });
  started.push(workflowId);
  return { workflowId, runId: handle.firstExecutionRunId };
}

const SHUTDOWN = new ActivityCancellationDetails({ workerShutdown: true });

/** Runs `step` in an activity context, cancels it after `afterMs`, and says how it ended. */
async function cancelledDuring(
  env: MockActivityEnvironment,
  step: () => Promise<void>,
  afterMs: number,
  why: ActivityCancellationDetails,
): Promise<{ ended: 'resolved' | 'rejected'; error?: unknown; ms: number }> {
  const began = Date.now();
  const timer = setTimeout(
    () => env.cancel(why.workerShutdown ? 'WORKER_SHUTDOWN' : 'NOT_FOUND', why),
    afterMs,
  );
  try {
    await env.run(step);
    return { ended: 'resolved', ms: Date.now() - began };
  } catch (error) {
    return { ended: 'rejected', error, ms: Date.now() - began };
  } finally {
    clearTimeout(timer);
  }
}

/** The acceptance report of a submit activity, run in the current activity context. */
async function reportAccepted(token: string, workerShutdown?: AbortSignal): Promise<void> {
  const report = acceptanceReporter(token, workerShutdown);
  expect(report).toBeDefined();
  await report!({ keyId: 'k', requestId: 'req-1', status: 'queued', acceptedAt: 0 });
}

/** `client`, but the server refuses every heartbeat: it no longer knows the attempt. */
function refusingHeartbeats(client: Client, workflow?: object): Client {
  return Object.create(client, {
    activity: {
      value: { heartbeat: () => Promise.reject(new ActivityNotFoundError('activity not found')) },
    },
    ...(workflow ? { workflow: { value: workflow } } : {}),
  }) as Client;
}

describe('a submit activity cancelled by its worker shutting down', () => {
  it('claims no send the server refuses to record, and says nothing was sent', async () => {
    const workflowExecution = await unattendedWorkflow();
    // The mock's task token is no real attempt's: the server refuses the claim's heartbeat, as it
    // refuses one of an attempt it gave up on.
    const env = new MockActivityEnvironment({ workflowExecution }, { client });
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const outcome = await cancelledDuring(
      env,
      async () => {
        const claim = claimRecorder('token-1');
        expect(claim).toBeDefined();
        await claim!();
      },
      10_000,
      SHUTDOWN,
    );
    expect(outcome.ended).toBe('rejected');
    // The workflow makes the submit again: this attempt never sent it.
    expect(outcome.error).toMatchObject({
      type: 'submit_intent_not_recorded',
      nonRetryable: false,
    });
    // The SDK's heartbeats carry the claim from then on: none of them can erase it.
    expect(heartbeats).toContainEqual({ token: 'token-1' });
    // Refused at once: no workflow task stands between the claim and its answer.
    expect(outcome.ms).toBeLessThan(10_000);
  }, 30_000);

  it('stops retrying the heartbeat that carries an accepted job', async () => {
    const workflowExecution = await unattendedWorkflow();
    // The mock's task token is no real attempt's: every heartbeat to the server fails.
    const env = new MockActivityEnvironment({ workflowExecution }, { client });
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const outcome = await cancelledDuring(env, () => reportAccepted('token-2'), 1_000, SHUTDOWN);
    expect(outcome.ended).toBe('resolved');
    // The SDK's heartbeat carried the job before the report gave up.
    expect(heartbeats).toContainEqual(
      expect.objectContaining({ token: 'token-2', requestId: 'req-1' }),
    );
    expect(outcome.ms).toBeLessThan(15_000);
  }, 30_000);

  it('stops handing over an accepted job the server no longer waits for', async () => {
    const workflowExecution = await unattendedWorkflow();
    // The server has timed this attempt out: it refuses the heartbeat, and the job goes by the
    // submitAccepted update to the real workflow, which nobody answers.
    const env = new MockActivityEnvironment(
      { workflowExecution },
      { client: refusingHeartbeats(client) },
    );
    const outcome = await cancelledDuring(env, () => reportAccepted('token-3'), 2_000, SHUTDOWN);
    expect(outcome.ended).toBe('resolved');
    expect(outcome.ms).toBeLessThan(15_000);
  }, 30_000);
});

describe('a submit activity whose attempt the server gave up on', () => {
  /** A client whose heartbeats fail with `error` a moment after they are sent; updates recorded. */
  function goneAttemptClient(
    updates: unknown[],
    error: Error = new ActivityNotFoundError('activity not found'),
  ): Client {
    return Object.create(client, {
      activity: {
        value: {
          heartbeat: () => new Promise((_, reject) => setTimeout(() => reject(error), 50)),
        },
      },
      workflow: {
        value: {
          getHandle: () => ({
            executeUpdate: (_update: unknown, o: { args: unknown[] }) => {
              updates.push(o.args[0]);
              return Promise.resolve();
            },
          }),
        },
      },
    }) as Client;
  }
  const execution = { workflowExecution: { workflowId: 'w', runId: 'r' } };

  it('still hands its accepted job over by update after the SDK cancels it as not found', async () => {
    const updates: unknown[] = [];
    const env = new MockActivityEnvironment(execution, { client: goneAttemptClient(updates) });
    // Cancelled before the server's refusal of the heartbeat comes back.
    const outcome = await cancelledDuring(
      env,
      () => reportAccepted('token-4'),
      0,
      new ActivityCancellationDetails({ notFound: true }),
    );
    expect(outcome.ended).toBe('resolved');
    expect(updates).toEqual([
      { token: 'token-4', keyId: 'k', requestId: 'req-1', status: 'queued', acceptedAt: 0 },
    ]);
  });

  it('hands nothing over when the call itself was cancelled: nobody waits for it', async () => {
    const updates: unknown[] = [];
    // The heartbeat in flight is cancelled with the activity, as the SDK does.
    const env = new MockActivityEnvironment(execution, {
      client: goneAttemptClient(updates, new Error('Cancelled on client')),
    });
    const outcome = await cancelledDuring(
      env,
      () => reportAccepted('token-5'),
      0,
      new ActivityCancellationDetails({ cancelRequested: true }),
    );
    expect(outcome.ended).toBe('resolved');
    expect(updates).toEqual([]);
  });

  it('stops waiting for its update when the worker shuts down afterwards', async () => {
    // The SDK cancels an activity once: after "not found", a shutdown comes only from the worker.
    const workflowExecution = await unattendedWorkflow();
    const env = new MockActivityEnvironment(
      { workflowExecution },
      { client: refusingHeartbeats(client) },
    );
    const workerShutdown = new AbortController();
    const shutdownTimer = setTimeout(() => workerShutdown.abort(), 2_000);
    try {
      const outcome = await cancelledDuring(
        env,
        () => reportAccepted('token-6', workerShutdown.signal),
        0,
        new ActivityCancellationDetails({ notFound: true }),
      );
      expect(outcome.ended).toBe('resolved');
      expect(outcome.ms).toBeGreaterThanOrEqual(1_900);
      expect(outcome.ms).toBeLessThan(15_000);
    } finally {
      clearTimeout(shutdownTimer);
    }
  }, 30_000);
});
