// An erasure request: everything the store holds that names a person, found by the erasure
// subjects kept beside each item (keyed HMACs of the identifiers it names, person-identifiers.ts)
// without opening a sealed value, and removed. Cache entries and single calls still pending go;
// a batch row that names the person (by its parameters, its cells, its result or a delivery
// waiting for it) keeps its number and becomes an erased row: its data, its lookup and subjects
// are dropped and its result is replaced by an `erased` line, so the batch still has one line per
// row and a write still in flight for it adds nothing. Afterwards the freed pages are made
// unreadable where the engine allows it: SQLite overwrites deleted content (secure_delete) and
// the WAL is checkpointed and truncated; PostgreSQL's tables are rewritten (VACUUM FULL). The
// report says what went and what the store could not know.
import { sql, type Expression, type Kysely, type SqlBool } from 'kysely';
import type { Store } from './open.js';
import { requestedIdentifiers, type ErasureIdentifiers } from './person-identifiers.js';
import type { StoreSchema } from './schema.js';

/** The code and problem an erased row and its line carry (they name no value). */
export const ERASED_CODE = 'erased';
export const ERASED_PROBLEM = 'erased at the request of the person it named';

/** The migration from which results, deliveries and cache entries record their result's subjects. */
const RESULT_SUBJECTS_MIGRATION = '0005_erasure_subjects';

/** Rows per statement when rows are changed by key. */
const CHUNK = 200;

export interface ErasureOptions {
  /**
   * PostgreSQL: `full` (default) rewrites the tables that held erased data (VACUUM FULL, which
   * locks each table while it runs) so no copy is left in their files; `plain` only makes the
   * space reusable (VACUUM): the bytes stay in the files until overwritten.
   */
  vacuum?: 'full' | 'plain';
  nowMs?: number;
}

export interface ErasureReport {
  /** How many identifiers were looked for (never the identifiers). */
  identifiers: number;
  /** How many more the store took from the person's own profiles it held (see personsItems). */
  derived: number;
  removed: {
    cacheEntries: number;
    pendingCalls: number;
    /** Batch rows made erased rows (their data, lookup and subjects dropped). */
    batchRows: number;
    /** Results replaced by an erased line (a row without a result gets one too). */
    results: number;
    deliveries: number;
  };
  /** The batches that had rows erased: their ids (ids hold no personal value). */
  batches: string[];
  /** What the store could not check, because it was stored before it recorded such subjects. */
  unchecked: {
    /** Results written before results recorded whom they name: checked by their rows only. */
    results: number;
    /** Cache entries fetched then: checked by the request's emails and URLs only. */
    cacheEntries: number;
    /** Rows of batches loaded then: checked by their parameters' emails and URLs only. */
    batchRows: number;
  };
  /** What became of the pages that held the erased data. */
  pages: string;
  /** Places the store cannot reach, where the person's data may also be. */
  beyondTheStore: string[];
}

const BEYOND_THE_STORE = [
  "Temporal's workflow histories (payloads sealed with the payload key) until the namespace's retention removes them",
  'output, CSV and export files already written from the store, and files in the pcds mcp file root',
  "a call's outcome its caller kept",
  'backups and replicas of the store (and on PostgreSQL its WAL segments until recycled, and WAL archives): see docs/security.md',
];

/** Whether a space-separated subjects column holds `subject` (exact, case-sensitive, no wildcard). */
function holds(store: Store, column: string, subject: string): Expression<SqlBool> {
  const padded = sql<string>`(' ' || ${sql.ref(column)} || ' ')`;
  const needle = ` ${subject} `;
  return store.engine === 'postgres'
    ? sql<SqlBool>`strpos(${padded}, ${needle}) > 0`
    : sql<SqlBool>`instr(${padded}, ${needle}) > 0`;
}

type RowKey = { batch_id: string; row: number };
const keyOf = (k: RowKey) => `${k.batch_id}\u0000${k.row}`;

