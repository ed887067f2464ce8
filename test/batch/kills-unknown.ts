// Workers killed with SIGKILL again and again while a throttled batch sends, in both batch modes:
// a row may end submit_outcome_unknown only when its request may really have left. Each such row
// is held against the emulator's own log of the submits that reached it: a row the service never
// received ended unknown falsely (it needs a person, and it could have been sent). A submit
// claims its send only once its permit's slot is due, so a worker killed while its submits wait
// for their slots leaves none of those: at most 1 per 5 kills. Nothing is lost or sent twice.
// The two modes run as two files (kills-unknown-rows, kills-unknown-compact): each takes minutes,
// and apart they run side by side.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEndpoint, validateInput } from '../../src/contract/index.js';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import { connectClient, uniqueTaskQueue } from '../harness/temporal.js';
import { spawnWorkerProcess } from '../harness/worker-process.js';
import { startLimitedEmulator, throttledEnv } from '../throttle/env.js';
import {
  expectedOutcome,
  linesWhenDone,
  startCsvBatch,
  tempDir,
  testStoreEnv,
  waitForProgress,
  writeCsv,
} from './fixtures.js';

// 30 requests a 3 s "minute" (10 a second), 3,000 an "hour": the rows wait for permits, so at
// any moment some submits wait for their slots.
const LIMITS = { perMinute: 30, perHour: 3_000 };
const ROWS = 300;
const KILLS = 5;
/**
 * Between two kills: at least this long, plus up to as long again at random. A crash comes at
 * no particular moment of the traffic, so neither does a kill (a kill timed on the service's
 * log would land in the bursts of submits that a window opening lets through).
 */
const KILL_EVERY_MS = 2_000;

let emu: RunningEmulator;
const dir = tempDir('kills');
// Distinct rows: each row sends its own submit, so each is held against the log on its own.
const rows = [
  ...new Map(sampleRows({ rows: ROWS, unknownShare: 0.25 }).map((r) => [r.email, r])).values(),
];
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], ['email']);
const enrichment = getEndpoint('person_enrichment');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether the service received a submit of this row (as a worker sends it: validated). */
function reachedService(email: string): boolean {
  const checked = validateInput(enrichment, { email });
  if (!checked.ok) return false;
  return emu.submitArrived('person_enrichment', checked.value);
}

async function killWorkersWhileSending(compact: boolean) {
  const taskQueue = uniqueTaskQueue(compact ? 'kills-compact' : 'kills-rows');
  const env = { ...throttledEnv(emu, LIMITS, `key-${taskQueue}`), ...testStoreEnv() };
  const { client, connection } = await connectClient();
  // Two workers, so the batch goes on while a killed one is replaced.
  const workers: ChildProcess[] = await Promise.all([
    spawnWorkerProcess(taskQueue, env),
    spawnWorkerProcess(taskQueue, env),
  ]);
  try {
    const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'kills', input, {
      window: 30,
      chunkSize: 60,
      pollIntervalMs: 400,
      ...(compact ? { compact: true } : {}),
    });
    // The first kill once the batch sends.
    while (emu.stats().jobsSubmitted === 0) await sleep(50);
    let kills = 0;
    for (; kills < KILLS; kills++) {
      await sleep(KILL_EVERY_MS * (1 + Math.random()));
      const progress = await waitForProgress(client, batchId, () => true);
      expect(progress.done, 'the batch ended before the kills').toBeLessThan(rows.length);
      const victim = workers.shift()!;
      victim.kill('SIGKILL');
      await once(victim, 'exit');
      workers.push(await spawnWorkerProcess(taskQueue, env));
    }
    const lines = await linesWhenDone(handle, output, rows.length);
    const unknown = lines.filter((l) => l.code === 'submit_outcome_unknown');
    const neverSent = unknown.filter((l) => !reachedService(rows[l.row - 1].email));
    // Every other row has its real outcome.
    for (const line of lines)
      if (line.code !== 'submit_outcome_unknown')
        expect(line.outcome).toBe(expectedOutcome(rows[line.row - 1].email));
    // No row was sent twice, and every row that is not unknown was sent once.
    const stats = emu.stats();
    expect(stats.duplicateSubmits).toBe(0);
    expect(stats.jobsSubmitted).toBeLessThanOrEqual(rows.length);
    expect(stats.jobsSubmitted).toBeGreaterThanOrEqual(rows.length - unknown.length);
    return { kills, unknown: unknown.length, neverSent: neverSent.length };
  } finally {
    for (const w of workers) w.kill('SIGKILL');
    await Promise.all(
      workers.map((w) => (w.exitCode === null ? once(w, 'exit') : Promise.resolve())),
    );
    await connection.close();
  }
}

/** The test of one mode, in a file of its own: its emulator, its workers, its kills. */
export function killsUnknownTest(mode: string, compact: boolean): void {
  beforeAll(async () => {
    emu = await startLimitedEmulator(LIMITS);
  });
  afterAll(async () => {
    await emu?.stop();
  });

  describe(`a throttled batch whose workers are killed again and again: ${mode}`, () => {
    it(
      'ends at most one row per five kills submit_outcome_unknown that the service never received',
      { timeout: 600_000 },
      async () => {
        const got = await killWorkersWhileSending(compact);
        console.log(`kills ${got.kills}: unknown ${got.unknown}, never received ${got.neverSent}`);
        expect(got.kills).toBe(KILLS);
        expect(got.neverSent).toBeLessThanOrEqual(got.kills / 5);
      },
    );
  });
}
