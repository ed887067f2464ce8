// A worker killed with SIGKILL mid-batch and a new one started: the output has exactly one line
// per row, each with the right outcome, and no row was submitted twice.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import { connectClient, uniqueTaskQueue } from '../harness/temporal.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import {
  expectedOutcome,
  fastEmulator,
  linesWhenDone,
  startCsvBatch,
  tempDir,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

let emu: RunningEmulator;
const dir = tempDir('killed');
const rows = sampleRows({ rows: 40, unknownShare: 0.25, badShare: 0.05, withName: true });
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

beforeAll(async () => {
  // Jobs take about a second, so the kill lands with rows in flight.
  emu = await fastEmulator({ latency: { queuedMs: 100, processingMs: 800 } });
});
afterAll(async () => {
  await emu?.stop();
});

function spawnWorker(taskQueue: string): Promise<ChildProcess> {
  return spawnWorkerProcess(taskQueue, {
    PCDS_BASE_URL: emu.url,
    PCDS_API_KEY: emu.devKey.key,
    PCDS_API_SECRET: emu.devKey.secret,
    PCDS_THROTTLE: 'off',
  });
}

// The new worker takes over once the server times out the killed one's tasks (up to 30 s).
it(
  'writes exactly one line per row after a worker is killed mid-batch',
  { timeout: 180_000 },
  async () => {
    const taskQueue = uniqueTaskQueue('batch-kill');
    const { client, connection } = await connectClient();
    let second: ChildProcess | undefined;
    try {
      const first = await spawnWorker(taskQueue);
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'killed', input, {
        window: 6,
        chunkSize: 10,
        pollIntervalMs: 200,
      });
      const atKill = await waitForProgress(
        client,
        batchId,
        (p) => p.done >= 8 && p.inFlight > 0,
        60_000,
      );
      first.kill('SIGKILL');
      await once(first, 'exit');
      expect(atKill.done).toBeLessThan(rows.length);
      second = await spawnWorker(taskQueue);
      const lines = await linesWhenDone(handle, output, rows.length);
      // A row whose submit was in flight when the worker died may have reached the service: it is
      // never sent again (it could be charged twice) and ends as submit_outcome_unknown. There can
      // be at most as many of those as rows were in flight; every other row has its real outcome.
      const unknown = lines.filter((l) => l.code === 'submit_outcome_unknown');
      expect(unknown.length).toBeLessThanOrEqual(atKill.inFlight);
      for (const line of lines) {
        if (line.code === 'submit_outcome_unknown') continue;
        expect(line.outcome).toBe(expectedOutcome(rows[line.row - 1].email));
      }
      // Each valid row was submitted once: the killed worker's rows were not sent again. A row
      // repeating an earlier one (the sample holds some) shares its job and says so.
      const valid = lines.filter((l) => l.outcome !== 'failed');
      const sent = valid.filter((l) => l.duplicateOf === undefined);
      expect(new Set(sent.map((l) => l.requestId)).size).toBe(sent.length);
      const byRow = new Map(lines.map((l) => [l.row, l]));
      for (const l of valid.filter((v) => v.duplicateOf !== undefined))
        expect(l.requestId).toBe(byRow.get(l.duplicateOf!)!.requestId);
      // The service saw one submit per valid row sent; a row that ended submit_outcome_unknown
      // was sent at most once.
      const validRows = lines.filter(
        (l) => l.code !== 'invalid_row' && l.duplicateOf === undefined,
      ).length;
      const submitted = emu.stats().jobsSubmitted;
      expect(submitted).toBeLessThanOrEqual(validRows);
      expect(submitted).toBeGreaterThanOrEqual(validRows - unknown.length);
    } finally {
      second?.kill('SIGTERM');
      if (second && second.exitCode === null) await once(second, 'exit');
      await connection.close();
    }
  },
);