/** When the store began to record the subjects of results (epoch ms); 0 when not known. */
async function resultSubjectsSince(db: Kysely<StoreSchema>): Promise<number> {
  const got = await sql<{
    timestamp: string | Date;
  }>`SELECT timestamp FROM pcds_store_migration WHERE name = ${RESULT_SUBJECTS_MIGRATION}`.execute(
    db,
  );
  const at = got.rows[0]?.timestamp;
  return at === undefined ? 0 : new Date(at).getTime();
}

/** Endpoints whose found result is one person's profile: the identifiers in it are the person's. */
const PROFILE_ENDPOINTS = new Set(['person_enrichment', 'person_enrich', 'person_lookup_fields']);

/** Rounds of taking identifiers from the person's own profiles before the search stops. */
const MAX_ROUNDS = 4;

/**
 * The batch rows (by key) that name the person, and the subjects that find them: those asked for
 * and those the store derives from the person's own profiles it holds (the result, and the
 * request, of a profile endpoint that an identifier of the person found: her profile URL, phone
 * number and name at her company, found from her email), round after round until none is new.
 * Results of other endpoints (a search, an answer) may name other people: nothing is taken
 * from them.
 */
async function personsItems(
  store: Store,
  tx: Kysely<StoreSchema>,
  asked: string[],
): Promise<{ subjects: string[]; rows: Map<string, RowKey> }> {
  let subjects = [...new Set(asked)];
  let rows = new Map<string, RowKey>();
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const named = namedBy(store, subjects);
    rows = new Map<string, RowKey>();
    const note = (found: RowKey[]) => {
      for (const k of found) rows.set(keyOf(k), { batch_id: k.batch_id, row: Number(k.row) });
    };
    // A row names the person by its own subjects, its result's or a delivery's.
    for (const table of ['pcds_rows', 'pcds_results', 'pcds_deliveries'] as const)
      note(
        await tx.selectFrom(table).select(['batch_id', 'row']).where(named('subjects')).execute(),
      );
    // The last round only finds: what it would derive would find nothing more.
    if (round === MAX_ROUNDS - 1) break;
    const derived = new Set(subjects);
    const take = (list: string | null) => {
      for (const s of list?.split(' ') ?? []) if (s) derived.add(s);
    };
    const profiles = await tx
      .selectFrom('pcds_cache')
      .select(['result'])
      .where('endpoint', 'in', [...PROFILE_ENDPOINTS])
      .where('result', 'is not', null)
      .where(named('subjects'))
      .execute();
    for (const p of profiles) take(store.sealer.subjects(opened(store, p.result)));
    const byBatch = groupByBatch(rows.values());
    for (const [batchId, all] of byBatch) {
      const batch = await tx
        .selectFrom('pcds_batches')
        .select('endpoint')
        .where('batch_id', '=', batchId)
        .executeTakeFirst();
      if (!batch || !PROFILE_ENDPOINTS.has(batch.endpoint)) continue;
      for (let i = 0; i < all.length; i += CHUNK) {
        const got = await tx
          .selectFrom('pcds_rows as r')
          .leftJoin('pcds_results as res', (j) =>
            j.onRef('res.batch_id', '=', 'r.batch_id').onRef('res.row', '=', 'r.row'),
          )
          .select(['r.data', 'r.problem', 'res.result', 'res.outcome'])
          .where('r.batch_id', '=', batchId)
          .where('r.row', 'in', all.slice(i, i + CHUNK))
          .execute();
        for (const g of got) {
          if (g.problem !== null) continue;
          const data = opened(store, g.data) as { params?: unknown } | undefined;
          const result = g.outcome === 'found' ? opened(store, g.result) : undefined;
          take(store.sealer.subjects(data?.params, result));
        }
      }
    }
    if (derived.size === subjects.length) break;
    subjects = [...derived];
  }
  return { subjects, rows };
}

/**
 * A stored value opened, or undefined when it cannot be (sealed with a key this process lacks):
 * the identifiers it would give are then not derived, and the items found by the others still go.
 */
function opened(store: Store, sealed: string | null): unknown {
  if (sealed === null) return undefined;
  try {
    return store.sealer.open(sealed);
  } catch {
    return undefined;
  }
}

