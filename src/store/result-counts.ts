// A batch's results counted in the store: by outcome and code, the shared, sent and cached ones,
// and the first failed rows (what a batch's counters and summary are made of).
import type { Kysely } from 'kysely';
import type { StoreSchema } from './schema.js';

/** Counts of results by outcome and failure code. */
export async function resultsByOutcome(
  db: Kysely<StoreSchema>,
  batchId: string,
): Promise<{ outcome: string; code: string | null; n: number }[]> {
  const got = await db
    .selectFrom('pcds_results')
    .select(['outcome', 'code', (eb) => eb.fn.countAll<number>().as('n')])
    .where('batch_id', '=', batchId)
    .groupBy(['outcome', 'code'])
    .execute();
  return got.map((g) => ({ outcome: g.outcome, code: g.code, n: Number(g.n) }));
}

/** Results that shared a call, and found results that were sent (charged) themselves. */
export async function resultCounts(
  db: Kysely<StoreSchema>,
  batchId: string,
): Promise<{
  duplicates: number;
  foundSent: number;
  /** Rows the result cache answered, and the found among them. */
  cached: number;
  cachedFound: number;
}> {
  const got = await db
    .selectFrom('pcds_results')
    .select((eb) => [
      eb.fn.count<number>('duplicate_of').as('duplicates'),
      eb.fn
        .sum<number>(
          eb
            .case()
            .when(
              eb.and([
                eb('outcome', '=', 'found'),
                eb('duplicate_of', 'is', null),
                eb('cached_at', 'is', null),
              ]),
            )
            .then(1)
            .else(0)
            .end(),
        )
        .as('found_sent'),
      eb.fn
        .sum<number>(
          eb
            .case()
            .when(eb.and([eb('cached_at', 'is not', null), eb('duplicate_of', 'is', null)]))
            .then(1)
            .else(0)
            .end(),
        )
        .as('cached'),
      eb.fn
        .sum<number>(
          eb
            .case()
            .when(
              eb.and([
                eb('cached_at', 'is not', null),
                eb('duplicate_of', 'is', null),
                eb('outcome', '=', 'found'),
              ]),
            )
            .then(1)
            .else(0)
            .end(),
        )
        .as('cached_found'),
    ])
    .where('batch_id', '=', batchId)
    .executeTakeFirstOrThrow();
  return {
    duplicates: Number(got.duplicates),
    foundSent: Number(got.found_sent ?? 0),
    cached: Number(got.cached ?? 0),
    cachedFound: Number(got.cached_found ?? 0),
  };
}

/** The failed results with the lowest row numbers. */
export async function firstFailed(
  db: Kysely<StoreSchema>,
  batchId: string,
  limit = 10,
): Promise<{ row: number; code: string | null }[]> {
  const got = await db
    .selectFrom('pcds_results')
    .select(['row', 'code'])
    .where('batch_id', '=', batchId)
    .where('outcome', '=', 'failed')
    .orderBy('row')
    .limit(limit)
    .execute();
  return got.map((g) => ({ row: Number(g.row), code: g.code }));
}
