// The result cache over the embedded engine, sealed: lookups and hits, ages and times to live, the
// single-call fill, purges and erasures by email or URL (normalised), nothing in clear in the file,
// and a batch's rows answered from it and filling it as its policy says.
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ResultLine } from '../../../src/batch/types.js';
import { CACHE_TTL, type CacheUse } from '../../../src/calls/cache-policy.js';
import { eraseFromStore } from '../../../src/store/erasure.js';
import { ResultCache } from '../../../src/store/result-cache.js';
import { BatchStore, type Store } from '../../../src/store/index.js';
import { tempStore } from './temp-store.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const USE: CacheUse = { mode: 'use' };
const T0 = Date.parse('2026-01-10T12:00:00Z');

const storeIn = (dir = mkdtempSync(join(tmpdir(), 'pcds-cache-'))): Promise<Store> =>
  tempStore(dir);

const ada = { email: 'ada@example.com' };
const found = (requestId: string, result: unknown = { full_name: 'Ada Lovelace' }) => ({
  outcome: 'found' as const,
  requestId,
  status: 'completed',
  result,
});
const empty = (requestId: string) => ({
  outcome: 'empty' as const,
  requestId,
  status: 'completed',
});

describe('result cache: single calls', () => {
  it('misses, then hits after a put; every hit is counted', async () => {
    const cache = new ResultCache(await storeIn());
    expect(await cache.get('person_enrichment', ada, USE, T0)).toBeUndefined();
    await cache.put('person_enrichment', ada, USE, found('req_1'), T0);
    // The same parameters however spelled.
    const hit = await cache.get('person_enrichment', { email: ' ADA@example.com' }, USE, T0 + 1);
    expect(hit).toEqual({
      outcome: 'found',
      requestId: 'req_1',
      status: 'completed',
      result: { full_name: 'Ada Lovelace' },
      fetchedAt: T0,
    });
    await cache.get('person_enrichment', ada, USE, T0 + 2);
    // Another endpoint is another lookup.
    expect(await cache.get('company_enrichment', ada, USE, T0)).toBeUndefined();
    const [stats] = await cache.stats(T0 + 3);
    expect(stats).toMatchObject({ endpoint: 'person_enrichment', entries: 1, found: 1, hits: 2 });
  });

  it('reads only when the run uses the cache, and never for an endpoint without a time to live', async () => {
    const cache = new ResultCache(await storeIn());
    await cache.put('person_enrichment', ada, USE, found('req_1'), T0);
    expect(await cache.get('person_enrichment', ada, { mode: 'off' }, T0)).toBeUndefined();
    expect(await cache.get('person_enrichment', ada, { mode: 'refresh' }, T0)).toBeUndefined();
    expect(await cache.get('person_enrichment', ada, undefined, T0)).toBeUndefined();
    await cache.put('person_search', { query: 'x' }, USE, found('req_2'), T0);
    expect(await cache.get('person_search', { query: 'x' }, USE, T0)).toBeUndefined();
    expect((await cache.stats(T0)).map((s) => s.endpoint)).toEqual(['person_enrichment']);
  });

  it('maxAgeMs leaves out an entry fetched longer ago', async () => {
    const cache = new ResultCache(await storeIn());
    await cache.put('person_enrichment', ada, USE, found('req_1'), T0);
    const later = T0 + 3 * DAY;
    expect(
      await cache.get('person_enrichment', ada, { mode: 'use', maxAgeMs: 2 * DAY }, later),
    ).toBe(undefined);
    expect(
      await cache.get('person_enrichment', ada, { mode: 'use', maxAgeMs: 4 * DAY }, later),
    ).toMatchObject({ requestId: 'req_1' });
  });

  it('an entry past its time to live misses, counts as expired, and the sweep removes it', async () => {
    const cache = new ResultCache(await storeIn());
    const ttl = CACHE_TTL.person_enrichment.foundMs;
    await cache.put('person_enrichment', ada, USE, found('req_1'), T0);
    await cache.put(
      'person_enrichment',
      { email: 'grace@example.com' },
      USE,
      found('req_2'),
      T0 + ttl,
    );
    const after = T0 + ttl + 1;
    expect(await cache.get('person_enrichment', ada, USE, after)).toBeUndefined();
    expect((await cache.stats(after))[0]).toMatchObject({ entries: 2, expired: 1 });
    expect(await cache.sweep(after)).toEqual({ expired: 1 });
    expect((await cache.stats(after))[0]).toMatchObject({ entries: 1, expired: 0 });
    expect(
      await cache.get('person_enrichment', { email: 'grace@example.com' }, USE, after),
    ).toBeDefined();
  });

  it('an empty result serves for the shorter time', async () => {
    const cache = new ResultCache(await storeIn());
    const { foundMs, emptyMs } = CACHE_TTL.person_enrichment;
    expect(emptyMs).toBeLessThan(foundMs);
    await cache.put('person_enrichment', ada, USE, empty('req_e'), T0);
    await cache.put('person_enrichment', { email: 'grace@example.com' }, USE, found('req_f'), T0);
    const between = T0 + emptyMs + 1;
    expect(await cache.get('person_enrichment', ada, USE, T0 + emptyMs - 1)).toEqual({
      outcome: 'empty',
      requestId: 'req_e',
      status: 'completed',
      fetchedAt: T0,
    });
    expect(await cache.get('person_enrichment', ada, USE, between)).toBeUndefined();
    expect(
      await cache.get('person_enrichment', { email: 'grace@example.com' }, USE, between),
    ).toMatchObject({ outcome: 'found' });
  });

  it('fill puts an expected job, and does nothing for a job no call expected', async () => {
    const cache = new ResultCache(await storeIn());
    await cache.fill('req_unexpected', found('req_unexpected'), T0);
    expect(await cache.stats(T0)).toEqual([]);
    await cache.expect('req_1', 'person_enrichment', ada, USE, T0);
    expect(await cache.get('person_enrichment', ada, USE, T0)).toBeUndefined();
    const result = { full_name: 'Ada Lovelace', jobs: [{ title: 'Analyst', from: 1843 }], n: 1.5 };
    await cache.fill('req_1', { outcome: 'found', status: 'completed', result }, T0 + 5);
    expect(await cache.get('person_enrichment', ada, USE, T0 + 6)).toEqual({
      outcome: 'found',
      requestId: 'req_1',
      status: 'completed',
      result,
      fetchedAt: T0 + 5,
    });
    // The pending record is gone: a second read of the job fills nothing more.
    await cache.purge({});
    await cache.fill('req_1', { outcome: 'found', status: 'completed', result }, T0 + 7);
    expect(await cache.stats(T0 + 8)).toEqual([]);
    // A run that does not fill the cache expects nothing.
    await cache.expect('req_2', 'person_enrichment', ada, { mode: 'off' }, T0);
    await cache.fill('req_2', { outcome: 'found', status: 'completed', result }, T0);
    expect(await cache.stats(T0)).toEqual([]);
  });

  it('purges by endpoint and by age', async () => {
    const cache = new ResultCache(await storeIn());
    await cache.put('person_enrichment', ada, USE, found('req_1'), T0);
    await cache.put(
      'person_enrichment',
      { email: 'grace@example.com' },
      USE,
      found('req_2'),
      T0 + 2 * DAY,
    );
    await cache.put('company_enrichment', { domain: 'example.com' }, USE, found('req_3'), T0);
    const now = T0 + 3 * DAY;
    expect(await cache.purge({ endpoint: 'company_enrichment' }, now)).toBe(1);
    expect(await cache.purge({ olderThanMs: 2 * DAY }, now)).toBe(1);
    expect(await cache.get('person_enrichment', ada, USE, now)).toBeUndefined();
    expect(
      await cache.get('person_enrichment', { email: 'grace@example.com' }, USE, now),
    ).toBeDefined();
  });

  it('erases what a request named: an email and a URL, normalised as lookups are', async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const other = { email: 'grace@example.com' };
    await cache.put('person_enrichment', ada, USE, found('req_1'), T0);
    await cache.put('person_lookup_fields', { ...ada, fields: ['name'] }, USE, found('req_2'), T0);
    await cache.put('person_enrichment', other, USE, found('req_3'), T0);
    const profile = { social_media_url: 'linkedin.com/in/x' };
    await cache.put('person_enrichment', profile, USE, empty('req_4'), T0);
    // A call still pending on the address is forgotten too: its result fills nothing.
    await cache.expect('req_5', 'person_newsfeed', ada, USE, T0);

    const byEmail = await eraseFromStore(store, { emails: [' Ada@Example.COM '] }, { nowMs: T0 });
    expect(byEmail.removed).toMatchObject({ cacheEntries: 2, pendingCalls: 1 });
    await cache.fill('req_5', found('req_5'), T0);
    expect(await cache.get('person_newsfeed', ada, USE, T0)).toBeUndefined();
    expect(await cache.get('person_enrichment', ada, USE, T0)).toBeUndefined();
    expect(await cache.get('person_enrichment', other, USE, T0)).toBeDefined();

    const byUrl = await eraseFromStore(store, { urls: ['https://www.linkedin.com/in/x/'] });
    expect(byUrl.removed.cacheEntries).toBe(1);
    expect(await cache.get('person_enrichment', profile, USE, T0)).toBeUndefined();
    expect((await cache.stats(T0))[0]).toMatchObject({ entries: 1 });
  });

  it('keeps neither the email nor a result value in clear in the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-cache-'));
    const cache = new ResultCache(await storeIn(dir));
    await cache.put(
      'person_enrichment',
      { email: 'ada.lovelace@analytical.example' },
      USE,
      found('req_1', { full_name: 'Augusta Ada King', city: 'Marylebone' }),
      T0,
    );
    await cache.expect(
      'req_2',
      'person_newsfeed',
      { email: 'charles.babbage@engine.example' },
      USE,
      T0,
    );
    // Read while the store is open: what is still in the write-ahead log counts too.
    const files = readdirSync(dir);
    expect(files.some((f) => f.endsWith('-wal'))).toBe(true);
    const raw = files.map((f) => readFileSync(join(dir, f)).toString('latin1')).join('');
    expect(raw).toContain('req_1');
    const seen = [
      'ada.lovelace',
      'analytical.example',
      'charles.babbage',
      'Augusta Ada King',
      'Marylebone',
    ].filter((v) => raw.includes(v));
    expect(seen).toEqual([]);
  });
});

