// An operator's standard remedy, a reset of the batch workflow to its first task, never turns
// finished rows into failures, never truncates the output and never submits a row again.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sampleRows, type RunningEmulator } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import {
  activitiesFor,
  configFor,
  fastEmulator,
  readOutput,
  resetToFirstTask,
  startCsvBatch,
  tempDir,
  writeCsv,
} from './fixtures.js';

let emu: RunningEmulator;
const dir = tempDir('reset');
const rows = sampleRows({ rows: 12, unknownShare: 0.25 });
const input = writeCsv(dir, 'leads.csv', rows as unknown as Record<string, string>[], ['email']);

beforeAll(async () => {
  emu = await fastEmulator();
});
afterAll(async () => {
  await emu?.stop();
});

it('a batch reset to its first task keeps every line and count, and submits nothing again', async () => {
  const worker = activitiesFor(configFor(emu));
  try {
    await withWorker(
      { activities: worker.activities },
      async ({ client, taskQueue, namespace }) => {
        const { handle, output } = await startCsvBatch(client, taskQueue, 'reset', input, {
          window: 4,
          pollIntervalMs: 50,
        });
        const first = await handle.result();
        expect(first).toMatchObject({ state: 'done', done: 12, failed: 0 });
        const linesBefore = await readOutput(output);
        const submitsBefore = emu.stats().jobsSubmitted;

        // Reset to the end of the first workflow task, as an operator does in the Web UI.
        const again = await resetToFirstTask(client, namespace, first.batchId);

        expect(again).toMatchObject({
          state: 'done',
          done: 12,
          found: first.found,
          empty: first.empty,
          failed: 0,
        });
        expect(await readOutput(output)).toEqual(linesBefore);
        expect(emu.stats().jobsSubmitted).toBe(submitsBefore);
      },
    );
  } finally {
    await worker.close();
  }
}, 120_000);
