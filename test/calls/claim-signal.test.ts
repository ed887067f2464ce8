// A submit that waited for its permit with the SDK's heartbeats signals its claim to the workflow
// before it sends (src/activities/submit-intent.ts): a heartbeat of the SDK sent before the claim
// may land after it, and the server keeps only the last. Here the attempt signals its claim, a
// heartbeat without it lands last, and the attempt is lost (no answer, no more heartbeats): the
// workflow must not submit again. On Temporal's time-skipping server, so the wait for a hand-over
// passes at once (the attempt's heartbeat timeout, 30 s, is not skipped); the workflow is the
// project's own.
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { submitClaimedSignal } from '../../src/calls/signals.js';
import type { SubmitCallInput } from '../../src/activities/calls.js';
import { endpointCall } from '../../src/workflows/endpoint-call.js';
import {
  DEFAULT_WORKFLOWS_PATH,
  testDataConverter,
  uniqueTaskQueue,
  workflowBundle,
} from '../harness/temporal.js';
import { startTimeSkipping } from '../harness/time-skipping.js';

let testEnv: TestWorkflowEnvironment;
beforeAll(async () => {
  testEnv = await startTimeSkipping();
}, 120_000);
afterAll(async () => {
  await testEnv?.teardown();
});

it('an attempt whose claim was signalled is never sent again, though a later heartbeat erased the claim', async () => {
  const attempts: string[] = [];
  let lost!: () => void;
  const attemptLost = new Promise<void>((resolve) => (lost = resolve));
  let again!: (outcome: { ok: false; err: unknown }) => void;
  const madeAgain = new Promise<{ ok: false; err: unknown }>((resolve) => (again = resolve));
  const activities = {
    async submitCall(input: SubmitCallInput): Promise<never> {
      const ctx = Context.current();
      attempts.push(input.intentToken ?? '');
      if (attempts.length > 1) again({ ok: false, err: new Error('the submit was made again') });
      const { workflowId, runId } = ctx.info.workflowExecution!;
      // The claim, acknowledged and signalled, as a submit that waited for its permit makes it.
      await ctx.client.activity.heartbeat(ctx.info.taskToken, { token: input.intentToken });
      await ctx.client.workflow
        .getHandle(workflowId, runId)
        .signal(submitClaimedSignal, { token: input.intentToken! });
      // An older heartbeat of the SDK, on its way, lands last: the claim is gone from it.
      await ctx.client.activity.heartbeat(ctx.info.taskToken, undefined);
      // Then the POST goes out and the worker is lost: no answer, no heartbeat.
      lost();
      await new Promise((resolve) => ctx.cancellationSignal.addEventListener('abort', resolve));
      throw new Error('the worker stopped');
    },
  };
  const taskQueue = uniqueTaskQueue('claim-signal');
  const worker = await Worker.create({
    connection: testEnv.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(DEFAULT_WORKFLOWS_PATH),
    activities,
    dataConverter: testDataConverter(),
  });
  const outcome = await worker.runUntil(async () => {
    const handle = await testEnv.client.workflow.start(endpointCall, {
      taskQueue,
      workflowId: `claim-signal-${taskQueue}`,
      args: [{ endpoint: 'person_enrichment', params: { email: 'a@b.example' } }],
    });
    // The test environment's client skips time while it waits for a result: only once the
    // attempt is lost, so its heartbeat timeout and the wait for a hand-over pass at once.
    await attemptLost;
    return await Promise.race([
      handle.result().then(
        (r) => ({ ok: true as const, r }),
        (err: unknown) => ({ ok: false as const, err }),
      ),
      madeAgain,
    ]);
  });
  // One attempt: its send may have reached the service, so the call ends unknown, never resent.
  expect(attempts).toHaveLength(1);
  expect(outcome.ok).toBe(false);
  expect((outcome as { err: { cause?: { type?: string } } }).err.cause?.type).toBe(
    'submit_outcome_unknown',
  );
}, 120_000);
