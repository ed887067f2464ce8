// The batch store over the embedded engine: one result per row by the key, duplicates found by
// the database, the submit journal's compare-and-set, and nothing personal in the file.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BatchStore,
  MAX_DELIVERIES_PER_ROW,
  createSealer,
  openStore,
  type Store,
} from '../../../src/store/index.js';

const keyring = () => ({
  currentKeyId: 'k1',
  keys: new Map([['k1', new Uint8Array(randomBytes(32))]]),
});
const idSecret = { key: randomBytes(32) };

const open: Store[] = [];
async function storeIn(dir: string, encrypted = true): Promise<BatchStore> {
  const store = await openStore({
    url: `sqlite:${join(dir, 'store.sqlite')}`,
    dataDir: dir,
    sealer: createSealer(encrypted ? keyring() : undefined, idSecret),
  });
  open.push(store);
  return new BatchStore(store);
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

const people = [
  { email: 'ada.lovelace@example.org' },
  { email: 'grace.hopper@example.org' },
  { email: ' ADA.LOVELACE@example.org ' },
];

async function loaded(store: BatchStore, batchId = 'b1', dedupe = true) {
  await store.beginLoad(batchId, 'person_enrichment', ['email']);
  await store.addRows(
    batchId,
    'person_enrichment',
    people.map((params, i) => ({ row: i + 1, params, key: { row: i + 1 } })),
  );
  await store.addRows(batchId, 'person_enrichment', [
    { row: 4, problem: 'email: not an email address', key: { row: 4 } },
  ]);
  return store.finishLoad(batchId, { blankLines: 2, dedupe });
}

describe('batch store (embedded)', () => {
  it('counts the rows and finds duplicates once normalised', async () => {
    const store = await storeIn(mkdtempSync(join(tmpdir(), 'pcds-store-')));
    const record = await loaded(store);
    expect(record).toMatchObject({ state: 'loaded', total: 4, invalid: 1, blankLines: 2 });
    expect(record.columns).toEqual(['email']);
    const { rows, done } = await store.readRows('b1', 1, 10);
    expect(done).toBe(true);
    expect(rows.map((r) => ('duplicateOf' in r ? r.duplicateOf : undefined))).toEqual([
      undefined,
      undefined,
      1,
      undefined,
    ]);
    expect(rows[0]).toMatchObject({ row: 1, params: people[0], followers: 1 });
    expect(rows[3]).toMatchObject({ row: 4, code: 'invalid_row' });
  });

  it("gives a duplicate its leader's end once the leader has its result", async () => {
    const store = await storeIn(mkdtempSync(join(tmpdir(), 'pcds-store-')));
    await loaded(store);
    const before = await store.readRows('b1', 3, 1);
    expect(before.rows[0]).toMatchObject({ row: 3, duplicateOf: 1 });
    expect(before.rows[0]).not.toHaveProperty('leaderLine');
    await store.writeResults('b1', [
      { row: 1, key: { row: 1 }, outcome: 'failed', code: 'not_found', requestId: 'req_1' },
    ]);
    const after = await store.readRows('b1', 3, 1);
    expect(after.rows[0]).toMatchObject({
      row: 3,
      duplicateOf: 1,
      leaderLine: { outcome: 'failed', code: 'not_found' },
    });
  });

  it("counts a chunk's duplicates through an index, not a scan of the batch's rows", async () => {
    const store = await storeIn(mkdtempSync(join(tmpdir(), 'pcds-store-')));
    await loaded(store);
    // The query each read makes for its leaders (BatchStore.followerCounts): with the batch's
    // rows scanned, a read of a million-row batch took seconds.
    const { db } = open[open.length - 1];
    const query = db
      .selectFrom('pcds_rows')
      .select(['duplicate_of', (eb) => eb.fn.countAll<number>().as('n')])
      .where('batch_id', '=', 'b1')
      .where('duplicate_of', 'in', [1, 2])
      .groupBy('duplicate_of')
      .compile();
    const compiled = CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]);
    const steps = (await db.executeQuery<{ detail: string }>(compiled)).rows.map((r) => r.detail);
    expect(steps.join('\n')).toMatch(/USING (COVERING )?INDEX pcds_rows_duplicate_of/);
  });

  it('without dedupe every row is its own call', async () => {
    const store = await storeIn(mkdtempSync(join(tmpdir(), 'pcds-store-')));
    await loaded(store, 'b2', false);
    const { rows } = await store.readRows('b2', 1, 10);
    expect(rows.some((r) => 'duplicateOf' in r && r.duplicateOf !== undefined)).toBe(false);
  });

  it('writes one result per row, copies a leader to its duplicates, and pages them', async () => {
    const store = await storeIn(mkdtempSync(join(tmpdir(), 'pcds-store-')));
    await loaded(store);
    const first = await store.writeResults('b1', [
      { row: 1, key: { row: 1 }, outcome: 'found', requestId: 'req_1', result: { name: 'Ada' } },
      { row: 3, key: { row: 3 }, outcome: 'found', duplicateOf: 1 },
    ]);
    expect(first).toMatchObject({ written: 2, skipped: 0 });
    expect(first.inserted).toEqual([
      { row: 1, outcome: 'found' },
      { row: 3, outcome: 'found' },
    ]);
    // A retried write, and a zombie's different write, change nothing.
    const again = await store.writeResults('b1', [
      { row: 1, key: { row: 1 }, outcome: 'failed', code: 'timeout' },
    ]);
    expect(again).toEqual({ written: 0, skipped: 1, inserted: [] });
    await store.writeResults('b1', [
      { row: 2, key: { row: 2 }, outcome: 'empty', requestId: 'req_2' },
      { row: 4, key: { row: 4 }, outcome: 'failed', code: 'invalid_row', message: 'email: bad' },
    ]);
    const all = await store.results('b1');
    expect(all.lines.map((l) => [l.row, l.outcome])).toEqual([
      [1, 'found'],
      [2, 'empty'],
      [3, 'found'],
      [4, 'failed'],
    ]);
    expect(all.lines[2]).toMatchObject({
      requestId: 'req_1',
      result: { name: 'Ada' },
      duplicateOf: 1,
    });
    const failed = await store.results('b1', { outcome: 'failed' });
    expect(failed.lines.map((l) => l.row)).toEqual([4]);
    const page1 = await store.results('b1', { limit: 2 });
    expect(page1.lines.map((l) => l.row)).toEqual([1, 2]);
    const page2 = await store.results('b1', { limit: 2, after: page1.next });
    expect(page2.lines.map((l) => l.row)).toEqual([3, 4]);
    const reread = await store.readRows('b1', 1, 10, { skipWritten: true });
    expect(reread.rows).toEqual([]);
  });

  it('journal: one claim at a time; a released row is claimed again; only the holder records', async () => {
    const store = await storeIn(mkdtempSync(join(tmpdir(), 'pcds-store-')));
    await loaded(store);
    expect(await store.claimRow('b1', 1, 'a')).toEqual({ mine: true });
    expect(await store.claimRow('b1', 1, 'a')).toEqual({ mine: true });
    const other = await store.claimRow('b1', 1, 'b');
    expect(other).toMatchObject({ mine: false, entry: { state: 'sending', owner: 'a' } });
    expect(await store.recordRow('b1', { row: 1, state: 'released', owner: 'b' })).toBe(false);
    expect(await store.recordRow('b1', { row: 1, state: 'released', owner: 'a' })).toBe(true);
    expect(await store.claimRow('b1', 1, 'b')).toEqual({ mine: true });
    expect(
      await store.recordRow('b1', {
        row: 1,
        state: 'accepted',
        owner: 'b',
        requestId: 'req_9',
        keyId: 'k',
      }),
    ).toBe(true);
    expect(await store.claimRow('b1', 1, 'c')).toMatchObject({
      mine: false,
      entry: { state: 'accepted', requestId: 'req_9' },
    });
  });

  it("keeps a compact row's deliveries sealed, once per job and bounded, until the row ends", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-store-'));
    const store = await storeIn(dir);
    await loaded(store);
    const envelope = (requestId: string) => ({
      success: true,
      data: { request_id: requestId, status: 'completed', result: { full_name: 'Ada Byron' } },
    });
    expect(await store.recordDelivery('b1', 1, 'req_1', envelope('req_1'), 1_000)).toBe('recorded');
    // Repeated by the service: nothing more.
    expect(await store.recordDelivery('b1', 1, 'req_1', envelope('req_1'), 2_000)).toBe(
      'duplicate',
    );
    // A failure envelope names no job: kept under no request id, once.
    const failure = { success: false, error: { code: 'internal_error' } };
    expect(await store.recordDelivery('b1', 1, undefined, failure, 3_000)).toBe('recorded');
    expect(await store.recordDelivery('b1', 1, undefined, failure, 3_500)).toBe('duplicate');
    // The row reads its own job's and those naming none, oldest first; another job's stays out.
    expect(await store.recordDelivery('b1', 1, 'req_other', envelope('req_other'), 4_000)).toBe(
      'recorded',
    );
    expect(await store.deliveries('b1', 1, 'req_1')).toEqual([
      { requestId: 'req_1', body: envelope('req_1'), receivedAt: 1_000 },
      { body: failure, receivedAt: 3_000 },
    ]);
    expect(await store.deliveries('b1', 2, 'req_1')).toEqual([]);
    // A row keeps at most MAX_DELIVERIES_PER_ROW: a leaked URL cannot fill the store.
    for (let i = 0; i < MAX_DELIVERIES_PER_ROW - 3; i++)
      expect(await store.recordDelivery('b1', 1, `req_x${i}`, envelope('x'))).toBe('recorded');
    expect(await store.recordDelivery('b1', 1, 'req_flood', envelope('flood'))).toBe('over_bound');
    // The envelope is sealed in the file.
    await Promise.all(open.splice(0).map((s) => s.close()));
    const raw = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f)).toString('latin1'))
      .join('');
    expect(raw).not.toContain('Ada Byron');
    // The row's result is written: its deliveries go, and later ones are not kept.
    const again = await storeIn(dir);
    await again.writeResults('b1', [{ row: 1, key: { row: 1 }, outcome: 'found' }]);
    expect(await again.deliveries('b1', 1, 'req_1')).toEqual([]);
    expect(await again.recordDelivery('b1', 1, 'req_1', envelope('req_1'))).toBe('finished');
  });

  it('keeps no person data in clear in the file, unless encryption is off', async () => {
    for (const encrypted of [true, false]) {
      const dir = mkdtempSync(join(tmpdir(), 'pcds-store-'));
      const store = await storeIn(dir, encrypted);
      await loaded(store);
      await store.writeResults('b1', [
        { row: 1, key: { row: 1 }, outcome: 'found', result: { full_name: 'Ada Lovelace Byron' } },
      ]);
      await Promise.all(open.splice(0).map((s) => s.close()));
      // The file is its owner's only, as every file of results is.
      expect(statSync(join(dir, 'store.sqlite')).mode & 0o777).toBe(0o600);
      const raw = readdirSync(dir)
        .map((f) => readFileSync(join(dir, f)).toString('latin1'))
        .join('');
      const seen = ['ada.lovelace@example.org', 'grace.hopper', 'Ada Lovelace Byron'].filter((v) =>
        raw.includes(v),
      );
      expect(seen).toEqual(
        encrypted ? [] : ['ada.lovelace@example.org', 'grace.hopper', 'Ada Lovelace Byron'],
      );
    }
  });

  it('refuses to load a batch id that already has its rows', async () => {
    const store = await storeIn(mkdtempSync(join(tmpdir(), 'pcds-store-')));
    await loaded(store);
    await expect(store.beginLoad('b1', 'person_enrichment')).rejects.toMatchObject({
      code: 'batch_exists',
    });
  });
});
