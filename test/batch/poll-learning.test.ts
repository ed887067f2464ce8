// A polling batch learns how long its jobs take: once a few rows finished, new rows poll first
// when the job is likely done, so later rows need fewer polls than the first ones, with the
// same results.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchProgressQuery } from '../../src/batch/messages.js';
import { rowWorkflowId } from '../../src/contract/workflow-ids.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { sampleRows } from '../../src/emulator/index.js';
import type { CallOutcome } from '../../src/calls/types.js';
import { withWorker } from '../harness/temporal.js';
import {
  activitiesFor,
  configFor,
  fastEmulator,
  readOutput,
  startCsvBatch,
  tempDir,
  writeCsv,
} from './fixtures.js';

let emu: RunningEmulator;
let worker: ReturnType<typeof activitiesFor>;
const dir = tempDir('poll-learning');

beforeAll(async () => {
  // A fixed job latency of 3 s, long beside the workflow-task round trips of a busy machine
  // (up to about a second per poll): the default schedule (250, 375, 563 ms...) polls 3-5 times.
  emu = await fastEmulator({ latency: { queuedMs: 500, processingMs: 2_500 } });
  worker = activitiesFor(configFor(emu));
});
afterAll(async () => {
  await worker?.close();
  await emu?.stop();
});

// Enough rows for the estimate to settle: with 3 s jobs and whole-second service timestamps, a
// first poll at 0.9 x the early samples lands just before the job ends, and the rows that learn
// from that take a few more rows to lift the estimate.
const rows = sampleRows({ rows: 24, unknownShare: 0.2 });
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], ['email']);

describe('batch poll schedule', () => {
  it('spaces the first poll to the learned job duration: fewer polls per row, same results', async () => {
    await withWorker({ activities: worker.activities }, async ({ client, taskQueue }) => {
      const { handle, batchId, output } = await startCsvBatch(
        client,
        taskQueue,
        'poll-learning',
        input,
        { window: 3, pollIntervalMs: 250 },
      );
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: rows.length, failed: 0 });

      const lines = (await readOutput(output)).sort((a, b) => a.row - b.row);
      expect(lines.map((l) => l.row)).toEqual(rows.map((_, i) => i + 1));
      for (const line of lines) {
        const email = rows[line.row - 1].email;
        expect(line.outcome).toBe(email.endsWith('@unknown.pcds.dev') ? 'empty' : 'found');
      }

      const polls: number[] = [];
      const jobs: number[] = [];
      for (const line of lines) {
        const outcome = (await client.workflow
          .getHandle(rowWorkflowId(batchId, line.row, 'v2'))
          .result()) as CallOutcome;
        if (outcome.outcome === 'failed' || !outcome.timing) throw new Error('no timing');
        // Workflow time is taken at task boundaries and the emulator keeps its own clock: a few ms apart.
        expect(outcome.timing.jobMs).toBeGreaterThanOrEqual(2_900);
        polls.push(outcome.timing.polls);
        jobs.push(outcome.timing.jobMs);
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const firstRows = polls.slice(0, 3);
      const lastThird = polls.slice(Math.floor((polls.length * 2) / 3));
      console.log('polls per row', polls.join(' '), 'jobMs', jobs.join(' '));
      expect(mean(firstRows)).toBeGreaterThanOrEqual(2);
      expect(mean(lastThird)).toBeLessThanOrEqual(1.5);
      expect(mean(lastThird)).toBeLessThan(mean(firstRows));

      // The emulator counted every poll the outcomes report, and progress shows the figures.
      const gets = Object.entries(emu.stats().requests)
        .filter(([route]) => route.startsWith('GET '))
        .reduce((sum, [, n]) => sum + n, 0);
      expect(gets).toBe(polls.reduce((a, b) => a + b, 0));
      const progress = await handle.query(batchProgressQuery);
      expect(progress.jobMsEstimate).toBeGreaterThanOrEqual(3_000);
      expect(progress.requestsPerRow).toBe(
        Math.round(((rows.length + gets) / rows.length) * 100) / 100,
      );
    });
  });
});
