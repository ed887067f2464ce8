// What a batch carries from one run to the next (its continue-as-new input) stays the same size
// however many rows it has done: counters and ids, no per-row sets. Read from the history of each
// run, over a batch whose duplicates come long after the rows they repeat (how a leader ended was
// once carried until its last duplicate came: a map growing with the rows done).
import type { Client } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { describe, expect, it } from 'vitest';
import { JOB_SAMPLES } from '../../src/batch/job-duration.js';
import type { BatchInput } from '../../src/batch/types.js';
import { batchWorkflowId } from '../../src/contract/workflow-ids.js';
import { withWorker } from '../harness/temporal.js';
import { readOutput, sharedBatchEnv, startCsvBatch, tempDir, writeCsv } from './fixtures.js';

const env = sharedBatchEnv();
const dir = tempDir('carried-state');

/** The state each run after the first started with, in run order, as its history holds it. */
async function carriedStates(client: Client, batchId: string) {
  const workflowId = batchWorkflowId(batchId);
  const runs: { runId: string; startTime: Date }[] = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.push({ runId: run.runId, startTime: run.startTime });
  runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  const states = [];
  for (const { runId } of runs) {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 1,
    });
    const payloads =
      page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
    const [input] = (await decodeArrayFromPayloads(
      client.options.loadedDataConverter,
      payloads,
    )) as [BatchInput];
    if (input.carried) states.push(input.carried);
  }
  return states;
}

describe('the state a batch carries across continue-as-new', () => {
  it('does not grow with the rows done', async () => {
    // 1,200 people, then each of them again in capitals: every duplicate comes after its leader
    // ended, many runs later.
    const people = Array.from({ length: 1200 }, (_, i) => `person.${i}@unknown.pcds.dev`);
    const rows = [...people, ...people.map((e) => e.toUpperCase())].map((email) => ({ email }));
    const input = writeCsv(dir, 'repeated.csv', rows, ['email']);
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'state', input, {
        window: 50,
        pollIntervalMs: 50,
        compact: true,
        historyThreshold: 600,
      });
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 2400, duplicates: 1200, failed: 0 });
      const lines = await readOutput(output);
      expect(lines).toHaveLength(2400);
      expect(lines.filter((l) => l.duplicateOf !== undefined)).toHaveLength(1200);

      const states = await carriedStates(client, batchId);
      expect(states.length).toBe(summary.runs - 1);
      // Several runs, far apart in rows done.
      expect(states.length).toBeGreaterThanOrEqual(4);
      const done = states.map((s) => s.counters.done);
      expect(done[done.length - 1] - done[0]).toBeGreaterThanOrEqual(700);
      // What fills up in a batch's first minutes, then keeps its size: completions per second
      // over the last minute, the last job durations, requests per minute over the last hour.
      for (const s of states) {
        expect(s.rate.length).toBeLessThanOrEqual(60);
        expect(s.jobMs?.length ?? 0).toBeLessThanOrEqual(JOB_SAMPLES);
        for (const log of Object.values(s.sent ?? {})) expect(log.length).toBeLessThanOrEqual(62);
      }
      // The rest is the same size at every run, whatever the rows done: counters gain a digit
      // now and then. (A leader's end carried until its duplicate came took about 18 bytes.)
      const sizes = states.map(
        (s) => JSON.stringify({ ...s, rate: [], jobMs: [], sent: {} }).length,
      );
      console.log(
        JSON.stringify({ done, sizes, whole: states.map((s) => JSON.stringify(s).length) }),
      );
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(100);
    });
  }, 300_000);
});
