// Time spent waiting on our own throttle never fails a call: with the hour's budget spent, calls
// wait (throttled) for the hour window to move on, and each still ends found, submitted once.
// Every duration is scaled by one factor: the service's windows and job latency (the emulator's
// time scale), the throttle's windows, the calls' maximum wait and poll interval. Calls need more
// requests than one hour allows, so the run crosses the hourly window, as every real batch does.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import { permitGateFromConfig } from '../../src/worker/permit-gate.js';
import { connectClient, uniqueTaskQueue, withWorker } from '../harness/temporal.js';
import { emails, pcdsClient, requestsSeen, startLimitedEmulator, throttledConfig } from './env.js';

/**
 * A "minute" of 0.6 s, an "hour" of 36 s, jobs of 0.2 s: the run waits out one hour, so its length
 * is the hour's. The throttle's margin (200 ms at least) is real time, not scaled: it absorbs the
 * jitter between a permit and the request's arrival, which no scale shrinks.
 */
/** 100 times faster than the service. */
const SCALE = 100;
const LIMITS = { perMinute: 10, perHour: 30 };
const CALLS = 20;
/** The defaults (1 s polls, 30 minutes' maximum wait), scaled like everything else. */
const DEFAULTS = { pollIntervalMs: 1_000 / SCALE, maxWaitMs: (30 * 60_000) / SCALE };
const HOUR_MS = 3_600_000 / SCALE;

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

it('calls that wait past their maximum wait for our own permits still end found, each submitted once', async () => {
  const taskQueue = uniqueTaskQueue('own-waits');
  const keyId = `key-${taskQueue}`;
  const config = throttledConfig(emulator, LIMITS, keyId, SCALE);
  const clients = createServiceClients(config);
  const devKey = emulator.devKey.id;
  const { client: temporal, connection } = await connectClient();
  try {
    const permits = permitGateFromConfig(config, temporal.connection, taskQueue);
    const activities = createActivities({ config, clients, permits });
    await withWorker({ taskQueue, activities }, async () => {
      const { client, close } = await pcdsClient(taskQueue, DEFAULTS);
      try {
        const started = Date.now();
        const handles = await Promise.all(
          emails(CALLS).map((email) => client.startCall('person_enrichment', { email }, { keyId })),
        );
        const outcomes = await Promise.all(handles.map((h) => h.result()));
        const seconds = (Date.now() - started) / 1000;
        expect(outcomes.map((o) => o.outcome)).toEqual(Array(CALLS).fill('found'));
        const stats = emulator.stats(devKey);
        // More requests than an hour allows: the calls waited for the hour window to move on,
        // longer than their maximum wait, and none failed for it.
        expect(requestsSeen(emulator, devKey)).toBeGreaterThan(LIMITS.perHour);
        expect(seconds * 1000).toBeGreaterThan(DEFAULTS.maxWaitMs);
        expect(seconds * 1000).toBeGreaterThan(HOUR_MS * 0.9);
        // Nothing charged twice, nothing submitted twice.
        expect(stats.jobsSubmitted).toBe(CALLS);
        expect(stats.duplicateSubmits).toBe(0);
        expect(stats.creditsCharged).toBeGreaterThan(0);
      } finally {
        await close();
      }
    });
  } finally {
    await clients.close();
    await connection.close();
  }
}, 240_000);
