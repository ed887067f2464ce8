// A 429 closes the key for every caller until its Retry-After: while calls keep the key busy, a
// forced 429 burst on the emulator makes the throttle send nothing more until the wait is over,
// then the calls finish.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import { permitGateFromConfig } from '../../src/worker/permit-gate.js';
import { readThrottleStatus } from '../../src/client/throttle-operator.js';
import type { RateLimitEvent } from '../../src/throttle/windows.js';
import { connectClient, uniqueTaskQueue, withWorker } from '../harness/temporal.js';
import { emails, pcdsClient, requestsSeen, startLimitedEmulator, throttledConfig } from './env.js';

const LIMITS = { perMinute: 20, perHour: 400 };
/**
 * Ten times faster (a minute of 6 s), every duration alike: at 20 a minute a send every 300 ms,
 * so a worker's send a few hundred ms late on a busy machine stays within the key's window.
 */
const TIME_SCALE = 10;
const MINUTE_MS = 60_000 / TIME_SCALE;
let emulator: RunningEmulator;

beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, TIME_SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

it('closes the key for every caller until Retry-After has passed, then the calls complete', async () => {
  const taskQueue = uniqueTaskQueue('throttle-429');
  const keyId = `key-${taskQueue}`;
  const config = throttledConfig(emulator, LIMITS, keyId, TIME_SCALE);
  const clients = createServiceClients(config);
  const devKey = emulator.devKey.id;
  const { client: temporal, connection } = await connectClient();
  try {
    const permits = permitGateFromConfig(config, temporal.connection, taskQueue);
    const activities = createActivities({ config, clients, permits });
    await withWorker({ taskQueue, activities }, async () => {
      const { client, close } = await pcdsClient(taskQueue);
      try {
        const handles = await Promise.all(
          emails(30).map((email) => client.startCall('person_enrichment', { email }, { keyId })),
        );
        await expect
          .poll(() => requestsSeen(emulator, devKey), { timeout: 20_000, interval: 50 })
          .toBeGreaterThanOrEqual(10);

        // Every keyed request gets 429 for a while; Retry-After (whole seconds) says 2 s. The
        // throttle may send a window's allowance at once and then wait for the window to move on,
        // so the burst starts with the next request rather than now. Requests sent together all
        // meet it: one event, which must not collapse the key's limits.
        emulator.setFaults({
          rateLimitBurst: { durationMs: 1_200 * TIME_SCALE, fromFirstRequest: true },
        });
        let event: RateLimitEvent | undefined;
        await expect
          .poll(
            async () => {
              const [status] = await readThrottleStatus(temporal, [keyId]);
              event = status.snapshot.recent429s[0];
              return event;
            },
            { timeout: 10_000, interval: 20 },
          )
          .toBeDefined();
        emulator.setFaults({});
        const closedUntil = event!.at + (event!.retryAfterMs ?? 0);
        expect(event!.retryAfterMs).toBe(2_000);

        // Requests granted before the 429 was recorded may still land within their lead (twice
        // the permit round trip); after that, nothing until the wait is over.
        await sleep(event!.at + 500 - Date.now());
        const atStart = requestsSeen(emulator, devKey);
        await sleep(closedUntil - 60 - Date.now());
        expect(requestsSeen(emulator, devKey)).toBe(atStart);

        // Once the throttle has eased back in (one window at half rate), no further 429.
        await sleep(closedUntil + MINUTE_MS + 100 - Date.now());
        const rateLimitedEased = emulator.stats(devKey).rateLimited;

        const outcomes = await Promise.all(handles.map((h) => h.result()));
        expect(outcomes.every((o) => o.outcome === 'found' || o.outcome === 'empty')).toBe(true);
        expect(requestsSeen(emulator, devKey)).toBeGreaterThan(atStart);
        expect(emulator.stats(devKey).rateLimited).toBe(rateLimitedEased);
        const [status] = await readThrottleStatus(temporal, [keyId]);
        expect(status.snapshot.closedUntil).toBeUndefined();
      } finally {
        await close();
      }
    });
  } finally {
    await clients.close();
    await connection.close();
  }
}, 150_000);
