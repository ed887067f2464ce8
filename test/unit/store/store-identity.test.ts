// A store's identity: made once by its migrations, the same for every process that opens the
// store, another for another store; and the check a worker makes of a batch's recorded store.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { storeMismatch } from '../../../src/store/index.js';
import { tempStore } from './temp-store.js';

describe('store identity', () => {
  it('is made once: reopening the store (another process) reads the same id; another store has another', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-store-id-'));
    const first = await tempStore(dir);
    const again = await tempStore(dir);
    const other = await tempStore();
    expect(first.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(again.id).toBe(first.id);
    expect(other.id).not.toBe(first.id);
  });
});

describe('storeMismatch', () => {
  const mine = { id: 'aaaaaaaa-1111-4111-8111-111111111111', shown: 'postgres://pcds:***@db/pcds' };

  it('lets the batch of this store through, and a batch that recorded no store (started before)', () => {
    expect(storeMismatch({ id: mine.id, shown: 'another name, same store' }, mine)).toBeUndefined();
    expect(storeMismatch({}, mine)).toBeUndefined();
    expect(storeMismatch(undefined, mine)).toBeUndefined();
  });

  it('names both stores, their ids and the setting to fix on both sides', () => {
    const why = storeMismatch(
      { id: 'bbbbbbbb-2222-4222-8222-222222222222', shown: 'sqlite:/srv/app/.data/store.sqlite' },
      mine,
    );
    expect(why).toBe(
      "the batch's rows are in the store sqlite:/srv/app/.data/store.sqlite (store id bbbbbbbb), " +
        'where the client that started it loaded them, but this worker uses ' +
        'postgres://pcds:***@db/pcds (store id aaaaaaaa): set PCDS_STORE_URL to the same store on ' +
        'the client (CLI, service, pcds mcp) and on every worker',
    );
  });
});
