// A compact batch on one key under the service's limits crosses the hourly window: its rows
// (activities of the batch) wait for permits of the shared throttle while the hour's budget is
// spent, and every row still ends with one line and one submit, with no 429. Every duration is
// scaled by one factor: the service's windows and job latency (the emulator's time scale), the
// throttle's windows, the rows' poll interval and maximum wait. A row held back shows `throttled`
// and why in its heartbeat details, as a row's own workflow shows PcdsState throttled.
import type { WorkflowHandle } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import { permitGateFromConfig } from '../../src/worker/permit-gate.js';
import { connectClient, uniqueTaskQueue, withWorker } from '../harness/temporal.js';
import { readOutput, startCsvBatch, tempDir, writeCsv } from '../batch/fixtures.js';
import { emails, requestsSeen, startLimitedEmulator, throttledConfig } from './env.js';

/**
 * A "minute" of 0.6 s, an "hour" of 36 s, jobs of 0.2 s: the run waits out one hour, so its length
 * is the hour's. The throttle's margin (200 ms at least) is real time, not scaled: it absorbs the
 * jitter between a permit and the request's arrival, which no scale shrinks.
 */
/** 100 times faster than the service. */
const SCALE = 100;
const LIMITS = { perMinute: 10, perHour: 30 };
const ROWS = 16;
const HOUR_MS = 3_600_000 / SCALE;

/** The heartbeat details of the batch's pending rows, read every half second until `done`. */
async function sampleRowDetails(
  handle: WorkflowHandle,
  converter: Parameters<typeof decodeArrayFromPayloads>[0],
  done: Promise<unknown>,
): Promise<Record<string, unknown>[]> {
  let over = false;
  void done.finally(() => (over = true));
  const seen: Record<string, unknown>[] = [];
  while (!over) {
    const { raw } = await handle.describe();
    for (const a of raw.pendingActivities ?? []) {
      const payloads = a.heartbeatDetails?.payloads;
      if (a.activityType?.name !== 'runBatchRow' || !payloads?.length) continue;
      const [details] = await decodeArrayFromPayloads(converter, payloads);
      seen.push(details as Record<string, unknown>);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return seen;
}

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

it('a compact batch waits out the spent hour: one line and one submit per row, no 429', async () => {
  const taskQueue = uniqueTaskQueue('compact-hour');
  const keyId = `key-${taskQueue}`;
  const config = throttledConfig(emulator, LIMITS, keyId, SCALE);
  const clients = createServiceClients(config);
  const devKey = emulator.devKey.id;
  const input = writeCsv(
    tempDir('compact-hour'),
    'rows.csv',
    emails(ROWS).map((email) => ({ email })),
    ['email'],
  );
  const { client, connection } = await connectClient();
  try {
    const permits = permitGateFromConfig(config, client.connection, taskQueue);
    const activities = createActivities({ config, clients, permits });
    await withWorker({ taskQueue, activities }, async () => {
      const started = Date.now();
      const { handle, output } = await startCsvBatch(client, taskQueue, 'compact-hour', input, {
        compact: true,
        window: 8,
        keyIds: [keyId],
        // The defaults (1 s polls, 30 minutes' maximum wait), scaled like everything else.
        pollIntervalMs: 1_000 / SCALE,
        maxWaitMs: (30 * 60_000) / SCALE,
      });
      const result = handle.result();
      const details = await sampleRowDetails(
        handle,
        client.options.loadedDataConverter,
        result.catch(() => undefined),
      );
      const summary = await result;
      const elapsedMs = Date.now() - started;
      // Rows waiting for the hour window say so, with the key and the reason, and nothing more.
      const throttled = details.filter((d) => d.phase === 'throttled');
      expect(throttled.length).toBeGreaterThan(0);
      for (const d of throttled) {
        expect(d.why).toMatch(
          new RegExp(`^throttled: (submit|poll) waits for a permit on key ${keyId}: the key's `),
        );
        expect(typeof d.row).toBe('number');
      }
      expect(JSON.stringify(details)).not.toMatch(/@/);
      expect(summary).toMatchObject({ state: 'done', done: ROWS, found: ROWS, failed: 0 });
      const lines = await readOutput(output);
      expect(lines).toHaveLength(ROWS);
      expect(new Set(lines.map((l) => l.row)).size).toBe(ROWS);
      // More requests than one hour allows: the batch waited for the hour window to move on.
      expect(requestsSeen(emulator, devKey)).toBeGreaterThan(LIMITS.perHour);
      expect(elapsedMs).toBeGreaterThan(HOUR_MS * 0.9);
      const stats = emulator.stats(devKey);
      expect(stats.rateLimited).toBe(0);
      expect(stats.jobsSubmitted).toBe(ROWS);
      expect(stats.duplicateSubmits).toBe(0);
    });
  } finally {
    await clients.close();
    await connection.close();
  }
}, 300_000);
