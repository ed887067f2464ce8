// One key shared by two compact batches of different windows and a person's call, against the real
// server and the emulator with limits, crossing the hourly window: the batches share the key's
// first hour evenly whatever their windows, a call started once they have spent the hour is answered at once
// from the reserve (not after the hour slides), and every row still ends with one line and one
// submit, with no 429. Every duration is scaled by one factor: the service's windows and job
// latency (the emulator's time scale), the throttle's windows, the poll intervals and maximum
// waits. The throttle's margin (200 ms at least) is real time: arrival jitter does not scale.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { readThrottleStatus } from '../../src/client/throttle-operator.js';
import { requesterId, batchRequester } from '../../src/contract/index.js';
import type { SchedulerSnapshot } from '../../src/throttle/scheduler.js';
import { uniqueTaskQueue } from '../harness/temporal.js';
import { readOutput, startCsvBatch, tempDir, writeCsv } from '../batch/fixtures.js';
import {
  emails,
  pcdsClient,
  startLimitedEmulator,
  throttledConfig,
  withThrottledWorker,
} from './env.js';

/** A "minute" of 0.6 s, an "hour" of 36 s, jobs of 0.2 s. */
const SCALE = 100;
const LIMITS = { perMinute: 5, perHour: 30 };
/** Rows of the narrow batch (window 2) and the wide one (window 8): more than an hour allows. */
const ROWS = { narrow: 10, wide: 20 };
const HOUR_MS = 3_600_000 / SCALE;
/** The defaults (1 s polls, 30 minutes' maximum wait), scaled like everything else. */
const WAITS = { pollIntervalMs: 1_000 / SCALE, maxWaitMs: (30 * 60_000) / SCALE };
/**
 * What batch work may hold of the hour while the throttle is new: all but the reserve's 10% (3 of
 * 30), kept whole until the throttle has seen an hour of demand.
 */
const BATCH_HOUR = 27;

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

it('two batches of windows 2 and 8 share a key evenly; a call once they spent the hour goes at once; no 429', async () => {
  const taskQueue = uniqueTaskQueue('shared-pool');
  const keyId = `key-${taskQueue}`;
  const config = throttledConfig(emulator, LIMITS, keyId, SCALE);
  const devKey = emulator.devKey.id;
  const dir = tempDir('shared-pool');
  const people = emails(ROWS.narrow + ROWS.wide + 1);
  const csv = (name: string, rows: string[]) =>
    writeCsv(
      dir,
      `${name}.csv`,
      rows.map((email) => ({ email })),
      ['email'],
    );
  await withThrottledWorker(config, taskQueue, async (temporal) => {
    const options = { compact: true, keyIds: [keyId], ...WAITS };
    const narrow = await startCsvBatch(
      temporal,
      taskQueue,
      'narrow',
      csv('narrow', people.slice(0, ROWS.narrow)),
      { ...options, window: 2 },
    );
    const wide = await startCsvBatch(
      temporal,
      taskQueue,
      'wide',
      csv('wide', people.slice(ROWS.narrow, ROWS.narrow + ROWS.wide)),
      { ...options, window: 8 },
    );
    const ids = [narrow.batchId, wide.batchId].map((b) => requesterId(batchRequester(b)));
    // Until the batches have spent what the hour gives batch work (their jobs' polls held in it)
    // and wait for the hour window.
    let scheduler: SchedulerSnapshot | undefined;
    for (;;) {
      const [status] = await readThrottleStatus(temporal, [keyId]).catch(() => []);
      scheduler = status?.scheduler;
      const batch = (scheduler?.requesters ?? []).filter((r) => ids.includes(r.id));
      if (batch.some((r) => r.reason === 'hour_window')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const hour = (id: string) => scheduler!.requesters.find((r) => r.id === id)?.hour ?? 0;
    // What they sent, at most what batch work may hold (the rest of it is held for their polls).
    const spent = hour(ids[0]) + hour(ids[1]);
    expect(spent).toBeLessThanOrEqual(BATCH_HOUR);
    // Shares by weight, not by rows in flight: the narrow batch has a quarter of the wide one's
    // rows in flight and still about half the key (first come, first served gives it about 2/10).
    expect(hour(ids[0]) / spent).toBeGreaterThanOrEqual(0.35);
    expect(hour(ids[1]) / spent).toBeGreaterThanOrEqual(0.35);
    expect(scheduler!.reserve.hour.kept).toBe(LIMITS.perHour - BATCH_HOUR);

    // A person's call now: the reserve answers it, while the batches wait for the hour to slide.
    const { client, close } = await pcdsClient(taskQueue, WAITS);
    try {
      const started = Date.now();
      const call = await client.startCall(
        'person_enrichment',
        { email: people[ROWS.narrow + ROWS.wide] },
        { keyId },
      );
      const outcome = await call.result();
      const tookMs = Date.now() - started;
      expect(outcome.outcome).toBe('found');
      // Held for the hour window it would take most of the hour; it took a few of its minutes.
      expect(tookMs).toBeLessThan(HOUR_MS / 4);
    } finally {
      await close();
    }

    const batches = [
      { ...narrow, rows: ROWS.narrow },
      { ...wide, rows: ROWS.wide },
    ];
    for (const b of batches) {
      expect(await b.handle.result()).toMatchObject({ state: 'done', done: b.rows, failed: 0 });
      const lines = await readOutput(b.output);
      expect(new Set(lines.map((l) => l.row)).size).toBe(b.rows);
      expect(lines).toHaveLength(b.rows);
    }
  });
  // The batches needed more than one hour allows: the run crossed the hourly window.
  const stats = emulator.stats(devKey);
  expect(Object.values(stats.requests).reduce((a, b) => a + b, 0)).toBeGreaterThan(LIMITS.perHour);
  expect(stats.rateLimited).toBe(0);
  expect(stats.jobsSubmitted).toBe(ROWS.narrow + ROWS.wide + 1);
  expect(stats.duplicateSubmits).toBe(0);
}, 300_000);
