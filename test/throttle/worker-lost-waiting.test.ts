// A worker killed while submits wait for their permits: those submits sent nothing, so once the
// server times them out they are made again on a new worker. Every call ends with its real
// outcome (none submit_outcome_unknown) and the service saw exactly one job per call.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { uniqueTaskQueue } from '../harness/temporal.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import { emails, pcdsClient, requestsSeen, startLimitedEmulator, throttledEnv } from './env.js';

// Six requests per 3 s "minute": the first six submits go at once, the others wait their turn.
const LIMITS = { perMinute: 6, perHour: 400 };
const CALLS = 12;
let emulator: RunningEmulator;

beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS);
});
afterAll(async () => {
  await emulator?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('makes again the submits a killed worker held waiting for permits, each sent once', async () => {
  const taskQueue = uniqueTaskQueue('lost-permit');
  const keyId = `key-${taskQueue}`;
  const devKey = emulator.devKey.id;
  const env = throttledEnv(emulator, LIMITS, keyId);
  const first = await spawnWorkerProcess(taskQueue, env);
  let second: ChildProcess | undefined;
  const { client, close } = await pcdsClient(taskQueue);
  try {
    const handles = await Promise.all(
      emails(CALLS).map((email) => client.startCall('person_enrichment', { email }, { keyId })),
    );
    // The first window's allowance is spent; the rest of the submits wait for the next window.
    await expect
      .poll(() => requestsSeen(emulator, devKey), { timeout: 30_000, interval: 20 })
      .toBeGreaterThanOrEqual(LIMITS.perMinute);
    // Let the replies of what was sent arrive, well before the next window opens.
    await sleep(300);
    const sentAtKill = emulator.stats(devKey).jobsSubmitted;
    first.kill('SIGKILL');
    await once(first, 'exit');
    expect(sentAtKill).toBeLessThan(CALLS);

    second = await spawnWorkerProcess(taskQueue, env);
    const outcomes = await Promise.allSettled(handles.map((h) => h.result()));
    const failures = outcomes.flatMap((o) =>
      o.status === 'rejected' ? [String((o.reason as Error).message)] : [],
    );
    expect(failures).toEqual([]);
    for (const o of outcomes)
      if (o.status === 'fulfilled') expect(['found', 'empty']).toContain(o.value.outcome);
    // One job per call: the lost submits were made again, none twice.
    expect(emulator.stats(devKey).jobsSubmitted).toBe(CALLS);
    expect(emulator.stats(devKey).duplicateSubmits).toBe(0);
  } finally {
    await close();
    first.kill('SIGKILL');
    if (second) {
      second.kill('SIGTERM');
      await once(second, 'exit');
    }
  }
}, 150_000);
