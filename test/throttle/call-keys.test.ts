// Single calls that name no key share the pool: each goes to the key this worker sent fewest calls on
// in its hour window, not always to the first key (whose windows, reserve included, a steady
// stream of calls would spend alone while the other keys sit idle). A key refused for itself
// (no credits) sends the call on to the next key, nothing accepted twice, and is passed over
// afterwards.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { batchRequester, interactiveRequester } from '../../src/contract/tenant.js';
import { permitGateFromConfig } from '../../src/worker/permit-gate.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import {
  connectClient,
  testEncryptionEnv,
  uniqueTaskQueue,
  withWorker,
} from '../harness/temporal.js';
import { emails, pcdsClient, TIME_SCALE, withThrottledWorker } from './env.js';

const LIMITS = { perMinute: 100, perHour: 1_000 };
const KEYS = ['one', 'two', 'three'].map((name) => ({
  id: `call-keys-${name}`,
  key: `pcds_call_keys_${name}`,
  secret: `pcds_call_keys_secret_${name}`,
}));
/** The third key has no credits: the service answers its submits 402. */
const BROKE = KEYS[2].id;

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startEmulator({
    port: 0,
    timeScale: TIME_SCALE,
    limits: { enabled: true, ...LIMITS },
    keys: KEYS.map((k) => ({ ...k, credits: k.id === BROKE ? 0 : null, ...LIMITS })),
  });
});
afterAll(async () => {
  await emulator?.stop();
});

it('calls that name no key spread over the pool, and leave a key refused for itself', async () => {
  const taskQueue = uniqueTaskQueue('call-keys');
  // Ids of the worker's own, so its throttle workflows are this test's alone.
  const ids = KEYS.map((k) => ({ ...k, id: `${k.id}-${taskQueue}` }));
  const config = loadConfig({
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEYS: JSON.stringify(ids.map((k) => ({ ...k, ...LIMITS }))),
    PCDS_THROTTLE: 'on',
    PCDS_THROTTLE_TIME_SCALE: String(TIME_SCALE),
    ...testEncryptionEnv(),
  });
  await withThrottledWorker(config, taskQueue, async () => {
    const { client, close } = await pcdsClient(taskQueue);
    try {
      // One after the other, as a person's calls come.
      const outcomes: string[] = [];
      for (const email of emails(8)) {
        const handle = await client.startCall('person_enrichment', { email });
        outcomes.push((await handle.result()).outcome);
      }
      expect(outcomes.every((o) => o === 'found' || o === 'empty')).toBe(true);
      const [one, two, broke] = KEYS.map((k) => emulator.stats(k.id));
      // Both keys with credits took calls, in near equal parts.
      expect(one.jobsSubmitted).toBeGreaterThanOrEqual(3);
      expect(two.jobsSubmitted).toBeGreaterThanOrEqual(3);
      expect(one.jobsSubmitted + two.jobsSubmitted).toBe(8);
      // The key without credits refused once; its breaker kept every later call away.
      expect(broke.jobsSubmitted).toBe(0);
      const posts = Object.entries(broke.requests).filter(([route]) => route.startsWith('POST '));
      expect(posts.reduce((n, [, count]) => n + count, 0)).toBe(1);
      expect(one.duplicateSubmits + two.duplicateSubmits).toBe(0);
    } finally {
      await close();
    }
  });
}, 120_000);

it('counts calls apart from batch work: a key busy with batches still takes its part of the calls', async () => {
  const taskQueue = uniqueTaskQueue('call-keys-batch');
  const [one, two] = KEYS.slice(0, 2).map((k) => ({ ...k, id: `${k.id}-${taskQueue}` }));
  const config = loadConfig({
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEYS: JSON.stringify([one, two].map((k) => ({ ...k, ...LIMITS }))),
    PCDS_THROTTLE: 'on',
    PCDS_THROTTLE_TIME_SCALE: String(TIME_SCALE),
    ...testEncryptionEnv(),
  });
  const { client, connection } = await connectClient();
  try {
    const gate = permitGateFromConfig(config, client.connection, taskQueue);
    // The key throttles' workflows run on this worker.
    await withWorker({ taskQueue, activities: {} }, async () => {
      // A batch sends on the first key only.
      for (let i = 0; i < 5; i++)
        await gate.acquire(one.id, 'poll', { requester: batchRequester('busy') });
      // No call went anywhere yet: the first key, as on a tie, however busy the batch keeps it.
      expect(gate.keyForCall!([one.id, two.id])).toBe(one.id);
      await gate.acquire(one.id, 'submit', { requester: interactiveRequester() });
      expect(gate.keyForCall!([one.id, two.id])).toBe(two.id);
      await gate.acquire(two.id, 'submit', { requester: interactiveRequester() });
      expect(gate.keyForCall!([one.id, two.id])).toBe(one.id);
    });
  } finally {
    await connection.close();
  }
}, 60_000);
