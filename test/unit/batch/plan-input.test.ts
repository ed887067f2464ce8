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

  it('counts the rows sent trimmed, the rows not UTF-8 (read as Windows-1252) and the values that could not be read', async () => {
    const input = join(dir, 'crm.csv');
    writeFileSync(
      input,
      Buffer.concat([
        Buffer.from('email,name\n a@example.com ,Ann\nb@example.com,\tBo \nc@example.com,Ren'),
        Buffer.from([0xe9]), // Windows-1252 "é"
        Buffer.from('\n d@example.com,Ren'),
        Buffer.from([0xe9, 0x81]), // 0x81: no character in Windows-1252
        Buffer.from('\ne@example.com,Eve\n'),
      ]),
    );
    const prepared = await prepareBatch(
      { input, output: join(dir, 'crm.jsonl') },
      { dryRun: true },
    );
    const plan = await planPreparedBatch(prepared, { keys: [KEY] });
    expect(plan).toMatchObject({
      rows: 5,
      invalid: 0,
      sent: 5,
      trimmed: { rows: 3, fields: { email: 2, name: 1 } },
      text: {
        encoding: 'utf-8',
        notUtf8: { rows: 2, readAs: 'windows-1252' },
        unreadable: { rows: 1, fields: { name: 1 } },
      },
    });
    const named = await prepareBatch(
      { input, output: join(dir, 'crm2.jsonl'), encoding: 'CP1252' },
      { dryRun: true },
    );
    expect((await planPreparedBatch(named, { keys: [KEY] })).text).toEqual({
      encoding: 'cp1252',
      unreadable: { rows: 1, fields: { name: 1 } },
    });
    await expect(
      prepareBatch(
        { input, output: join(dir, 'crm3.jsonl'), encoding: 'utf-16le' },
        { dryRun: true },
      ),
    ).rejects.toThrow(
      /--encoding: utf-16le does not write line ends, commas and quotes as ASCII bytes/,
    );
    await expect(
      prepareBatch(
        { input, output: join(dir, 'crm3.jsonl'), encoding: 'klingon' },
        { dryRun: true },
      ),
    ).rejects.toThrow(/"klingon" is not an encoding this reader knows/);
  });

  it('sends every row without dedupe, one request a row with webhooks, and scales the windows', async () => {
    const input = join(dir, 'in2.csv');
    writeFileSync(input, 'email\na@example.com\na@example.com\n');
    const prepared = await prepareBatch(
      { input, output: join(dir, 'out2.jsonl'), dedupe: false, webhooks: true },
      { dryRun: true },
    );
    const plan = await planPreparedBatch(prepared, { keys: [KEY], timeScale: 100 });
    expect(plan).toMatchObject({ sent: 2, duplicates: 0, requestsPerRow: 1, requests: 2 });
    expect(plan.durationMs).toBeCloseTo(2 * 600 * 0.01, 6);
  });
});
