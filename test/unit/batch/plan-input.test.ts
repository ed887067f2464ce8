// The plan of a batch from its input file, before anything starts: rows that repeat another or
// fail validation send nothing, and a dry run leaves an output it would overwrite as it is. Once
// the rows are in the store, the store's counts give the same plan.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareBatch } from '../../../src/client/batch-launch.js';
import {
  countPlanRows,
  loadedInputCounts,
  planOfCounts,
  planPreparedBatch,
} from '../../../src/client/batch-plan-input.js';
import {
  BatchStore,
  ResultCache,
  createSealer,
  loadFileIntoStore,
  openStore,
} from '../../../src/store/index.js';

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

  it("gives the same counts from the store's rows as from a pass over the file", async () => {
    const input = join(dir, 'in3.csv');
    const rows = ['email'];
    for (let i = 0; i < 300; i++) rows.push(`p${i}@example.com`);
    for (let i = 0; i < 100; i++) rows.push(`P${i * 2}@EXAMPLE.com`);
    // Sent trimmed, and counted so by the pass and the load alike.
    for (let i = 0; i < 3; i++) rows.push(`  t${i}@example.com `);
    rows.push('', 'not-an-email', 'also bad');
    writeFileSync(input, rows.join('\n') + '\n');
    const prepared = await prepareBatch({ input, output: join(dir, 'out3.jsonl') });
    const store = await openStore({
      url: `sqlite:${join(dir, 'plan.sqlite')}`,
      dataDir: dir,
      sealer: createSealer(undefined, { key: randomBytes(32) }),
    });
    try {
      const cache = new ResultCache(store);
      const use = { mode: 'use' as const };
      // Some rows were fetched before: three found, one empty.
      const got = (outcome: 'found' | 'empty', n: number) =>
        ({ outcome, requestId: `r${n}`, status: 'completed', result: {} }) as const;
      for (const n of [0, 2, 5])
        await cache.put('person_enrichment', { email: `p${n}@example.com` }, use, got('found', n));
      await cache.put('person_enrichment', { email: 'p7@example.com' }, use, got('empty', 7));
      const batchStore = new BatchStore(store);
      const loaded = await loadFileIntoStore(batchStore, {
        batchId: 'plan',
        endpoint: 'person_enrichment',
        source: prepared.input.source,
        dedupe: true,
      });
      const fromFile = await countPlanRows(prepared.input, prepared.inspection, (params) =>
        cache.hitsAmong('person_enrichment', params, use),
      );
      const fromStore = loadedInputCounts(
        prepared,
        loaded,
        await batchStore.planCounts('plan', use),
      );
      expect(fromFile).toEqual({
        rows: 405,
        invalid: 2,
        duplicates: 100,
        cached: 4,
        cachedFound: 3,
        trimmed: { rows: 3, fields: { email: 3 } },
        text: { encoding: 'utf-8', unreadable: { rows: 0, fields: {} } },
      });
      expect(fromStore).toEqual(fromFile);
      expect(planOfCounts(prepared, fromStore, { keys: [KEY] })).toEqual(
        await planPreparedBatch(prepared, { keys: [KEY] }, (params) =>
          cache.hitsAmong('person_enrichment', params, use),
        ),
      );
      // Without the cache, no count of it.
      expect(await batchStore.planCounts('plan')).toEqual({
        rows: 405,
        invalid: 2,
        duplicates: 100,
      });
    } finally {
      await store.close();
    }
  });
});
