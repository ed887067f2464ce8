// Operating a running batch: pause and resume; a 402 mid-batch pauses it with its reason, and
// after a top-up and a resume it finishes with one line per row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  pauseBatchSignal,
  resumeBatchSignal,
  setBatchWindowSignal,
} from '../../src/batch/messages.js';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import { unthrottled } from '../../src/throttle/permits.js';
import { createWorkflowPermitGate } from '../../src/worker/permit-gate.js';
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

const LOW = { id: 'low', key: 'pcds_low_credit_key', secret: 'pcds_low_credit_secret' };
const LOW_THROTTLED = {
  id: 'low-throttled',
  key: 'pcds_low_credit_key_2',
  secret: 'pcds_low_credit_secret_2',
};
let emu: RunningEmulator;
const dir = tempDir('control');
const rows = sampleRows({ rows: 16, withName: true });
const input = writeCsv(dir, 'known.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

beforeAll(async () => {
  emu = await fastEmulator({
    keys: [
      { ...LOW, credits: 5 },
      { ...LOW_THROTTLED, credits: 5 },
    ],
  });
});
afterAll(async () => {
  await emu?.stop();
});

const expectAllFound = async (path: string) => {
  const lines = await readOutput(path);
  expect(lines.map((l) => l.row).sort((a, b) => a - b)).toEqual(rows.map((_, i) => i + 1));
  expect(lines.every((l) => l.outcome === 'found')).toBe(true);
};

describe('batch control', () => {
  it('pauses (rows in flight finish, no new ones start), takes a new window, and resumes', async () => {
    const worker = activitiesFor(configFor(emu));
    try {
      await withWorker({ activities: worker.activities }, async ({ client, taskQueue }) => {
        const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'pause', input, {
          window: 2,
          pollIntervalMs: 50,
        });
        await waitForProgress(client, batchId, (p) => p.done >= 2);
        await handle.signal(pauseBatchSignal, { reason: 'maintenance' });
        const paused = await waitForProgress(
          client,
          batchId,
          (p) => p.state === 'paused' && p.inFlight === 0,
        );
        expect(paused.paused).toEqual({ code: 'paused_by_operator', message: 'maintenance' });
        await new Promise((r) => setTimeout(r, 1500));
        const still = await waitForProgress(client, batchId, () => true);
        expect(still.done).toBe(paused.done);
        expect(still.done).toBeLessThan(rows.length);
        await handle.signal(setBatchWindowSignal, 6);
        await handle.signal(resumeBatchSignal);
        const summary = await handle.result();
        expect(summary).toMatchObject({ state: 'done', done: rows.length, found: rows.length });
        const after = await waitForProgress(client, batchId, () => true);
        expect(after.window).toBe(6);
        await expectAllFound(output);
      });
    } finally {
      await worker.close();
    }
  });

  // With the shared throttle the 402 also opens the key's credit breaker, so the batch finishes
  // only if its resume closes the breaker again.
  it.each(['without a throttle', 'with the shared throttle'] as const)(
    'pauses on 402 with the reason, and finishes after a top-up and a resume (%s)',
    async (mode) => {
      const throttled = mode === 'with the shared throttle';
      const key = throttled ? LOW_THROTTLED : LOW;
      // Throttle workflows are named after the key id: a fresh id per run keeps them apart.
      const keyId = `${key.id}-${Date.now().toString(36)}`;
      const taskQueue = uniqueTaskQueue('credits');
      const temporal = await connectClient();
      const permits = throttled
        ? createWorkflowPermitGate({
            client: temporal.client,
            taskQueue,
            keys: [{ id: keyId }],
            defaultLimits: { perMinute: 10_000, perHour: 100_000 },
          })
        : unthrottled;
      const worker = activitiesFor(
        configFor(emu, {
          PCDS_API_KEY: '',
          PCDS_API_SECRET: '',
          PCDS_API_KEYS: JSON.stringify([{ ...key, id: keyId }]),
        }),
        permits,
      );
      try {
        await withWorker({ activities: worker.activities, taskQueue }, async ({ client }) => {
          const { handle, batchId, output } = await startCsvBatch(
            client,
            taskQueue,
            'credits',
            input,
            { window: 3, pollIntervalMs: 50 },
          );
          const paused = await waitForProgress(
            client,
            batchId,
            (p) => p.state === 'paused' && p.inFlight === 0,
          );
          expect(paused.paused).toMatchObject({ code: 'insufficient_credits', keyId });
          expect(paused.failed).toBe(0);
          expect(paused.done).toBeLessThan(rows.length);
          // Nothing moves while the account has no credits.
          await new Promise((r) => setTimeout(r, 1000));
          expect((await waitForProgress(client, batchId, () => true)).done).toBe(paused.done);

          const topUp = await fetch(`${emu.url}/v1/api-keys/${key.id}`, {
            method: 'PATCH',
            headers: { 'content-type': 'application/json', 'x-admin-token': emu.adminToken },
            body: JSON.stringify({ add_credits: 100 }),
          });
          expect(topUp.status).toBe(200);
          await handle.signal(resumeBatchSignal);
          const summary = await handle.result();
          expect(summary).toMatchObject({
            state: 'done',
            done: rows.length,
            found: rows.length,
            failed: 0,
          });
          await expectAllFound(output);
        });
      } finally {
        await worker.close();
        await temporal.connection.close();
      }
    },
  );
});