function groupByBatch(keys: Iterable<RowKey>): Map<string, number[]> {
  const byBatch = new Map<string, number[]>();
  for (const k of keys) byBatch.set(k.batch_id, [...(byBatch.get(k.batch_id) ?? []), k.row]);
  return byBatch;
}

/** A filter: the subjects column of the row holds one of `subjects`. */
const namedBy =
  (store: Store, subjects: readonly string[]) =>
  (column: string) =>
  (eb: { or(e: Expression<SqlBool>[]): Expression<SqlBool> }) =>
    eb.or(subjects.map((s) => holds(store, column, s)));

/**
 * Makes these rows of a batch erased rows: data, lookup and subjects dropped, the result replaced
 * by an erased line (one written for a row still without one), waiting deliveries removed.
 */
async function eraseRows(
  tx: Kysely<StoreSchema>,
  batchId: string,
  rows: number[],
  tombstone: string,
  nowMs: number,
): Promise<{ batchRows: number; results: number; deliveries: number }> {
  const r = await tx
    .updateTable('pcds_rows')
    .set({
      data: tombstone,
      problem: ERASED_PROBLEM,
      code: ERASED_CODE,
      lookup: null,
      duplicate_of: null,
      subjects: null,
    })
    .where('batch_id', '=', batchId)
    .where('row', 'in', rows)
    .executeTakeFirst();
  const erasedLine = {
    outcome: 'failed' as const,
    code: ERASED_CODE,
    message: null,
    duplicate_of: null,
    result: null,
    cached_at: null,
    subjects: null,
  };
  const replaced = await tx
    .updateTable('pcds_results')
    .set(erasedLine)
    .where('batch_id', '=', batchId)
    .where('row', 'in', rows)
    .executeTakeFirst();
  // A row still to run (or in flight) gets its line now: a late write of its result adds nothing
  // (one result per row), and a delivery for it is taken as for a finished row.
  const added = await tx
    .insertInto('pcds_results')
    .values(
      rows.map((row) => ({
        ...erasedLine,
        batch_id: batchId,
        row,
        request_id: null,
        key_id: null,
        written_at: nowMs,
      })),
    )
    .onConflict((oc) => oc.columns(['batch_id', 'row']).doNothing())
    .executeTakeFirst();
  const d = await tx
    .deleteFrom('pcds_deliveries')
    .where('batch_id', '=', batchId)
    .where('row', 'in', rows)
    .executeTakeFirst();
  return {
    batchRows: Number(r.numUpdatedRows),
    results: Number(replaced.numUpdatedRows) + Number(added.numInsertedOrUpdatedRows ?? 0),
    deliveries: Number(d.numDeletedRows),
  };
}

/** What the store holds from before it recorded every identifier an item names (see the report). */
async function uncheckedItems(db: Kysely<StoreSchema>): Promise<ErasureReport['unchecked']> {
  const since = await resultSubjectsSince(db);
  const count = async (q: Promise<{ n: number | string | bigint } | undefined>) =>
    Number((await q)?.n ?? 0);
  return {
    results: await count(
      db
        .selectFrom('pcds_results')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('written_at', '<', since)
        .where('result', 'is not', null)
        .executeTakeFirst(),
    ),
    cacheEntries: await count(
      db
        .selectFrom('pcds_cache')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('fetched_at', '<', since)
        .executeTakeFirst(),
    ),
    batchRows: await count(
      db
        .selectFrom('pcds_rows as r')
        .innerJoin('pcds_batches as b', 'b.batch_id', 'r.batch_id')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('b.created_at', '<', new Date(since).toISOString())
        .where((eb) => eb.or([eb('r.code', 'is', null), eb('r.code', '!=', ERASED_CODE)]))
        .executeTakeFirst(),
    ),
  };
}

/**
 * Erases what the store holds on the person these identifiers name (see the module's note).
 * Refused with no identifier. The identifiers are never stored, logged or returned.
 */
