// Search export: one search paged into a JSONL file by the searchExport workflow. Rows are read
// by GET and written by the activity, one POST per page, numbered rows without gaps or repeats.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/index.js';
import { summaryPathOf } from '../../src/store/outputs.js';
import { unthrottled } from '../../src/throttle/permits.js';
import type { SearchExportInput, SearchExportSummary } from '../../src/workflows/search-export.js';
import { withWorker } from '../harness/temporal.js';
import { startCallEnv, type CallEnv } from './call-env.js';

let env: CallEnv;
const dir = mkdtempSync(join(tmpdir(), 'pcds-search-export-'));
beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

async function runExport(input: Omit<SearchExportInput, 'exportId'>, id: string) {
  const activities = createActivities({
    config: env.config,
    clients: env.clients,
    permits: unthrottled,
  });
  return withWorker({ activities }, async ({ client, taskQueue }) => {
    const exportId = `${id}-${taskQueue}`;
    const summary: SearchExportSummary = await client.workflow.execute('pcdsSearchExport', {
      taskQueue,
      workflowId: exportId,
      args: [{ ...input, exportId, pollIntervalMs: 100, maxWaitMs: 60_000 }],
    });
    return summary;
  });
}

const lines = (path: string) =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { row: number; result: unknown });

it('exports up to the maximum: one POST per page, rows numbered 1..n once each', async () => {
  const output = join(dir, 'engineers.jsonl');
  const from = Date.now();
  const summary = await runExport(
    // Paging fields of the caller are replaced by the workflow's own.
    { params: { query: 'engineer', limit: 3, offset: 40 }, maxResults: 25, pageSize: 10, output },
    'export-max',
  );
  expect(summary).toMatchObject({ rows: 25, pages: 3, stoppedBy: 'max_results', output });
  const written = lines(output);
  expect(written.map((l) => l.row)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  expect(new Set(written.map((l) => JSON.stringify(l.result))).size).toBe(25);
  expect(JSON.parse(readFileSync(summaryPathOf(output), 'utf8'))).toEqual(summary);

  const seen = env.proxy.seen().filter((s) => s.at >= from && s.path === '/person/search');
  expect(seen.filter((s) => s.method === 'POST')).toHaveLength(3);
  expect(seen.filter((s) => s.method === 'GET').length).toBeGreaterThanOrEqual(3);
});

it('stops when the service has no more rows, and a rerun starts the file afresh', async () => {
  const output = join(dir, 'all.jsonl');
  const first = await runExport(
    { params: { query: 'engineer' }, maxResults: 5_000, pageSize: 100, output },
    'export-all',
  );
  expect(['no_more', 'offset_limit']).toContain(first.stoppedBy);
  expect(lines(output)).toHaveLength(first.rows);
  const again = await runExport(
    { params: { query: 'engineer' }, maxResults: 5_000, pageSize: 100, output },
    'export-all-again',
  );
  expect(again.rows).toBe(first.rows);
  expect(lines(output)).toHaveLength(again.rows);
});
