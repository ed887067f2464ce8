// An erasure request on PostgreSQL, in a throwaway cluster whose files the test reads: after it,
// neither a pg_dump nor the tables' own files hold the sealed text of her items (VACUUM FULL
// rewrote them), while another person's stay. With `vacuum: 'plain'` the dump is clean but the
// old bytes are still in the table files, and the WAL keeps them whatever the vacuum: what the
// security documentation tells operators to plan for.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchStore, createSealer, openStore, type Store } from '../../src/store/index.js';
import { eraseFromStore } from '../../src/store/erasure.js';
import { ResultCache } from '../../src/store/result-cache.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../harness/postgres.js';

const USE = { mode: 'use' } as const;
const found = (requestId: string, result: unknown) => ({
  outcome: 'found' as const,
  requestId,
  status: 'completed',
  result,
});
const profileOf = (name: string, email: string, url: string) => ({
  displayname: name,
  best_business_email: email,
  social_profiles: { linkedin: { url } },
  organizations: [{ name: 'Analytical Engines' }],
});

let pgc: ThrowawayPostgres;
let store: Store;

beforeAll(async () => {
  pgc = await startThrowawayPostgres();
  store = await openStore({
    url: pgc.url,
    dataDir: '.data',
    sealer: createSealer(
      { currentKeyId: 'k1', keys: new Map([['k1', new Uint8Array(randomBytes(32))]]) },
      { key: randomBytes(32) },
    ),
  });
}, 60_000);

afterAll(async () => {
  await store?.close();
  pgc?.stop();
});

/** Seeds a person: entries by email, by URL, by a question; a batch row by URL with its result. */
async function seedPerson(tag: string) {
  const email = `${tag}@analytical.example`;
  const url = `https://linkedin.com/in/${tag}`;
  const profile = profileOf(`${tag} Lovelace`, email, url);
  const cache = new ResultCache(store);
  await cache.put('person_enrichment', { email }, USE, found(`${tag}-1`, profile));
  await cache.put('person_enrichment', { social_media_url: url }, USE, found(`${tag}-2`, profile));
  await cache.put(
    'person_ask',
    { question: `What does ${email} do?`, phone: '+1 415 555 0100' },
    USE,
    found(`${tag}-3`, { answer: 'Numbers.' }),
  );
  const batches = new BatchStore(store);
  await batches.beginLoad(`batch-${tag}`, 'person_enrichment', ['social_media_url']);
  await batches.addRows(`batch-${tag}`, 'person_enrichment', [
    { row: 1, params: { social_media_url: url }, key: {}, cells: { social_media_url: url } },
  ]);
  await batches.finishLoad(`batch-${tag}`, { blankLines: 0, dedupe: true });
  await batches.writeResults(`batch-${tag}`, [
    { row: 1, key: {}, outcome: 'found', requestId: `${tag}-4`, result: profile },
  ]);
  // The sealed text of every value of hers, as the database holds it.
  const sealed = [
    ...(
      await store.db
        .selectFrom('pcds_cache')
        .select('result')
        .where('request_id', 'like', `${tag}-%`)
        .execute()
    ).map((r) => r.result!),
    ...(
      await store.db
        .selectFrom('pcds_rows')
        .select('data')
        .where('batch_id', '=', `batch-${tag}`)
        .execute()
    ).map((r) => r.data),
    ...(
      await store.db
        .selectFrom('pcds_results')
        .select('result')
        .where('batch_id', '=', `batch-${tag}`)
        .execute()
    ).map((r) => r.result!),
  ];
  expect(sealed).toHaveLength(5);
  for (const s of sealed) expect(s).toMatch(/^sealed:k1:/);
  return { email, sealed };
}

const TABLES = ['pcds_cache', 'pcds_rows', 'pcds_results'];
const tableBytes = async () => (await Promise.all(TABLES.map((t) => pgc.tableFiles(t)))).join('\n');
const holdsAny = (text: string, values: string[]) => values.filter((v) => text.includes(v));

describe('erasure on PostgreSQL', () => {
  it('leaves none of her sealed values in a pg_dump or in the tables’ files; others stay', async () => {
    const ada = await seedPerson('ada');
    const grace = await seedPerson('grace');
    expect(holdsAny(pgc.dump(), ada.sealed)).toHaveLength(5);
    expect(holdsAny(await tableBytes(), ada.sealed)).toHaveLength(5);

    const report = await eraseFromStore(store, { emails: [ada.email] });
    expect(report.removed).toMatchObject({ cacheEntries: 3, batchRows: 1, results: 1 });
    expect(report.pages).toMatch(/VACUUM FULL/);

    const dump = pgc.dump();
    expect(holdsAny(dump, ada.sealed)).toEqual([]);
    expect(dump).not.toContain('ada@analytical');
    expect(holdsAny(dump, grace.sealed)).toHaveLength(5);
    const files = await tableBytes();
    expect(holdsAny(files, ada.sealed)).toEqual([]);
    expect(holdsAny(files, grace.sealed)).toHaveLength(5);
  });

  it('with a plain VACUUM the dump is clean, yet the old bytes stay in the files, and the WAL keeps them', async () => {
    const cy = await seedPerson('cy');
    const report = await eraseFromStore(store, { emails: [cy.email] }, { vacuum: 'plain' });
    expect(report.pages).toMatch(/the old bytes stay in the table files/);
    expect(holdsAny(pgc.dump(), cy.sealed)).toEqual([]);
    expect(holdsAny(await tableBytes(), cy.sealed).length).toBeGreaterThan(0);
    // Whatever the vacuum: the WAL holds what was written until its segments are recycled.
    expect(holdsAny(pgc.walFiles(), cy.sealed).length).toBeGreaterThan(0);
  });
});