export async function eraseFromStore(
  store: Store,
  identifiers: ErasureIdentifiers,
  opts: ErasureOptions = {},
): Promise<ErasureReport> {
  const wanted = requestedIdentifiers(identifiers);
  if (wanted.length === 0) throw new Error('an erasure needs at least one identifier');
  const nowMs = opts.nowMs ?? Date.now();
  const tombstone = store.sealer.seal({ key: {}, erased: true });

  const counted = await store.db.transaction().execute(async (tx) => {
    const asked = wanted.map((w) => store.sealer.subject(w));
    const { subjects, rows } = await personsItems(store, tx, asked);
    const named = namedBy(store, subjects);
    const removed = {
      cacheEntries: 0,
      pendingCalls: 0,
      batchRows: 0,
      results: 0,
      deliveries: 0,
    };
    const byBatch = groupByBatch(rows.values());
    for (const [batchId, all] of byBatch)
      for (let i = 0; i < all.length; i += CHUNK) {
        const done = await eraseRows(tx, batchId, all.slice(i, i + CHUNK), tombstone, nowMs);
        removed.batchRows += done.batchRows;
        removed.results += done.results;
        removed.deliveries += done.deliveries;
      }
    const cache = await tx.deleteFrom('pcds_cache').where(named('subjects')).executeTakeFirst();
    removed.cacheEntries = Number(cache.numDeletedRows);
    const pending = await tx
      .deleteFrom('pcds_cache_pending')
      .where(named('subjects'))
      .executeTakeFirst();
    removed.pendingCalls = Number(pending.numDeletedRows);
    return {
      derived: subjects.length - asked.length,
      removed,
      batches: [...byBatch.keys()].sort(),
    };
  });

  const { removed } = counted;
  const touched = [
    ...(removed.batchRows > 0 ? (['pcds_rows', 'pcds_results'] as const) : []),
    ...(removed.deliveries > 0 ? (['pcds_deliveries'] as const) : []),
    ...(removed.cacheEntries > 0 ? (['pcds_cache'] as const) : []),
    ...(removed.pendingCalls > 0 ? (['pcds_cache_pending'] as const) : []),
  ];
  return {
    identifiers: wanted.length,
    ...counted,
    unchecked: await uncheckedItems(store.db),
    pages:
      touched.length > 0
        ? await clearFreedPages(store, touched, opts.vacuum ?? 'full')
        : 'nothing was erased',
    beyondTheStore: BEYOND_THE_STORE,
  };
}

/**
 * Makes the pages that held erased values unreadable, and says how it went. SQLite: deleted
 * content was overwritten with zeros as it was deleted (secure_delete, set on every connection);
 * the WAL, which still holds the pages as they were, is checkpointed into the file and truncated.
 * PostgreSQL: a DELETE or UPDATE leaves the old tuple in the table's file, and VACUUM only marks
 * its space free; VACUUM FULL writes each table anew and removes the old file.
 */
async function clearFreedPages(
  store: Store,
  tables: readonly (keyof StoreSchema)[],
  vacuum: 'full' | 'plain',
): Promise<string> {
  if (store.engine === 'sqlite') {
    const got = await sql<{
      busy: number;
      log: number;
      checkpointed: number;
    }>`PRAGMA wal_checkpoint(TRUNCATE)`.execute(store.db);
    const r = got.rows[0];
    if (r && Number(r.busy) === 0)
      return 'deleted content overwritten with zeros (secure_delete); the WAL checkpointed into the file and truncated';
    return (
      'deleted content overwritten with zeros (secure_delete), but another process was reading the ' +
      'file: the WAL still holds the old pages until its next full checkpoint (run the erasure ' +
      'again when the workers are idle, or stop them for a moment)'
    );
  }
  for (const table of tables)
    await sql`${sql.raw(vacuum === 'full' ? 'VACUUM FULL' : 'VACUUM')} ${sql.table(table)}`.execute(
      store.db,
    );
  return vacuum === 'full'
    ? 'tables rewritten (VACUUM FULL): no copy left in their files; WAL segments and backups keep theirs until recycled or expired'
    : 'space marked free (VACUUM): the old bytes stay in the table files until overwritten; run VACUUM FULL on them to rewrite';
}
