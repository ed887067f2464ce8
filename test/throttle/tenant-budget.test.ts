// A tenant's budget on the real server, through the typed client and a worker with the shared
// throttle: a tenant that spent its requests an hour has its next call refused with
// tenant_budget (nothing sent, a message that names its own budget and nothing of another's),
// while another tenant's call on the same key goes through at once; once the hour window has slid
// past its requests, it may call again. Every duration is scaled by one factor (the service's
// windows and job latency, the throttle's windows, polls and waits).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { uniqueTaskQueue } from '../harness/temporal.js';
import {
  emails,
  pcdsClient,
  startLimitedEmulator,
  throttledEnv,
  withThrottledWorker,
} from './env.js';

/** A "minute" of 0.6 s, an "hour" of 36 s, jobs of about 0.2 s. */
const SCALE = 100;
const HOUR_MS = 3_600_000 / SCALE;
const LIMITS = { perMinute: 30, perHour: 300 };
/** Requests an hour across the pool (one key here): a call is a submit and a poll or two. */
const BUDGET = 5;
const WAITS = { pollIntervalMs: 1_000 / SCALE, maxWaitMs: (30 * 60_000) / SCALE };

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

it("refuses a tenant's call past its budget with tenant_budget, sending nothing, while another tenant's goes on; after the hour it calls again", async () => {
  const taskQueue = uniqueTaskQueue('tenant-budget');
  const keyId = `key-${taskQueue}`;
  const config = loadConfig({
    ...throttledEnv(emulator, LIMITS, keyId, SCALE),
    PCDS_TENANTS: JSON.stringify({ heavy: { requestsPerHour: BUDGET } }),
  });
  const people = emails(13);
  await withThrottledWorker(config, taskQueue, async () => {
    const { client, close } = await pcdsClient(taskQueue, WAITS);
    try {
      const heavy = client.withTenant('heavy');
      const light = client.withTenant('light');
      const lightCall = (email: string) =>
        light.startCall('person_enrichment', { email }, { keyId }).then((call) => call.result());
      // The other tenant is known to the key's throttle before the first one runs out.
      expect((await lightCall(people[10])).outcome).toBe('found');
      let done = 0;
      let refusal: (Error & { code?: string }) | undefined;
      for (const email of people.slice(0, 10)) {
        const outcome = await heavy
          .startCall('person_enrichment', { email }, { keyId })
          .then((call) => call.result())
          .catch((err: Error & { code?: string }) => err);
        if (outcome instanceof Error) {
          refusal = outcome;
          break;
        }
        expect(outcome.outcome).toBe('found');
        done += 1;
      }
      // A call is a submit and at least one poll: the budget of five allows three calls at most.
      expect(done).toBeGreaterThanOrEqual(1);
      expect(done).toBeLessThanOrEqual(3);
      expect(refusal?.code).toBe('tenant_budget');
      expect(refusal?.message).toMatch(
        /tenant heavy spent its budget of 5 requests an hour across the key pool; nothing was sent/,
      );
      expect(refusal?.message).not.toMatch(/light|@/);
      const submittedBefore = emulator.stats(emulator.devKey.id).jobsSubmitted;

      // The other tenant on the same key goes on: not held for the spent budget's hour.
      const started = Date.now();
      expect((await lightCall(people[11])).outcome).toBe('found');
      expect(Date.now() - started).toBeLessThan(HOUR_MS / 4);
      const stats = emulator.stats(emulator.devKey.id);
      // The refused call sent no submit; the other tenant's did.
      expect(stats.jobsSubmitted).toBe(submittedBefore + 1);
      expect(submittedBefore).toBe(done + 1);

      // Once its requests have left the hour window, the first tenant's budget allows it again.
      await new Promise((r) => setTimeout(r, HOUR_MS + 2_000));
      const heavyAgain = await heavy
        .startCall('person_enrichment', { email: people[12] }, { keyId })
        .then((call) => call.result());
      expect(heavyAgain.outcome).toBe('found');
      expect(emulator.stats(emulator.devKey.id).rateLimited).toBe(0);
    } finally {
      await close();
    }
  });
}, 120_000);
