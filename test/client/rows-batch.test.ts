// A service's batch with no file: rows handed to the typed client from code (an async
// generator), loaded into the store where the client runs, run by a worker that never sees a
// file, and read back through the handle (results in pages, an export) and the CLI.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetReadObjects, asyncBufferFromFile } from 'hyparquet';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import type { StoredResult } from '../../src/index.js';
import { tempDir, uniqueBatchId } from '../batch/fixtures.js';
import { startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';

let env: CallEnv;
const dir = tempDir('rows-batch');

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

it('runs rows handed in by code, one result per row, and pages and exports them', async () => {
  const people = sampleRows({ rows: 8 }).map((r) => ({ email: r.email }));
  // A repeat (shares the first row's call) and a bad row (failed, its reason quotes no value).
  const given = [...people, { email: people[0].email.toUpperCase() }, { email: 'not-an-email' }];
  async function* rows() {
    for (const r of given) yield r;
  }
  await withCallWorker(env, async (client) => {
    const submitsBefore = env.emulator.stats().jobsSubmitted;
    const batch = await client.startBatch({
      batchId: uniqueBatchId('rows'),
      rows: rows(),
      window: 4,
      compact: true,
      // The worker's other test keys are refused by design: this batch uses the good one.
      keyIds: [env.emulator.devKey.id],
    });
    const summary = await batch.result();
    expect(summary).toMatchObject({ state: 'done', total: 10, done: 10, failed: 1, duplicates: 1 });
    expect(env.emulator.stats().jobsSubmitted - submitsBefore).toBe(8);

    const lines: StoredResult[] = [];
    for await (const line of batch.results()) lines.push(line);
    expect(lines.map((l) => l.row)).toEqual(given.map((_, i) => i + 1));
    expect(lines[8]).toMatchObject({ duplicateOf: 1, outcome: lines[0].outcome });
    expect(lines[9]).toMatchObject({ outcome: 'failed', code: 'invalid_row' });
    // Its reason names the rule, never the value (the key columns are the caller's own).
    expect(lines[9].message).toBe('email must be an email address');

    const failed: StoredResult[] = [];
    for await (const line of batch.results({ outcome: 'failed' })) failed.push(line);
    expect(failed.map((l) => l.row)).toEqual([10]);
    const byCompletion: StoredResult[] = [];
    for await (const line of batch.results({ order: 'completion', pageSize: 3 }))
      byCompletion.push(line);
    expect(byCompletion.map((l) => l.row).sort((a, b) => a - b)).toEqual(lines.map((l) => l.row));

    const csv = join(dir, 'rows.csv');
    const parquet = join(dir, 'rows.parquet');
    const csvReport = await batch.export({ format: 'csv', output: csv });
    expect(csvReport).toMatchObject({ inputRows: 10, written: 10, withoutLine: 0 });
    await batch.export({ format: 'parquet', output: parquet });
    const table = await parquetReadObjects({ file: await asyncBufferFromFile(parquet) });
    expect(table.map((r) => Number(r.row))).toEqual(lines.map((l) => l.row));
    expect(table.map((r) => r.outcome)).toEqual(lines.map((l) => l.outcome));
    const csvRows = readFileSync(csv, 'utf8').trim().split('\n');
    expect(csvRows).toHaveLength(11);
  });
}, 120_000);
