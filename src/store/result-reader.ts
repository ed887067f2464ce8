// A batch's results read back from the store, opened: pages of lines in input or completion
// order, input rows beside their results, result values alone, and results with no input row.
import type { Kysely } from 'kysely';
import type { ResultLine } from '../batch/types.js';
import type { ResultLinesPage, ResultLinesQuery } from './roles.js';
import type { StoreSchema } from './schema.js';
import type { Sealer } from './sealer.js';

/** cached_at of a result another tenant's request fetched (a shared cache): no time is shown. */
export const HIDDEN_FETCH_TIME = 0;

/**
 * Results in row order (or the order they were written), joined with each row's key, opened.
 * `after`: the last row (input order) or [written_at, row] (completion order) already seen.
 */
export async function resultLines(
  db: Kysely<StoreSchema>,
  seal: Sealer,
  batchId: string,
  opts: ResultLinesQuery = {},
): Promise<ResultLinesPage> {
  const limit = Math.max(1, Math.min(opts.limit ?? 1000, 10_000));
  let q = db
    .selectFrom('pcds_results as res')
    .innerJoin('pcds_rows as r', (j) =>
      j.onRef('r.batch_id', '=', 'res.batch_id').onRef('r.row', '=', 'res.row'),
    )
    .select([
      'res.row',
      'res.outcome',
      'res.code',
      'res.message',
      'res.request_id',
      'res.key_id',
      'res.duplicate_of',
      'res.result',
      'res.written_at',
      'res.cached_at',
      'r.data',
    ])
    .where('res.batch_id', '=', batchId);
  if (opts.outcome) q = q.where('res.outcome', '=', opts.outcome);
  if (opts.order === 'completion') {
    if (Array.isArray(opts.after)) {
      const [at, row] = opts.after;
      q = q.where((eb) =>
        eb.or([
          eb('res.written_at', '>', at),
          eb.and([eb('res.written_at', '=', at), eb('res.row', '>', row)]),
        ]),
      );
    }
    q = q.orderBy('res.written_at').orderBy('res.row');
  } else {
    if (typeof opts.after === 'number') q = q.where('res.row', '>', opts.after);
    q = q.orderBy('res.row');
  }
  const got = await q.limit(limit).execute();
  const lines = got.map((g) => {
    const data = seal.open(g.data) as { key: Record<string, unknown> };
    return {
      row: Number(g.row),
      key: data.key,
      ...storedFields(seal, g),
      ...(g.key_id !== null ? { keyId: g.key_id } : {}),
    };
  });
  const lastRow = got[got.length - 1];
  const next =
    got.length < limit || !lastRow
      ? undefined
      : opts.order === 'completion'
        ? ([Number(lastRow.written_at), Number(lastRow.row)] as [number, number])
        : Number(lastRow.row);
  return { lines, ...(next !== undefined ? { next } : {}) };
}

/** A stored result's own fields, opened: what a line carries beside its row and key. */
function storedFields(
  seal: Sealer,
  g: {
    outcome: ResultLine['outcome'];
    code: string | null;
    message: string | null;
    request_id: string | null;
    result: string | null;
    duplicate_of: number | null;
    cached_at: number | null;
  },
): Omit<ResultLine, 'row' | 'key'> {
  return {
    outcome: g.outcome,
    ...(g.code !== null ? { code: g.code } : {}),
    ...(g.message !== null ? { message: seal.open(g.message) as string } : {}),
    ...(g.request_id !== null ? { requestId: g.request_id } : {}),
    ...(g.result !== null ? { result: seal.open(g.result) } : {}),
    ...(g.duplicate_of !== null ? { duplicateOf: Number(g.duplicate_of) } : {}),
    ...(g.cached_at !== null
      ? {
          cached: true as const,
          ...(Number(g.cached_at) !== HIDDEN_FETCH_TIME
            ? { fetchedAt: new Date(Number(g.cached_at)).toISOString() }
            : {}),
        }
      : {}),
  };
}

/**
 * Up to `limit` input rows after row `after`, in row order, each with its result when it has
 * one (rows LEFT JOIN results): what an ordered export walks, one page at a time.
 */
export async function rowsWithResults(
  db: Kysely<StoreSchema>,
  seal: Sealer,
  batchId: string,
  after: number,
  limit: number,
): Promise<{ row: number; key: Record<string, unknown>; cells?: unknown; line?: ResultLine }[]> {
  const got = await db
    .selectFrom('pcds_rows as r')
    .leftJoin('pcds_results as res', (j) =>
      j.onRef('res.batch_id', '=', 'r.batch_id').onRef('res.row', '=', 'r.row'),
    )
    .select([
      'r.row',
      'r.data',
      'res.outcome',
      'res.code',
      'res.message',
      'res.request_id',
      'res.duplicate_of',
      'res.result',
      'res.cached_at',
    ])
    .where('r.batch_id', '=', batchId)
    .where('r.row', '>', after)
    .orderBy('r.row')
    .limit(limit)
    .execute();
  return got.map((g) => {
    const row = Number(g.row);
    const data = seal.open(g.data) as { key: Record<string, unknown>; cells?: unknown };
    const line: ResultLine | undefined =
      g.outcome === null
        ? undefined
        : {
            row,
            key: data.key,
            ...storedFields(seal, { ...g, outcome: g.outcome }),
          };
    return {
      row,
      key: data.key,
      ...(data.cells !== undefined ? { cells: data.cells } : {}),
      ...(line ? { line } : {}),
    };
  });
}

/**
 * Up to `limit` results after row `after` in row order, the result value alone (no row data,
 * no message): what an export reads first to learn the result's columns.
 */
export async function resultValues(
  db: Kysely<StoreSchema>,
  seal: Sealer,
  batchId: string,
  after: number,
  limit: number,
): Promise<{ row: number; result?: unknown }[]> {
  const got = await db
    .selectFrom('pcds_results')
    .select(['row', 'result'])
    .where('batch_id', '=', batchId)
    .where('row', '>', after)
    .orderBy('row')
    .limit(limit)
    .execute();
  return got.map((g) => ({
    row: Number(g.row),
    ...(g.result !== null ? { result: seal.open(g.result) } : {}),
  }));
}

/** Results whose row is not among the batch's input rows (an ordered export leaves them out). */
export async function strayResults(db: Kysely<StoreSchema>, batchId: string): Promise<number> {
  const got = await db
    .selectFrom('pcds_results as res')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('res.batch_id', '=', batchId)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('pcds_rows as r')
            .select('r.row')
            .whereRef('r.batch_id', '=', 'res.batch_id')
            .whereRef('r.row', '=', 'res.row'),
        ),
      ),
    )
    .executeTakeFirstOrThrow();
  return Number(got.n);
}