const people = [
  { email: 'ada@example.com' },
  { email: 'grace@example.com' },
  { email: 'ADA@example.com ' },
  { email: 'alan@example.com' },
];

async function loaded(batches: BatchStore, batchId: string, cache?: CacheUse) {
  await batches.beginLoad(batchId, 'person_enrichment', ['email'], cache);
  await batches.addRows(
    batchId,
    'person_enrichment',
    people.map((params, i) => ({ row: i + 1, params, key: { row: i + 1 } })),
  );
  return batches.finishLoad(batchId, { blankLines: 0, dedupe: true });
}

const line = (row: number, outcome: ResultLine['outcome'], requestId: string): ResultLine => ({
  row,
  key: { row },
  outcome,
  requestId,
  ...(outcome === 'found' ? { result: { full_name: `person ${row}` } } : {}),
  ...(outcome === 'failed' ? { code: 'service_error', message: 'the service failed' } : {}),
});

describe('result cache: batches', () => {
  it('expectedHits counts the leader rows of a loaded batch that have fresh entries', async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const batches = new BatchStore(store);
    await loaded(batches, 'b1', USE);
    const now = Date.now();
    // Rows 1 and 3 share one call (3 repeats 1): one hit.
    await cache.put('person_enrichment', people[0], USE, found('req_1'), now - 2 * DAY);
    await cache.put('person_enrichment', people[1], USE, empty('req_2'), now);
    expect(await cache.expectedHits('b1', USE, now)).toEqual({ rows: 2, found: 1 });
    expect(await cache.expectedHits('b1', { mode: 'use', maxAgeMs: DAY }, now)).toEqual({
      rows: 1,
      found: 0,
    });
    expect(await cache.expectedHits('b1', { mode: 'off' }, now)).toEqual({ rows: 0, found: 0 });
    expect(await cache.expectedHits('b1', USE, now + 8 * DAY)).toEqual({ rows: 1, found: 1 });
  });

  it("fills from a batch's found and empty rows, and a later batch takes them marked cached", async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const batches = new BatchStore(store);
    await loaded(batches, 'b1', USE);
    const first = await batches.readRows('b1', 1, 10);
    expect(first.cache).toEqual({ hits: 0, misses: 3 });
    await batches.writeResults('b1', [
      line(1, 'found', 'req_1'),
      line(2, 'failed', 'req_2'),
      line(4, 'empty', 'req_4'),
    ]);
    expect((await cache.stats())[0]).toMatchObject({ entries: 2, found: 1, empty: 1 });
    // A failure is never cached.
    expect(await cache.get('person_enrichment', people[1], USE)).toBeUndefined();

    await loaded(batches, 'b2', USE);
    const second = await batches.readRows('b2', 1, 10);
    expect(second.cache).toEqual({ hits: 2, misses: 1 });
    const marks = second.rows.map((r) => ('cached' in r ? r.cached : undefined));
    expect(marks[0]).toMatchObject({ outcome: 'found', requestId: 'req_1' });
    expect(marks[1]).toBeUndefined();
    // Row 3 shares row 1's call: the batch gives it row 1's line.
    expect(marks[2]).toBeUndefined();
    expect(marks[3]).toMatchObject({ outcome: 'empty', requestId: 'req_4' });
    const { lines } = await batches.results('b2');
    expect(lines.map((l) => l.row)).toEqual([1, 4]);
    expect(lines[0]).toMatchObject({
      outcome: 'found',
      requestId: 'req_1',
      cached: true,
      result: { full_name: 'person 1' },
    });
    expect(Date.parse(lines[0].fetchedAt!)).toBeGreaterThan(0);
    expect(lines[0].fetchedAt).toBe(marks[0]!.fetchedAt);
    expect(lines[1]).toMatchObject({ outcome: 'empty', requestId: 'req_4', cached: true });
    // Read again (a run that continued as new): the same marks from the written lines, no new hit.
    const again = await batches.readRows('b2', 1, 10);
    expect(again.rows.map((r) => ('cached' in r ? r.cached : undefined))).toEqual(marks);
    expect(again.cache).toEqual({ hits: 0, misses: 1 });
    // The first batch's own lines are not marked.
    const own = await batches.results('b1');
    expect(own.lines.some((l) => l.cached)).toBe(false);
    expect((await cache.stats())[0]).toMatchObject({ hits: 2 });
  });

  it("a batch's maxAgeMs leaves out older entries", async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const batches = new BatchStore(store);
    await cache.put('person_enrichment', people[0], USE, found('req_old'), Date.now() - 2 * HOUR);
    await cache.put('person_enrichment', people[1], USE, found('req_new'), Date.now());
    await loaded(batches, 'recent', { mode: 'use', maxAgeMs: HOUR });
    const read = await batches.readRows('recent', 1, 10);
    expect(read.rows.map((r) => ('cached' in r ? r.cached?.requestId : undefined))).toEqual([
      undefined,
      'req_new',
      undefined,
      undefined,
    ]);
  });

  it('a batch with the cache off neither reads nor fills it', async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const batches = new BatchStore(store);
    await cache.put('person_enrichment', people[0], USE, found('req_old'), Date.now());
    await loaded(batches, 'off', { mode: 'off' });
    const read = await batches.readRows('off', 1, 10);
    expect(read.rows.some((r) => 'cached' in r && r.cached)).toBe(false);
    expect(read.cache).toEqual({ hits: 0, misses: 0 });
    await batches.writeResults('off', [line(1, 'found', 'req_new'), line(2, 'found', 'req_2')]);
    expect((await cache.stats())[0]).toMatchObject({ entries: 1, hits: 0 });
    expect(await cache.get('person_enrichment', people[0], USE)).toMatchObject({
      requestId: 'req_old',
    });
  });

  it('a batch that refreshes does not read the cache but replaces its entries', async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const batches = new BatchStore(store);
    await cache.put('person_enrichment', people[0], USE, found('req_old'), Date.now() - DAY);
    await loaded(batches, 'fresh', { mode: 'refresh' });
    const read = await batches.readRows('fresh', 1, 10);
    expect(read.rows.some((r) => 'cached' in r && r.cached)).toBe(false);
    await batches.writeResults('fresh', [line(1, 'found', 'req_new')]);
    const entry = await cache.get('person_enrichment', people[0], USE);
    expect(entry).toMatchObject({ requestId: 'req_new', result: { full_name: 'person 1' } });
    expect(Date.now() - entry!.fetchedAt!).toBeLessThan(DAY / 2);
  });

  it("an erasure finds the entries a batch's rows filled", async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const batches = new BatchStore(store);
    await loaded(batches, 'b1', USE);
    await batches.writeResults('b1', [line(1, 'found', 'req_1'), line(2, 'found', 'req_2')]);
    expect((await eraseFromStore(store, { emails: ['Ada@Example.com'] })).removed).toMatchObject({
      cacheEntries: 1,
      // Rows 1 and 3 (the same address, another spelling) are erased rows now.
      batchRows: 2,
    });
    expect(await cache.get('person_enrichment', people[0], USE)).toBeUndefined();
    expect(await cache.get('person_enrichment', people[1], USE)).toBeDefined();
  });
});

