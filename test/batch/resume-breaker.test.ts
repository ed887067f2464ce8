// Resuming a batch an operator paused says nothing about the account's credits: a key's credit
// breaker opened meanwhile (a 402 seen by another call on the key) stays open, the batch sends
// nothing and pauses for credits; only the resume after that pause for credits (or
// `pcds throttle resume`) closes the breaker, and the batch then finishes.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pauseBatchSignal, resumeBatchSignal } from '../../src/batch/messages.js';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import { createWorkflowPermitGate } from '../../src/worker/permit-gate.js';
import { readThrottleStatus } from '../../src/client/throttle-operator.js';
import { connectClient, uniqueTaskQueue, withWorker } from '../harness/temporal.js';
import {
  activitiesFor,
  configFor,
  fastEmulator,
  readOutput,
  startCsvBatch,
  tempDir,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

const KEY = { id: 'breaker', key: 'pcds_breaker_key', secret: 'pcds_breaker_secret' };
const rows = sampleRows({ rows: 8, withName: true });
const dir = tempDir('resume-breaker');
const input = writeCsv(dir, 'rows.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await fastEmulator({ keys: [{ ...KEY, credits: 1_000 }] });
});
afterAll(async () => {
  await emu?.stop();
});

it("an operator's resume leaves an open credit breaker open; the resume after the credits pause closes it", async () => {
  const taskQueue = uniqueTaskQueue('resume-breaker');
  const keyId = `${KEY.id}-${taskQueue}`;
  const temporal = await connectClient();
  const permits = createWorkflowPermitGate({
    client: temporal.client,
    taskQueue,
    keys: [{ id: keyId }],
    defaultLimits: { perMinute: 10_000, perHour: 100_000 },
  });
  const worker = activitiesFor(
    configFor(emu, {
      PCDS_API_KEY: '',
      PCDS_API_SECRET: '',
      PCDS_API_KEYS: JSON.stringify([{ ...KEY, id: keyId }]),
    }),
    permits,
  );
  const breakerOpen = async () =>
    (await readThrottleStatus(temporal.client, [keyId]))[0].snapshot.breaker.open;
  try {
    await withWorker({ activities: worker.activities, taskQueue }, async ({ client }) => {
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'breaker', input, {
        window: 2,
        pollIntervalMs: 50,
      });
      await waitForProgress(client, batchId, (p) => p.done >= 1);
      await handle.signal(pauseBatchSignal, { reason: 'maintenance' });
      const paused = await waitForProgress(
        client,
        batchId,
        (p) => p.state === 'paused' && p.inFlight === 0,
      );
      expect(paused.paused?.code).toBe('paused_by_operator');
      expect(paused.done).toBeLessThan(rows.length);

      // Meanwhile another call on the key met a 402: the key's breaker opens.
      await permits.creditsExhausted(keyId);
      expect(await breakerOpen()).toBe(true);
      const submitted = emu.stats(KEY.id).jobsSubmitted;

      await handle.signal(resumeBatchSignal);
      const forCredits = await waitForProgress(
        client,
        batchId,
        (p) =>
          p.state === 'paused' && p.paused?.code === 'insufficient_credits' && p.inFlight === 0,
      );
      // The operator's resume closed nothing: no submit went out, no row failed for it.
      expect(await breakerOpen()).toBe(true);
      expect(emu.stats(KEY.id).jobsSubmitted).toBe(submitted);
      expect(forCredits.failed).toBe(0);

      // The resume after the pause for credits is the operator saying the account was topped up.
      await handle.signal(resumeBatchSignal);
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: rows.length, found: rows.length });
      expect(await breakerOpen()).toBe(false);
      expect(await readOutput(output)).toHaveLength(rows.length);
    });
  } finally {
    await worker.close();
    await temporal.connection.close();
  }
}, 120_000);
