// Waits measured in workflow time, at their real, unscaled defaults, on Temporal's time-skipping
// test server: the workflow's timers fire as soon as nothing else runs, while every request is a
// real one to the emulator over HTTP. Minutes of workflow time pass in about a second.
//
// (A call's maximum wait is not among them: the deadline rule compares the worker's clock at a
// poll's send with its clock at acceptance, and the worker's clock does not skip.)
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { tsToMs } from '@temporalio/common/lib/time.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { createPcdsClient, type PcdsClient } from '../../src/client.js';
import { DEFAULT_WEBHOOK_FALLBACK_POLL_MS } from '../../src/calls/policy.js';
import { sampleRows } from '../../src/emulator/index.js';
import { unthrottled } from '../../src/throttle/permits.js';
import { callbackUrlsFor } from '../../src/webhooks/callback-urls.js';
import {
  DEFAULT_WORKFLOWS_PATH,
  testDataConverter,
  uniqueTaskQueue,
  workflowBundle,
} from '../harness/temporal.js';
import { startTimeSkipping } from '../harness/time-skipping.js';
import { startWebhookEnv, type WebhookEnv } from '../webhooks/webhook-env.js';

const ENRICH = 'POST /person/enrichment';
const POLL = 'GET /person/enrichment';
const [row] = sampleRows({ rows: 1, unknownShare: 0 });

let env: WebhookEnv;
let testEnv: TestWorkflowEnvironment;
beforeAll(async () => {
  // Real time: jobs are done as soon as they are accepted.
  env = await startWebhookEnv({ timeScale: 1, latency: { queuedMs: 0, processingMs: 0 } });
  testEnv = await startTimeSkipping();
}, 120_000);
afterAll(async () => {
  await testEnv?.teardown();
  await env?.stop();
});

/**
 * Runs `fn` with a worker on the time-skipping server (its submits carry callback URLs) and a
 * PcdsClient with the project's defaults.
 */
async function withSkippingWorker<T>(fn: (client: PcdsClient) => Promise<T>): Promise<T> {
  const taskQueue = uniqueTaskQueue('skip');
  const worker = await Worker.create({
    connection: testEnv.nativeConnection,
    taskQueue,
    workflowBundle: await workflowBundle(DEFAULT_WORKFLOWS_PATH),
    activities: createActivities({
      config: env.config,
      clients: env.clients,
      permits: unthrottled,
      callbackUrlFor: callbackUrlsFor(env.settings),
    }),
    dataConverter: testDataConverter(),
    debugMode: true,
  });
  const client = await createPcdsClient({
    connection: testEnv.connection,
    taskQueue,
    dataConverter: testDataConverter(),
    defaults: { cache: false },
  });
  try {
    return await worker.runUntil(fn(client));
  } finally {
    await client.close();
  }
}

/** The test server skips time only while something awaits with skipping unlocked, as here. */
async function skippingTime<T>(fn: () => Promise<T>): Promise<T> {
  const testService = testEnv.connection.testService!;
  await testService.unlockTimeSkipping({});
  try {
    return await fn();
  } finally {
    await testService.lockTimeSkipping({});
  }
}

describe('on the time-skipping server, at the default waits', () => {
  it('a webhook call whose delivery is lost is read by one poll, a full fallback interval after its submit', async () => {
    env.emulator.setFaults({ webhookDropShare: 1 });
    try {
      await withSkippingWorker(async (client) => {
        const from = Date.now();
        const handle = await client.startCall(
          'person_enrichment',
          { email: row.email },
          { webhook: true },
        );
        const out = await skippingTime(() => handle.result());
        expect(out.outcome).toBe('found');
        // Sent once; the job was done at once, and its one poll waited the whole fallback
        // interval (60 s of workflow time) for a delivery that never came.
        const sent = (route: string) => env.proxy.seen(route).filter((s) => s.at >= from).length;
        expect(sent(ENRICH)).toBe(1);
        expect(sent(POLL)).toBe(1);
        const events = (await handle.workflow.fetchHistory()).events ?? [];
        const timers = events.filter((e) => e.timerStartedEventAttributes);
        const fired = events.filter((e) => e.timerFiredEventAttributes);
        expect(timers).toHaveLength(1);
        expect(fired).toHaveLength(1);
        const timeout = timers[0].timerStartedEventAttributes!.startToFireTimeout!;
        expect(Number(timeout.seconds)).toBe(DEFAULT_WEBHOOK_FALLBACK_POLL_MS / 1000);
        // Fired when its 60 s of workflow time had passed, in well under that of wall time.
        const at = (e: (typeof events)[number]) => tsToMs(e.eventTime);
        expect(at(fired[0]) - at(timers[0])).toBeGreaterThanOrEqual(
          DEFAULT_WEBHOOK_FALLBACK_POLL_MS,
        );
        expect(Date.now() - from).toBeLessThan(DEFAULT_WEBHOOK_FALLBACK_POLL_MS);
      });
    } finally {
      env.emulator.setFaults({});
    }
  }, 120_000);
});