describe('result cache: scope per tenant', () => {
  const alice: CacheUse = { mode: 'use', tenant: 'alice' };
  const bob: CacheUse = { mode: 'use', tenant: 'bob' };

  it("per tenant, a tenant finds only its own entries; the operator's are the deployment's from before tenants", async () => {
    const cache = new ResultCache(await storeIn());
    await cache.put('person_enrichment', ada, alice, found('req_alice'), T0);
    expect(await cache.get('person_enrichment', ada, bob, T0 + 1)).toBeUndefined();
    expect(await cache.get('person_enrichment', ada, USE, T0 + 1)).toBeUndefined();
    expect(await cache.get('person_enrichment', ada, alice, T0 + 1)).toMatchObject({
      requestId: 'req_alice',
      fetchedAt: T0,
    });
    await cache.put('person_enrichment', ada, USE, found('req_operator'), T0);
    expect(await cache.get('person_enrichment', ada, USE, T0 + 1)).toMatchObject({
      requestId: 'req_operator',
    });
    expect(await cache.get('person_enrichment', ada, bob, T0 + 1))?.toBeUndefined();
    // A single call's expected job fills the entry of the tenant that expected it.
    await cache.expect('req_bob', 'person_enrichment', ada, bob, T0);
    await cache.fill('req_bob', { outcome: 'empty', status: 'completed' }, T0 + 2);
    expect(await cache.get('person_enrichment', ada, bob, T0 + 3)).toMatchObject({
      outcome: 'empty',
      requestId: 'req_bob',
    });
  });

  it("shared, every tenant finds an entry, but another tenant's fetch shows neither its request id nor its time, in calls and in a batch's lines", async () => {
    const store = await storeIn();
    const cache = new ResultCache(store);
    const sharedAlice: CacheUse = { ...alice, shared: true };
    const sharedBob: CacheUse = { ...bob, shared: true };
    // Now: a batch reads the cache at its own time.
    const now = Date.now();
    await cache.put('person_enrichment', people[0], sharedAlice, found('req_alice'), now);
    expect(await cache.get('person_enrichment', people[0], sharedAlice, now + 1)).toMatchObject({
      requestId: 'req_alice',
      fetchedAt: now,
    });
    const bobs = await cache.get('person_enrichment', people[0], sharedBob, now + 1);
    expect(bobs).toEqual({
      outcome: 'found',
      status: 'completed',
      result: { full_name: 'Ada Lovelace' },
    });

    const batches = new BatchStore(store);
    await loaded(batches, 'bob-batch', sharedBob);
    const read = await batches.readRows('bob-batch', 1, 10);
    expect(read.cache.hits).toBe(1);
    const mark = read.rows.map((r) => ('cached' in r ? r.cached : undefined))[0];
    expect(mark).toEqual({ outcome: 'found' });
    const { lines } = await batches.results('bob-batch');
    expect(lines[0]).toMatchObject({ row: 1, outcome: 'found', cached: true });
    expect(lines[0].requestId).toBeUndefined();
    expect(lines[0].fetchedAt).toBeUndefined();
    expect(JSON.stringify(lines)).not.toContain('req_alice');
  });
});
