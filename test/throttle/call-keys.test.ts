// Single calls that name no key share the pool: each goes to the key this worker sent least on
// in its hour window, not always to the first key (whose windows, reserve included, a steady
// stream of calls would spend alone while the other keys sit idle). A key refused for itself
// (no credits) sends the call on to the next key, nothing accepted twice, and is passed over
// afterwards.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { testEncryptionEnv, uniqueTaskQueue } from '../harness/temporal.js';
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
