// Two worker processes on one key share its throttle: together they complete many calls and the
// emulator, enforcing the same (time-scaled) limits, answers no 429.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { readThrottleStatus } from '../../src/client/throttle-operator.js';
import { connectClient, uniqueTaskQueue } from '../harness/temporal.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import { emails, pcdsClient, requestsSeen, startLimitedEmulator, throttledEnv } from './env.js';

const LIMITS = { perMinute: 12, perHour: 120 };
let emulator: RunningEmulator;

beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS);
});
afterAll(async () => {
  await emulator?.stop();
});

/** `node dist/worker.js` on a task queue, throttle on; resolves when it polls. */
/** A worker process on a task queue, throttle on. */
function spawnWorker(taskQueue: string, keyId: string): Promise<ChildProcess> {
  return spawnWorkerProcess(taskQueue, throttledEnv(emulator, LIMITS, keyId));
}

it('two worker processes on one key complete many calls without a single 429', async () => {
  const taskQueue = uniqueTaskQueue('throttle-2w');
  const keyId = `key-${taskQueue}`;
  const workers = await Promise.all([spawnWorker(taskQueue, keyId), spawnWorker(taskQueue, keyId)]);
  const { client, close } = await pcdsClient(taskQueue);
  try {
    const handles = await Promise.all(
      emails(24).map((email) => client.startCall('person_enrichment', { email }, { keyId })),
    );
    const outcomes = await Promise.all(handles.map((h) => h.result()));
    expect(outcomes.map((o) => o.outcome).every((o) => o === 'found' || o === 'empty')).toBe(true);
    const seen = requestsSeen(emulator, emulator.devKey.id);
    // Far more requests than one window allows: the limits were binding, not idle.
    expect(seen).toBeGreaterThan(3 * LIMITS.perMinute);
    expect(emulator.stats(emulator.devKey.id).rateLimited).toBe(0);
    const { client: temporal, connection } = await connectClient();
    try {
      const [status] = await readThrottleStatus(temporal, [keyId]);
      expect(status.snapshot.recent429s).toEqual([]);
      expect(status.snapshot.hour.used).toBeGreaterThanOrEqual(seen);
    } finally {
      await connection.close();
    }
  } finally {
    await close();
    for (const w of workers) {
      w.kill('SIGTERM');
      await once(w, 'exit');
    }
  }
}, 150_000);
