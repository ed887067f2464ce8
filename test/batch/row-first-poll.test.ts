// Rows as workflows: a row's submit also makes the row's first poll, at the time the call's
// schedule gives it. A row whose job is done by then has one activity and no timer in its
// history; a row still running then goes on polling from its workflow. Either way, one line and
// one submit a row, and the poll the submit made counts as the row's first.
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { withWorker } from '../harness/temporal.js';
import { readOutput, sharedBatchEnv, startCsvBatch, tempDir, writeCsv } from './fixtures.js';

const dir = tempDir('row-first-poll');
const rows = sampleRows({ rows: 8, unknownShare: 0 }) as unknown as Record<string, string>[];
const input = writeCsv(dir, 'leads.csv', rows, ['email']);

/** Event types of every row's workflow in the batch, counted per row. */
async function rowHistories(client: Client, batchId: string) {
  const counts: Record<string, number>[] = [];
  const query = `PcdsBatchId = '${batchId}' AND WorkflowType = 'pcdsEndpointCall'`;
  for await (const wf of client.workflow.list({ query })) {
    const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    const count: Record<string, number> = {};
    for (const e of history.events ?? []) {
      const type = String(e.eventType);
      count[type] = (count[type] ?? 0) + 1;
      // The row's own upserts (the SDK upserts TemporalChangeVersion with a version marker).
      const upserted = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes;
      if (Object.keys(upserted?.indexedFields ?? {}).some((k) => k.startsWith('Pcds')))
        count.pcdsUpserts = (count.pcdsUpserts ?? 0) + 1;
    }
    counts.push(count);
  }
  return counts;
}

const EVENT = {
  activity: 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED',
  timer: 'EVENT_TYPE_TIMER_STARTED',
  upsert: 'EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES',
  marker: 'EVENT_TYPE_MARKER_RECORDED',
};
/** Event types arrive as numbers or names, depending on the history's decoding. */
const countOf = (count: Record<string, number>, name: string, number: number) =>
  (count[name] ?? 0) + (count[String(number)] ?? 0);

const polls = (stats: { requests: Record<string, number> }) =>
  stats.requests['GET /person/enrichment'] ?? 0;

describe('a row done at its first poll', () => {
  // Jobs done in about 20 ms; the first poll comes 300 ms after the acceptance.
  const env = sharedBatchEnv({ latency: { queuedMs: 0, processingMs: 20 } });

  it('is read by its submit: one activity, no timer, one poll, one line', async () => {
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const before = env.emu.stats();
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'first', input, {
        window: 4,
        pollIntervalMs: 300,
      });
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 8, found: 8 });
      const lines = await readOutput(output);
      expect(lines.map((l) => l.row).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(lines.every((l) => l.outcome === 'found')).toBe(true);
      const after = env.emu.stats();
      expect(after.jobsSubmitted - before.jobsSubmitted).toBe(8);
      expect(polls(after) - polls(before)).toBe(8);
      const histories = await rowHistories(client, batchId);
      expect(histories).toHaveLength(8);
      for (const count of histories) {
        expect(countOf(count, EVENT.activity, 10)).toBe(1);
        expect(countOf(count, EVENT.timer, 17)).toBe(0);
        // Started showing its first phase, the row upserts only its end; told by its batch to
        // poll in its submit, it records no version marker (nor the SDK's upsert with one).
        expect(count.pcdsUpserts).toBe(1);
        expect(countOf(count, EVENT.upsert, 40)).toBe(1);
        expect(countOf(count, EVENT.marker, 25)).toBe(0);
      }
      // What operators filter on is there all the same.
      const shown = [];
      const query = `PcdsBatchId = '${batchId}' AND WorkflowType = 'pcdsEndpointCall' AND PcdsState = 'done' AND PcdsOutcome = 'found' AND PcdsKeyId = 'default'`;
      for await (const wf of client.workflow.list({ query })) shown.push(wf.workflowId);
      expect(shown).toHaveLength(8);
    });
  }, 120_000);
});

describe('a row still running at its first poll', () => {
  // Jobs done in about 800 ms; the submit's poll at 200 ms finds them running.
  const env = sharedBatchEnv({ latency: { queuedMs: 100, processingMs: 700 } });

  it('goes on polling from its workflow and ends found, with one submit', async () => {
    await withWorker({ activities: env.worker.activities }, async ({ client, taskQueue }) => {
      const before = env.emu.stats();
      const { handle, batchId, output } = await startCsvBatch(client, taskQueue, 'later', input, {
        window: 8,
        pollIntervalMs: 200,
      });
      const summary = await handle.result();
      expect(summary).toMatchObject({ state: 'done', done: 8, found: 8 });
      const lines = await readOutput(output);
      expect(lines).toHaveLength(8);
      expect(lines.every((l) => l.outcome === 'found')).toBe(true);
      const after = env.emu.stats();
      expect(after.jobsSubmitted - before.jobsSubmitted).toBe(8);
      // The submit's poll and at least one of the workflow's for every row.
      expect(polls(after) - polls(before)).toBeGreaterThanOrEqual(16);
      for (const count of await rowHistories(client, batchId))
        expect(countOf(count, EVENT.activity, 10)).toBeGreaterThanOrEqual(2);
    });
  }, 120_000);
});
