// The production topology under faults (`npm run test:cluster` only): a Temporal server on
// PostgreSQL, two `pcds worker` processes on one task queue. One worker is SIGKILLed mid-batch and
// replaced, as an orchestrator would; later the Temporal server itself restarts mid-batch. The
// output still has exactly one line per input row, and no accepted job was submitted twice.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sampleRows, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { batchProgressQuery } from '../../src/batch/messages.js';
import { restartServer } from '../../scripts/temporal-cluster.js';
import { spawnCli } from '../cli/cli-env.js';
import {
  connectClient,
  testTemporalEnv,
  testEncryptionEnv,
  uniqueTaskQueue,
} from '../harness/temporal.js';
import {
  expectedOutcome,
  readOutput,
  startCsvBatch,
  tempDir,
  waitForProgress,
  writeCsv,
  testStoreEnv,
} from '../batch/fixtures.js';

if (process.env.PCDS_TEST_CLUSTER !== '1') {
  throw new Error(
    'test/cluster restarts the Temporal server: run it with `npm run test:cluster`, which brings the cluster up',
  );
}

const dir = tempDir('topology');
// Unique inputs, so the emulator's duplicate-submit count means "the same job sent twice".
const rows = [
  ...new Map(
    sampleRows({ rows: 120, unknownShare: 0.2, badShare: 0.05, withName: true }).map((r) => [
      r.email,
      r,
    ]),
  ).values(),
].slice(0, 60);
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);

let emu: RunningEmulator;
beforeAll(async () => {
  // Jobs take about a second, so each fault lands with rows in flight.
  emu = await startEmulator({
    port: 0,
    latency: { queuedMs: 100, processingMs: 800 },
    limits: { enabled: false },
  });
});
const workerDirs: string[] = [];
afterAll(async () => {
  await emu?.stop();
  for (const d of [dir, ...workerDirs]) rmSync(d, { recursive: true, force: true });
});

/** `pcds worker` as a child process; resolves once it reports polling. */
async function startWorker(taskQueue: string, name: string): Promise<ChildProcess> {
  const dataDir = tempDir(`topology-${name}`);
  workerDirs.push(dataDir);
  const child = spawnCli(['worker'], {
    ...testTemporalEnv(),
    PCDS_TASK_QUEUE: taskQueue,
    PCDS_BASE_URL: emu.url,
    PCDS_API_KEY: emu.devKey.key,
    PCDS_API_SECRET: emu.devKey.secret,
    PCDS_THROTTLE: 'off',
    PCDS_DATA_DIR: dataDir,
    // The store the test loads the batch's rows into (the cluster's PostgreSQL).
    ...testStoreEnv(),
    ...testEncryptionEnv(),
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('worker polling task queue')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`worker ${name} exited (${code}):\n${log}`)));
  });
  return child;
}

async function stopWorker(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await once(child, 'exit');
}

// Usually 40-60 s. A row whose submit was sent by the killed worker comes back after its 30 s
// heartbeat timeout, then waits 2 min (call-steps' ACCEPTANCE_GRACE_MS) for a hand-over that a
// dead worker never makes, and ends submit_outcome_unknown: up to ~170 s when the kill lands so.
it(
  'two workers, one SIGKILLed and a server restart mid-batch: one line per row, no second submit',
  { timeout: 300_000 },
  async () => {
    const taskQueue = uniqueTaskQueue('topology');
    const { client, connection } = await connectClient();
    const workers: ChildProcess[] = [];
    const t0 = Date.now();
    const mark = (what: string) =>
      process.stderr.write(`[topology] ${((Date.now() - t0) / 1000).toFixed(1)} s ${what}\n`);
    try {
      workers.push(await startWorker(taskQueue, 'a'), await startWorker(taskQueue, 'b'));
      const { handle, batchId, output } = await startCsvBatch(
        client,
        taskQueue,
        'topology',
        input,
        {
          window: 8,
          chunkSize: 10,
          pollIntervalMs: 200,
        },
      );

      const atKill = await waitForProgress(
        client,
        batchId,
        (p) => p.done >= 8 && p.inFlight > 0,
        60_000,
      );
      mark(
        `SIGKILL worker a at ${JSON.stringify({ done: atKill.done, inFlight: atKill.inFlight })}`,
      );
      workers[0].kill('SIGKILL');
      await once(workers[0], 'exit');
      workers.push(await startWorker(taskQueue, 'c'));

      const atRestart = await waitForProgress(
        client,
        batchId,
        (p) => p.done >= atKill.done + 8 && p.inFlight > 0,
        120_000,
      );
      expect(atRestart.done).toBeLessThan(rows.length);
      mark(
        `server restart at ${JSON.stringify({ done: atRestart.done, inFlight: atRestart.inFlight })}`,
      );
      await restartServer();
      mark('server back');

      // Progress while it finishes, in the log when it changes (a slow end shows where it waited).
      let seen = '';
      const sampler = setInterval(() => {
        handle
          .query(batchProgressQuery)
          .then((p) => {
            const now = JSON.stringify({ done: p.done, inFlight: p.inFlight });
            if (now !== seen) mark(`progress ${(seen = now)}`);
          })
          .catch(() => {});
      }, 5_000);
      const summary = await handle.result().finally(() => clearInterval(sampler));
      mark('batch done');
      expect(summary).toMatchObject({ state: 'done', total: rows.length, done: rows.length });

      const lines = await readOutput(output);
      expect(lines).toHaveLength(rows.length);
      expect(new Set(lines.map((l) => l.row))).toEqual(new Set(rows.map((_, i) => i + 1)));
      // A submit in flight when its worker died may have reached the service: it is never sent
      // again and ends submit_outcome_unknown. At most as many as rows were in flight at the kill.
      const unknown = lines.filter((l) => l.code === 'submit_outcome_unknown');
      expect(unknown.length).toBeLessThanOrEqual(atKill.inFlight);
      for (const line of lines) {
        if (line.code === 'submit_outcome_unknown') continue;
        expect({ row: line.row, outcome: line.outcome }).toEqual({
          row: line.row,
          outcome: expectedOutcome(rows[line.row - 1].email),
        });
      }
      const valid = lines.filter((l) => l.outcome !== 'failed');
      expect(new Set(valid.map((l) => l.requestId)).size).toBe(valid.length);
      // Every input is distinct, so a job sent twice would show as a duplicate submit.
      const stats = emu.stats();
      expect(stats.duplicateSubmits).toBe(0);
      const validRows = lines.filter((l) => l.code !== 'invalid_row').length;
      expect(stats.jobsSubmitted).toBeLessThanOrEqual(validRows);
      expect(stats.jobsSubmitted).toBeGreaterThanOrEqual(validRows - unknown.length);
    } finally {
      await Promise.all(workers.map(stopWorker));
      await connection.close();
    }
  },
);
