// Webhook deliveries of compact rows in the store: the receiver keeps them (sealed, bounded per
// row), the row's activity reads them, and a row's result, once written, removes them.
import type { Kysely } from 'kysely';
import type { DeliveryRecording, StoredDelivery } from './roles.js';
import type { StoreSchema } from './schema.js';
import type { Sealer } from './sealer.js';

/** Deliveries kept per row at most: its job's, and one failure envelope, with room to spare. */
export const MAX_DELIVERIES_PER_ROW = 4;

/**
 * Keeps a delivery for a compact row, sealed: once per (row, request id), at most
 * MAX_DELIVERIES_PER_ROW per row, and never for a row that has its result.
 */
export async function keepDelivery(
  db: Kysely<StoreSchema>,
  seal: Sealer,
  batchId: string,
  row: number,
  requestId: string | undefined,
  body: unknown,
  nowMs = Date.now(),
): Promise<DeliveryRecording> {
  return db.transaction().execute(async (tx) => {
    const ended = await tx
      .selectFrom('pcds_results')
      .select('row')
      .where('batch_id', '=', batchId)
      .where('row', '=', row)
      .executeTakeFirst();
    if (ended) return 'finished';
    const kept = await tx
      .selectFrom('pcds_deliveries')
      .select('request_id')
      .where('batch_id', '=', batchId)
      .where('row', '=', row)
      .execute();
    if (kept.some((k) => k.request_id === (requestId ?? ''))) return 'duplicate';
    if (kept.length >= MAX_DELIVERIES_PER_ROW) return 'over_bound';
    const res = await tx
      .insertInto('pcds_deliveries')
      .values({
        batch_id: batchId,
        row,
        request_id: requestId ?? '',
        body: seal.seal(body),
        received_at: nowMs,
        subjects: seal.subjects(body),
      })
      .onConflict((oc) => oc.columns(['batch_id', 'row', 'request_id']).doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) === 1 ? 'recorded' : 'duplicate';
  });
}

/** The deliveries kept for a row that name `requestId` or no job (failure envelopes), opened, oldest first. */
export async function keptDeliveries(
  db: Kysely<StoreSchema>,
  seal: Sealer,
  batchId: string,
  row: number,
  requestId: string,
): Promise<StoredDelivery[]> {
  const got = await db
    .selectFrom('pcds_deliveries')
    .select(['request_id', 'body', 'received_at'])
    .where('batch_id', '=', batchId)
    .where('row', '=', row)
    .where('request_id', 'in', [requestId, ''])
    .orderBy('received_at')
    .execute();
  return got.map((d) => ({
    ...(d.request_id ? { requestId: d.request_id } : {}),
    body: seal.open(d.body),
    receivedAt: Number(d.received_at),
  }));
}
