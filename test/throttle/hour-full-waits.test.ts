// A batch on a key whose hour window other work has already spent: `pcds batch status` says why
// it waits (the key's hour window is full, and from when requests go again) and its ETA counts
// the spent window instead of assuming the batch alone on the key. The throttle, the worker, the
// emulator and the CLI are real; every duration is scaled by one factor (an "hour" of 180 s,
// longer than the test takes on a loaded machine).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { backgroundRequester } from '../../src/contract/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { permitGateFromConfig } from '../../src/worker/permit-gate.js';
import {
  connectClient,
  installQuietRuntime,
  testTemporalEnv,
  uniqueTaskQueue,
} from '../harness/temporal.js';
import { runCli, startProjectWorker, tempDir } from '../cli/cli-env.js';
import { emails, startLimitedEmulator, throttledEnv } from './env.js';

/** 20 times faster than the service: an "hour" of 180 s. */
const SCALE = 20;
const LIMITS = { perMinute: 10, perHour: 20 };
const HOUR_S = 3_600 / SCALE;

let emulator: RunningEmulator;
beforeAll(async () => {
  installQuietRuntime();
  emulator = await startLimitedEmulator(LIMITS, SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

it(
  "a batch whose key's hour window is full says so, until when, and its ETA counts the window",
  { timeout: 180_000 },
  async () => {
    const taskQueue = uniqueTaskQueue('hour-full');
    const keyId = `key-${taskQueue}`;
    const dir = tempDir('hour-full');
    const env: Record<string, string> = {
      ...throttledEnv(emulator, LIMITS, keyId, SCALE),
      ...testTemporalEnv(),
      PCDS_TASK_QUEUE: taskQueue,
      PCDS_POLL_INTERVAL_MS: '100',
      PCDS_STORE_URL: `sqlite:${join(dir, 'store.sqlite')}`,
    };
    const config = loadConfig(env);
    const { client, connection } = await connectClient();
    const worker = await startProjectWorker(env, taskQueue);
    try {
      // Other work spends the key's hour: every permit of it, through the shared throttle.
      const permits = permitGateFromConfig(config, client.connection, taskQueue);
      for (let i = 0; i < LIMITS.perHour; i++)
        await permits.acquire(keyId, 'usage', { requester: backgroundRequester() });
      const spentAt = Date.now();

      const input = join(dir, 'rows.csv');
      writeFileSync(input, `email\n${emails(5).join('\n')}\n`);
      const batchId = `hour-full-${taskQueue}`;
      const start = await runCli(
        ['batch', 'start', '--id', batchId, '-i', input, '-o', join(dir, 'out.jsonl')].concat([
          '--detach',
          '--no-estimate',
        ]),
        env,
      );
      expect(start.code).toBe(0);
      // The plan counted what the key already sent.
      expect(start.stderr).toContain(`counted from what the keys already sent: ${keyId} 20/20`);

      const status = await runCli(['batch', 'status', batchId, '--json'], env);
      expect(status.code).toBe(0);
      const progress = JSON.parse(status.stdout) as {
        etaSeconds?: number;
        done: number;
        waiting?: { kind: string; keyId?: string; until?: number; message: string }[];
      };
      expect(progress.done).toBe(0);
      const [why] = progress.waiting ?? [];
      expect(why).toMatchObject({ kind: 'throttle', keyId });
      expect(why.message).toContain(`key ${keyId}'s hour window is full (20/20`);
      // It frees as the hour slides: not before the spent requests leave it.
      expect(why.until).toBeGreaterThan(spentAt + HOUR_S * 1000 * 0.5);
      // The ETA waits for the window: most of an "hour", not the second five rows take alone.
      const hourLeft = (spentAt + HOUR_S * 1000 - Date.now()) / 1000;
      expect(progress.etaSeconds).toBeGreaterThanOrEqual(Math.floor(hourLeft * 0.5));

      const text = await runCli(['batch', 'status', batchId], env);
      expect(text.stdout).toContain(`  waiting: key ${keyId}'s hour window is full (20/20`);
      await runCli(['batch', 'cancel', batchId], env);
    } finally {
      await worker.stop();
      await connection.close();
    }
  },
);
