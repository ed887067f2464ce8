// Rows as workflows start in groups: once the window is full, the batch waits for a tenth of it
// to free and then starts that many rows in one workflow task, so its rows' starts cost it a few
// tasks, not one a row. Every row still gets one line and one submit.
import { describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import { readOutput, sharedBatchEnv, startCsvBatch, tempDir, writeCsv } from './fixtures.js';

const dir = tempDir('row-start-groups');
const ROWS = 300;
const rows = sampleRows({ rows: ROWS, unknownShare: 0 }) as unknown as Record<string, string>[];
const input = writeCsv(dir, 'leads.csv', rows, ['email']);

describe('rows as workflows', () => {
  // Jobs take 50 to 250 ms: rows end one by one, not all at once.
  const env = sharedBatchEnv({ latency: { queuedMs: 50, processingMs: 200 } });

  it('start in groups of a tenth of the window once it is full', async () => {
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const before = env.emu.stats();
      const { handle, output } = await startCsvBatch(client, taskQueue, 'groups', input, {
        window: 50,
        pollIntervalMs: 100,
        dedupe: false,
      });
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: ROWS });
      const lines = await readOutput(output);
      expect(new Set(lines.map((l) => l.row)).size).toBe(ROWS);
      expect(lines).toHaveLength(ROWS);
      expect(env.emu.stats().jobsSubmitted - before.jobsSubmitted).toBe(ROWS);

      // The children each of the batch's workflow tasks started, in order.
      const groups: number[] = [];
      for await (const wf of client.workflow.list({
        query: `WorkflowId = '${handle.workflowId}'`,
      })) {
        const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
        let current = 0;
        for (const e of history.events ?? []) {
          if (e.startChildWorkflowExecutionInitiatedEventAttributes) current += 1;
          else if (e.workflowTaskCompletedEventAttributes && current > 0) {
            groups.push(current);
            current = 0;
          }
        }
        if (current > 0) groups.push(current);
      }
      expect(groups.reduce((a, b) => a + b, 0)).toBe(ROWS);
      // The first fills the window; every later one but the file's last rows is a group of 5.
      expect(groups[0]).toBe(50);
      expect(groups.slice(1, -1).every((n) => n >= 5)).toBe(true);
      expect(groups.length).toBeLessThanOrEqual(1 + Math.ceil((ROWS - 50) / 5));
    });
  }, 180_000);
});
