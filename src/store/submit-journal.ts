// The submit journal of compact rows in the store (the protocol is in batch/journal.ts). Each step
// is one statement that compares and sets, so two attempts never both hold a row's claim.
import type { Kysely } from 'kysely';
import type { Claim, JournalEntry } from '../batch/journal.js';
import type { StoreSchema } from './schema.js';

/**
 * Claims `row` for `owner` just before its POST: the row is this attempt's when nobody claimed
 * it, when an earlier attempt released it, or when this attempt holds the claim already.
 * Otherwise the earlier entry is returned (a job to poll, or a send that may have landed).
 */
export async function claimJournalRow(
  db: Kysely<StoreSchema>,
  batchId: string,
  row: number,
  owner: string,
): Promise<Claim> {
  const inserted = await db
    .insertInto('pcds_journal')
    .values({
      batch_id: batchId,
      row,
      state: 'sending',
      owner,
      key_id: null,
      request_id: null,
      status: null,
      accepted_at: null,
    })
    .onConflict((oc) => oc.columns(['batch_id', 'row']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1) return { mine: true };
  const taken = await db
    .updateTable('pcds_journal')
    .set({ state: 'sending', owner, key_id: null, request_id: null, status: null })
    .where('batch_id', '=', batchId)
    .where('row', '=', row)
    .where((eb) =>
      eb.or([
        eb('state', '=', 'released'),
        eb.and([eb('state', '=', 'sending'), eb('owner', '=', owner)]),
      ]),
    )
    .executeTakeFirst();
  if (Number(taken.numUpdatedRows) === 1) return { mine: true };
  const entry = await journalEntry(db, batchId, row);
  return entry ? { mine: false, entry } : claimJournalRow(db, batchId, row, owner);
}

/** A row's entry in the journal; undefined when it was never claimed. */
export async function journalEntry(
  db: Kysely<StoreSchema>,
  batchId: string,
  row: number,
): Promise<JournalEntry | undefined> {
  const e = await db
    .selectFrom('pcds_journal')
    .selectAll()
    .where('batch_id', '=', batchId)
    .where('row', '=', row)
    .executeTakeFirst();
  if (!e) return undefined;
  return {
    row: Number(e.row),
    state: e.state,
    owner: e.owner,
    ...(e.key_id !== null ? { keyId: e.key_id } : {}),
    ...(e.request_id !== null ? { requestId: e.request_id } : {}),
    ...(e.status !== null ? { status: e.status } : {}),
    ...(e.accepted_at !== null ? { acceptedAt: Number(e.accepted_at) } : {}),
  };
}

/**
 * Records what became of `entry.owner`'s claim (the accepted job, or nothing sent). Only the
 * claim's holder records: a zombie attempt whose claim was taken over changes nothing.
 */
export async function recordJournalRow(
  db: Kysely<StoreSchema>,
  batchId: string,
  entry: JournalEntry,
): Promise<boolean> {
  const res = await db
    .updateTable('pcds_journal')
    .set({
      state: entry.state,
      key_id: entry.keyId ?? null,
      request_id: entry.requestId ?? null,
      status: entry.status ?? null,
      accepted_at: entry.acceptedAt ?? null,
    })
    .where('batch_id', '=', batchId)
    .where('row', '=', entry.row)
    .where('owner', '=', entry.owner)
    .where('state', '=', 'sending')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}
