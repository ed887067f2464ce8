// The plan of a batch from its input file, before anything starts: rows that repeat another or
// fail validation send nothing, and a dry run leaves an output it would overwrite as it is.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareBatch } from '../../../src/client/batch-launch.js';
import { planPreparedBatch } from '../../../src/client/batch-plan-input.js';

const dir = mkdtempSync(join(tmpdir(), 'pcds-plan-input-'));
const KEY = { id: 'k1', perMinute: 100, perHour: 1000 };

describe('planPreparedBatch', () => {
  it('counts duplicates and invalid rows out of the requests; a dry run truncates nothing', async () => {
    const input = join(dir, 'in.csv');
    const rows = ['email'];
    for (let i = 0; i < 1000; i++) rows.push(`p${i}@example.com`);
    for (let i = 0; i < 200; i++) rows.push(`P${i}@Example.com`);
    rows.push('not-an-email');
    writeFileSync(input, rows.join('\n') + '\n');
    const output = join(dir, 'out.jsonl');
    writeFileSync(output, '{"row":1}\n');
    const prepared = await prepareBatch({ input, output, overwrite: true }, { dryRun: true });
    const plan = await planPreparedBatch(prepared, { keys: [KEY] });
    expect(plan).toMatchObject({
      rows: 1201,
      duplicates: 200,
      invalid: 1,
      sent: 1000,
      requests: 2000,
      credits: 1000,
    });
    // 1,000 requests in the first ten minutes, the next 1,000 an hour later.
    expect(plan.hours).toBeCloseTo(70 / 60, 6);
    expect(readFileSync(output, 'utf8')).toBe('{"row":1}\n');
  });

  it('sends every row without dedupe, one request a row with webhooks, and scales the windows', async () => {
    const input = join(dir, 'in2.csv');
    writeFileSync(input, 'email\na@example.com\na@example.com\n');
    const prepared = await prepareBatch(
      { input, output: join(dir, 'out2.jsonl'), dedupe: false, webhooks: true },
      { dryRun: true },
    );
    const plan = await planPreparedBatch(prepared, { keys: [KEY], timeScale: 0.01 });
    expect(plan).toMatchObject({ sent: 2, duplicates: 0, requestsPerRow: 1, requests: 2 });
    expect(plan.durationMs).toBeCloseTo(2 * 600 * 0.01, 6);
  });
});
