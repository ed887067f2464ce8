// A batch's data in the store: its record, its rows as read, one result per row, and the submit
// journal and webhook deliveries of compact rows. "One result per row" is the primary key: a retried, zombie or
// duplicate write inserts nothing (ON CONFLICT DO NOTHING), so no lock and no rescan is needed.
import { PcdsError } from '../contract/pcds-error.js';
import { sql, type Kysely } from 'kysely';
import type { Claim, JournalEntry } from '../batch/journal.js';
import type { InputRow, ResultLine, ValidRow } from '../batch/types.js';
import {
  cacheTenantOf,
  fillsCache,
  freshSince,
  readsCache,
  showsProvenance,
  type CacheUse,
} from '../calls/cache-policy.js';
import { cacheLookup, putCacheEntry, ResultCache } from './result-cache.js';
import { mergedSubjects } from './sealer.js';
import type { StoreSchema } from './schema.js';
import {
  freshWorkerReports,
  removeWorkerReport,
  writeWorkerReport,
  type WorkerReport,
} from './worker-reports.js';

/** How a row the result cache answered ended (set by readRows). */
type CachedMark = ValidRow['cached'];
import type { Store } from './open.js';

/** A row as the loader hands it in: valid (params, key) or invalid (problem, code). */
export type LoadedRow =
  | { row: number; params: Record<string, unknown>; key: Record<string, unknown>; cells?: unknown }
  | { row: number; problem: string; code?: string; key: Record<string, unknown>; cells?: unknown };

export interface BatchRecord {
  batchId: string;
  endpoint: string;
  state: 'loading' | 'loaded';
  total: number;
  blankLines: number;
  invalid: number;
  columns?: string[];
  createdAt: string;
  loadedAt?: string;
  /** How the batch uses the result cache; absent: not at all. */
  cache?: CacheUse;
}

export class BatchStoreError extends PcdsError {
  override name = 'BatchStoreError';
  constructor(
    override readonly code: 'batch_exists' | 'batch_not_loaded' | 'no_such_batch',
    message: string,
  ) {
    super(code, message);
  }
}

/** What became of a delivery offered to recordDelivery. */
export type DeliveryRecording =
  | 'recorded'
  /** The same job's delivery is there already. */
  | 'duplicate'
  /** The row's bound of kept deliveries is reached (a leaked callback URL cannot flood it). */
  | 'over_bound'
  /** The row has its result: nothing waits for a delivery. */
  | 'finished';

/** A delivery kept for a compact row, opened. */
export interface StoredDelivery {
  /** The job the envelope names; absent for a failure envelope. */
  requestId?: string;
  /** The delivered envelope, as a poll would have returned it. */
  body: unknown;
  receivedAt: number;
}

/** Deliveries kept per row at most: its job's, and one failure envelope, with room to spare. */
export const MAX_DELIVERIES_PER_ROW = 4;

/** Rows per INSERT: well under SQLite's and PostgreSQL's parameter limits. */
const INSERT_CHUNK = 200;

/** cached_at of a result another tenant's request fetched (a shared cache): no time is shown. */
const HIDDEN_FETCH_TIME = 0;

/** A cached row's mark from its stored result: request id and time only when they are shown. */
function cachedMarkOf(
  outcome: 'found' | 'empty',
  requestId: string | null,
  cachedAt: number,
): NonNullable<CachedMark> {
  return {
    outcome,
    ...(requestId !== null ? { requestId } : {}),
    ...(Number(cachedAt) !== HIDDEN_FETCH_TIME
      ? { fetchedAt: new Date(Number(cachedAt)).toISOString() }
      : {}),
  };
}

/** cached_at of a line: when its cached result was fetched, HIDDEN_FETCH_TIME if not shown. */
const cachedAtOf = (l: Pick<ResultLine, 'cached' | 'fetchedAt'>): number | null =>
  l.cached ? (l.fetchedAt ? Date.parse(l.fetchedAt) : HIDDEN_FETCH_TIME) : null;

/** The result of a row that shares an earlier row's call, when written: see writeResults. */
const sharedMessage = (leader: number) => `shares the call of row ${leader} (same parameters)`;

export class BatchStore {
  private readonly db: Kysely<StoreSchema>;

  constructor(private readonly store: Store) {
    this.db = store.db;
  }

  private get seal() {
    return this.store.sealer;
  }

  /** How a batch uses the result cache, as its record says (absent: not at all). */
  private async cacheUseOf(batchId: string): Promise<CacheUse | undefined> {
    const got = await this.db
      .selectFrom('pcds_batches')
      .select('cache')
      .where('batch_id', '=', batchId)
      .executeTakeFirst();
    return got?.cache ? (JSON.parse(got.cache) as CacheUse) : undefined;
  }

  /** The store's identity and where it is (no password): what a batch records at start. */
  get identity(): { id: string | undefined; shown: string } {
    return { id: this.store.id, shown: this.store.location.shown };
  }

  /** A worker's report of itself (store/worker-reports.ts). */
  reportWorker(report: WorkerReport): Promise<void> {
    return writeWorkerReport(this.store, report);
  }

  removeWorkerReport(identity: string): Promise<void> {
    return removeWorkerReport(this.store, identity);
  }

  /** The workers of a task queue that reported into this store lately. */
  workerReports(where: { taskQueue: string; namespace: string }): Promise<WorkerReport[]> {
    return freshWorkerReports(this.store, where);
  }

  /** The result cache of the same store (a worker sweeps it; calls read and fill it). */
  resultCache(): ResultCache {
    return new ResultCache(this.store);
  }

  /**
   * Starts loading a batch's rows. A batch still loading (its loader stopped half way) starts
   * again from nothing; a loaded batch is refused: its id is taken.
   */
  async beginLoad(
    batchId: string,
    endpoint: string,
    columns?: string[],
    cache?: CacheUse,
  ): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const existing = await tx
        .selectFrom('pcds_batches')
        .select('state')
        .where('batch_id', '=', batchId)
        .executeTakeFirst();
      if (existing?.state === 'loaded')
        throw new BatchStoreError('batch_exists', `batch ${batchId} already has its rows`);
      await tx.deleteFrom('pcds_rows').where('batch_id', '=', batchId).execute();
      await tx.deleteFrom('pcds_batches').where('batch_id', '=', batchId).execute();
      await tx
        .insertInto('pcds_batches')
        .values({
          batch_id: batchId,
          endpoint,
          state: 'loading',
          total: 0,
          blank_lines: 0,
          invalid: 0,
          columns: columns ? this.seal.seal(columns) : null,
          summary: null,
          created_at: new Date().toISOString(),
          loaded_at: null,
          cache: cache ? JSON.stringify(cache) : null,
        })
        .execute();
    });
  }

  /**
   * Adds rows (sealed, with their lookups in the batch's cache scope, as beginLoad recorded it); a
   * row already there is left as it is.
   */
  async addRows(batchId: string, endpoint: string, rows: readonly LoadedRow[]): Promise<void> {
    if (rows.length === 0) return;
    const use = await this.cacheUseOf(batchId);
    const values = rows.map((r) => {
      const valid = 'params' in r;
      return {
        batch_id: batchId,
        row: r.row,
        data: this.seal.seal(
          valid ? { params: r.params, key: r.key, cells: r.cells } : { key: r.key, cells: r.cells },
        ),
        problem: valid ? null : r.problem,
        code: valid ? null : (r.code ?? 'invalid_row'),
        lookup: valid ? cacheLookup(this.seal, endpoint, r.params, use) : null,
        duplicate_of: null,
        // What the row names, parameters and cells alike (an invalid row keeps its cells too).
        subjects: this.seal.subjects(valid ? r.params : undefined, r.key, r.cells),
      };
    });
    await this.db.transaction().execute(async (tx) => {
      for (let i = 0; i < values.length; i += INSERT_CHUNK) {
        await tx
          .insertInto('pcds_rows')
          .values(values.slice(i, i + INSERT_CHUNK))
          .onConflict((oc) => oc.columns(['batch_id', 'row']).doNothing())
          .execute();
      }
    });
  }

  /**
   * Ends the load: counts the rows, marks duplicates (the first row of each lookup leads,
   * `dedupe` false leaves every row its own call) and opens the batch to run.
   */
  async finishLoad(
    batchId: string,
    opts: { blankLines: number; dedupe: boolean },
  ): Promise<BatchRecord> {
    await this.db.transaction().execute(async (tx) => {
      if (opts.dedupe) {
        await sql`
          UPDATE pcds_rows SET duplicate_of = (
            SELECT MIN(l.row) FROM pcds_rows l
            WHERE l.batch_id = pcds_rows.batch_id AND l.lookup = pcds_rows.lookup
              AND l.row < pcds_rows.row
          )
          WHERE batch_id = ${batchId} AND lookup IS NOT NULL`.execute(tx);
      }
      const counts = await tx
        .selectFrom('pcds_rows')
        .select((eb) => [
          eb.fn.countAll<number>().as('total'),
          eb.fn.count<number>('problem').as('invalid'),
        ])
        .where('batch_id', '=', batchId)
        .executeTakeFirstOrThrow();
      await tx
        .updateTable('pcds_batches')
        .set({
          state: 'loaded',
          total: Number(counts.total),
          invalid: Number(counts.invalid),
          blank_lines: opts.blankLines,
          loaded_at: new Date().toISOString(),
        })
        .where('batch_id', '=', batchId)
        .execute();
    });
    return (await this.record(batchId))!;
  }

  /** Sets the input's columns of a batch still loading (a JSONL's keys are known only at its end). */
  async setColumns(batchId: string, columns: string[]): Promise<void> {
    await this.db
      .updateTable('pcds_batches')
      .set({ columns: this.seal.seal(columns) })
      .where('batch_id', '=', batchId)
      .where('state', '=', 'loading')
      .execute();
  }

  /** Drops a load that failed half way (its rows and record); a loaded batch is left as it is. */
  async abandonLoad(batchId: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const existing = await tx
        .selectFrom('pcds_batches')
        .select('state')
        .where('batch_id', '=', batchId)
        .executeTakeFirst();
      if (existing?.state !== 'loading') return;
      await tx.deleteFrom('pcds_rows').where('batch_id', '=', batchId).execute();
      await tx.deleteFrom('pcds_batches').where('batch_id', '=', batchId).execute();
    });
  }

  /**
   * What a loaded batch's plan counts, by the database: its rows, the invalid ones, the
   * duplicates, and (with `cache`) the rows it sends that the result cache would answer now.
   * Nothing is held per row, however many rows the batch has.
   */
  async planCounts(
    batchId: string,
    cache?: CacheUse,
    nowMs = Date.now(),
  ): Promise<{
    rows: number;
    invalid: number;
    duplicates: number;
    cached?: number;
    cachedFound?: number;
  }> {
    const record = await this.loadedRecord(batchId);
    const counts = {
      rows: record.total,
      invalid: record.invalid,
      duplicates: await this.duplicateCount(batchId),
    };
    if (!readsCache(record.endpoint, cache)) return counts;
    // Invalid rows have no lookup: the cache's count of a batch's hits is over the rows it sends.
    const hits = await this.resultCache().expectedHits(batchId, cache, nowMs);
    return { ...counts, cached: hits.rows, cachedFound: hits.found };
  }

  /** How many rows share an earlier row's call (marked by finishLoad). */
  async duplicateCount(batchId: string): Promise<number> {
    const got = await this.db
      .selectFrom('pcds_rows')
      .select((eb) => eb.fn.count<number>('duplicate_of').as('n'))
      .where('batch_id', '=', batchId)
      .executeTakeFirstOrThrow();
    return Number(got.n);
  }

  async record(batchId: string): Promise<BatchRecord | undefined> {
    const r = await this.db
      .selectFrom('pcds_batches')
      .selectAll()
      .where('batch_id', '=', batchId)
      .executeTakeFirst();
    if (!r) return undefined;
    return {
      batchId: r.batch_id,
      endpoint: r.endpoint,
      state: r.state,
      total: Number(r.total),
      blankLines: Number(r.blank_lines),
      invalid: Number(r.invalid),
      ...(r.columns ? { columns: this.seal.open(r.columns) as string[] } : {}),
      createdAt: r.created_at,
      ...(r.loaded_at ? { loadedAt: r.loaded_at } : {}),
      ...(r.cache ? { cache: JSON.parse(r.cache) as CacheUse } : {}),
    };
  }

  /** The loaded batch's record; refused (with the reason) when it is missing or still loading. */
  async loadedRecord(batchId: string): Promise<BatchRecord> {
    const r = await this.record(batchId);
    if (!r)
      throw new BatchStoreError('no_such_batch', `the store has no rows for batch ${batchId}`);
    if (r.state !== 'loaded')
      throw new BatchStoreError(
        'batch_not_loaded',
        `batch ${batchId}'s rows are still loading (or their loader stopped): load them again`,
      );
    return r;
  }

  /** How many later rows share each leader's call, for the leaders among `rows`. */
  private async followerCounts(batchId: string, rows: number[]): Promise<Map<number, number>> {
    if (rows.length === 0) return new Map();
    const got = await this.db
      .selectFrom('pcds_rows')
      .select(['duplicate_of', (eb) => eb.fn.countAll<number>().as('n')])
      .where('batch_id', '=', batchId)
      .where('duplicate_of', 'in', rows)
      .groupBy('duplicate_of')
      .execute();
    return new Map(got.map((g) => [Number(g.duplicate_of), Number(g.n)]));
  }

  /**
   * Up to `count` rows from row `from` on, in row order, as the batch runs them, each duplicate
   * with its leader's end when the leader has its result. `skipWritten`: rows that have their
   * result are left out (a reopened batch).
   */
  async readRows(
    batchId: string,
    from: number,
    count: number,
    opts: { skipWritten?: boolean; dedupe?: boolean } = {},
  ): Promise<{
    rows: InputRow[];
    next: number;
    done: boolean;
    /** Lookups this read made in the result cache: rows answered, rows to send. */
    cache: { hits: number; misses: number };
  }> {
    const got = await this.db
      .selectFrom('pcds_rows as r')
      .leftJoin('pcds_results as res', (j) =>
        j.onRef('res.batch_id', '=', 'r.batch_id').onRef('res.row', '=', 'r.row'),
      )
      .select([
        'r.row',
        'r.data',
        'r.problem',
        'r.code',
        'r.duplicate_of',
        'r.lookup',
        'res.outcome',
        'res.request_id',
        'res.cached_at',
      ])
      .where('r.batch_id', '=', batchId)
      .where('r.row', '>=', from)
      .orderBy('r.row')
      .limit(count)
      .execute();
    const last = got.length > 0 ? Number(got[got.length - 1].row) : from - 1;
    const record = await this.record(batchId);
    const total = record?.total ?? 0;
    const chosen = opts.skipWritten ? got.filter((g) => g.outcome === null) : got;
    const {
      marks: cached,
      hits: newHits,
      misses,
    } = record
      ? await this.answerFromCache(record, chosen, opts.dedupe !== false)
      : { marks: new Map<number, NonNullable<CachedMark>>(), hits: 0, misses: 0 };
    const followers = await this.followerCounts(
      batchId,
      chosen.filter((g) => g.problem === null && g.duplicate_of === null).map((g) => Number(g.row)),
    );
    // A duplicate whose leader has its result takes its line from it: the batch need not carry
    // how its leaders ended from one run to the next.
    const leaderEnds =
      opts.skipWritten || opts.dedupe !== false
        ? await this.outcomes(
            batchId,
            chosen.flatMap((g) => (g.duplicate_of !== null ? [Number(g.duplicate_of)] : [])),
          )
        : new Map<number, { outcome: ResultLine['outcome']; code?: string }>();
    const rows = chosen.map((g): InputRow => {
      const row = Number(g.row);
      const data = this.seal.open(g.data) as {
        params?: Record<string, unknown>;
        key: Record<string, unknown>;
      };
      if (g.problem !== null)
        return { row, offset: 0, problem: g.problem, code: g.code ?? 'invalid_row', key: data.key };
      const leader = g.duplicate_of !== null ? Number(g.duplicate_of) : undefined;
      const end = leader !== undefined ? leaderEnds.get(leader) : undefined;
      const n = followers.get(row);
      const hit = cached.get(row);
      return {
        row,
        offset: 0,
        params: data.params ?? {},
        key: data.key,
        ...(leader !== undefined ? { duplicateOf: leader } : {}),
        ...(n ? { followers: n } : {}),
        ...(end ? { leaderLine: end } : {}),
        ...(hit ? { cached: hit } : {}),
      };
    });
    return { rows, next: last + 1, done: last >= total, cache: { hits: newHits, misses } };
  }

  /**
   * The rows of a chunk the result cache answers: their lines are written now (the result
   * copied sealed, marked with when it was fetched), and the batch takes them without a call.
   * A row whose cached line was written by an earlier read (a run that continued as new before
   * taking it) is answered by that line. Rows that share another row's call take its line.
   */
  private async answerFromCache(
    record: BatchRecord,
    chunk: readonly {
      row: number;
      problem: string | null;
      duplicate_of: number | null;
      lookup: string | null;
      outcome: ResultLine['outcome'] | null;
      request_id: string | null;
      cached_at: number | null;
    }[],
    dedupe: boolean,
  ): Promise<{ marks: Map<number, NonNullable<CachedMark>>; hits: number; misses: number }> {
    const out = new Map<number, NonNullable<CachedMark>>();
    const done = (hits: number, misses: number) => ({ marks: out, hits, misses });
    const asked = chunk.filter(
      (g) => g.problem === null && g.lookup !== null && (g.duplicate_of === null || !dedupe),
    );
    for (const g of asked)
      if (g.cached_at !== null && (g.outcome === 'found' || g.outcome === 'empty'))
        out.set(Number(g.row), cachedMarkOf(g.outcome, g.request_id, g.cached_at));
    if (!readsCache(record.endpoint, record.cache)) return done(0, 0);
    const open = asked.filter((g) => g.outcome === null);
    if (open.length === 0) return done(0, 0);
    const now = Date.now();
    const since = freshSince(record.cache, now);
    const hits = await this.db
      .selectFrom('pcds_cache')
      .select(['lookup', 'outcome', 'request_id', 'result', 'fetched_at', 'scope', 'subjects'])
      .where('lookup', 'in', [...new Set(open.map((g) => g.lookup!))])
      .where('expires_at', '>', now)
      .$if(Number.isFinite(since), (q) => q.where('fetched_at', '>=', since))
      .execute();
    if (hits.length === 0) return done(0, open.length);
    const byLookup = new Map(hits.map((h) => [h.lookup, h]));
    const values = open.flatMap((g) => {
      const h = byLookup.get(g.lookup!);
      if (!h) return [];
      // Another tenant's fetch (a shared cache) answers without its request id or time.
      const shown = showsProvenance(h.scope, record.cache);
      return [
        {
          batch_id: record.batchId,
          row: Number(g.row),
          outcome: h.outcome,
          code: null,
          message: null,
          request_id: shown ? h.request_id : null,
          key_id: null,
          duplicate_of: null,
          result: h.result,
          written_at: now,
          cached_at: shown ? Number(h.fetched_at) : HIDDEN_FETCH_TIME,
          subjects: h.subjects,
        },
      ];
    });
    await this.db.transaction().execute(async (tx) => {
      for (let i = 0; i < values.length; i += INSERT_CHUNK)
        await tx
          .insertInto('pcds_results')
          .values(values.slice(i, i + INSERT_CHUNK))
          .onConflict((oc) => oc.columns(['batch_id', 'row']).doNothing())
          .execute();
      await tx
        .updateTable('pcds_cache')
        .set((eb) => ({ hits: eb('hits', '+', 1) }))
        .where('lookup', 'in', [...byLookup.keys()])
        .execute();
    });
    // What the store holds now (a concurrent write of the same row keeps the first).
    const answered = values.length;
    const written = await this.db
      .selectFrom('pcds_results')
      .select(['row', 'outcome', 'request_id', 'cached_at'])
      .where('batch_id', '=', record.batchId)
      .where(
        'row',
        'in',
        values.map((v) => v.row),
      )
      .execute();
    for (const w of written)
      if (w.cached_at !== null && (w.outcome === 'found' || w.outcome === 'empty'))
        out.set(Number(w.row), cachedMarkOf(w.outcome, w.request_id, w.cached_at));
    return done(answered, open.length - answered);
  }

  /** The outcome (and code) of each of `rows` that has its result. */
  async outcomes(
    batchId: string,
    rows: number[],
  ): Promise<Map<number, { outcome: ResultLine['outcome']; code?: string }>> {
    if (rows.length === 0) return new Map();
    const got = await this.db
      .selectFrom('pcds_results')
      .select(['row', 'outcome', 'code'])
      .where('batch_id', '=', batchId)
      .where('row', 'in', [...new Set(rows)])
      .execute();
    return new Map(
      got.map((g) => [
        Number(g.row),
        { outcome: g.outcome, ...(g.code !== null ? { code: g.code } : {}) },
      ]),
    );
  }

  /**
   * Writes each line whose row has no result yet. A duplicate row's line takes its leader's
   * result, request id, code and message (from this write or the store), marked duplicateOf.
   * Returns how many were written and how many were there already.
   */
  async writeResults(
    batchId: string,
    lines: readonly ResultLine[],
  ): Promise<{
    written: number;
    skipped: number;
    inserted: { row: number; outcome: ResultLine['outcome'] }[];
  }> {
    if (lines.length === 0) return { written: 0, skipped: 0, inserted: [] };
    return this.db.transaction().execute(async (tx) => {
      const byRow = new Map(lines.map((l) => [l.row, l]));
      const missingLeaders = [
        ...new Set(
          lines.flatMap((l) =>
            l.duplicateOf !== undefined && !byRow.has(l.duplicateOf) ? [l.duplicateOf] : [],
          ),
        ),
      ];
      const stored = missingLeaders.length
        ? await tx
            .selectFrom('pcds_results')
            .select([
              'row',
              'outcome',
              'code',
              'message',
              'request_id',
              'result',
              'cached_at',
              'subjects',
            ])
            .where('batch_id', '=', batchId)
            .where('row', 'in', missingLeaders)
            .execute()
        : [];
      const storedByRow = new Map(stored.map((s) => [Number(s.row), s]));
      const now = Date.now();
      const values = lines.map((l) => {
        const own = {
          batch_id: batchId,
          row: l.row,
          outcome: l.outcome,
          code: l.code ?? null,
          message: l.message !== undefined ? this.seal.seal(l.message) : null,
          request_id: l.requestId ?? null,
          key_id: (l as ResultLine & { keyId?: string }).keyId ?? null,
          duplicate_of: l.duplicateOf ?? null,
          result: l.result !== undefined ? this.seal.seal(l.result) : null,
          written_at: now,
          cached_at: cachedAtOf(l),
          // Whom the result (and a service's message, which may quote the request) names.
          subjects: this.seal.subjects(l.result, l.message),
        };
        if (l.duplicateOf === undefined) return own;
        const fresh = byRow.get(l.duplicateOf);
        if (fresh)
          return {
            ...own,
            outcome: fresh.outcome,
            code: fresh.code ?? null,
            message: this.seal.seal(fresh.message ?? sharedMessage(l.duplicateOf)),
            request_id: fresh.requestId ?? null,
            result: fresh.result !== undefined ? this.seal.seal(fresh.result) : null,
            cached_at: cachedAtOf(fresh),
            subjects: this.seal.subjects(fresh.result, fresh.message),
          };
        const s = storedByRow.get(l.duplicateOf);
        if (!s)
          return {
            ...own,
            message: this.seal.seal(
              `the result of row ${l.duplicateOf}, whose call this row shares, is not in the store`,
            ),
          };
        return {
          ...own,
          outcome: s.outcome,
          code: s.code,
          message: s.message ?? this.seal.seal(sharedMessage(l.duplicateOf)),
          request_id: s.request_id,
          result: s.result,
          cached_at: s.cached_at,
          subjects: s.subjects,
        };
      });
      // What was inserted (a row already there is not): the caller counts it once.
      const inserted: { row: number; outcome: ResultLine['outcome'] }[] = [];
      for (let i = 0; i < values.length; i += INSERT_CHUNK) {
        const got = await tx
          .insertInto('pcds_results')
          .values(values.slice(i, i + INSERT_CHUNK))
          .onConflict((oc) => oc.columns(['batch_id', 'row']).doNothing())
          .returning(['row', 'outcome'])
          .execute();
        for (const g of got) inserted.push({ row: Number(g.row), outcome: g.outcome });
      }
      await this.fillCache(tx, batchId, inserted, now);
      // A row that ended waits for no delivery: what the receiver kept for it goes.
      const ended = inserted.map((r) => r.row);
      for (let i = 0; i < ended.length; i += INSERT_CHUNK)
        await tx
          .deleteFrom('pcds_deliveries')
          .where('batch_id', '=', batchId)
          .where('row', 'in', ended.slice(i, i + INSERT_CHUNK))
          .execute();
      return { written: inserted.length, skipped: lines.length - inserted.length, inserted };
    });
  }

  /**
   * Puts the found and empty results just fetched for a batch's own rows into the result cache
   * (when its policy fills it): the sealed result is copied as it is, never opened.
   */
  private async fillCache(
    tx: Kysely<StoreSchema>,
    batchId: string,
    inserted: readonly { row: number; outcome: ResultLine['outcome'] }[],
    nowMs: number,
  ): Promise<void> {
    const rows = inserted
      .filter((i) => i.outcome === 'found' || i.outcome === 'empty')
      .map((i) => i.row);
    if (rows.length === 0) return;
    const batch = await tx
      .selectFrom('pcds_batches')
      .select(['endpoint', 'cache'])
      .where('batch_id', '=', batchId)
      .executeTakeFirst();
    const use = batch?.cache ? (JSON.parse(batch.cache) as CacheUse) : undefined;
    if (!batch || !fillsCache(batch.endpoint, use)) return;
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const fetched = await tx
        .selectFrom('pcds_results as res')
        .innerJoin('pcds_rows as r', (j) =>
          j.onRef('r.batch_id', '=', 'res.batch_id').onRef('r.row', '=', 'res.row'),
        )
        .select([
          'r.lookup',
          'r.subjects',
          'res.subjects as result_subjects',
          'res.outcome',
          'res.request_id',
          'res.result',
        ])
        .where('res.batch_id', '=', batchId)
        .where('res.row', 'in', rows.slice(i, i + INSERT_CHUNK))
        .where('res.duplicate_of', 'is', null)
        .where('res.cached_at', 'is', null)
        .where('res.request_id', 'is not', null)
        .where('r.lookup', 'is not', null)
        .execute();
      // One entry per lookup (rows sent without dedupe may repeat one): the last wins.
      const byLookup = new Map(fetched.map((f) => [f.lookup!, f]));
      for (const f of byLookup.values())
        await putCacheEntry(tx, {
          lookup: f.lookup!,
          endpoint: batch.endpoint,
          subjects: mergedSubjects(f.subjects, f.result_subjects),
          outcome: f.outcome === 'found' ? 'found' : 'empty',
          requestId: f.request_id!,
          status: 'completed',
          sealedResult: f.result,
          nowMs,
          scope: cacheTenantOf(use),
        });
    }
  }

  /** Removes the results that match (a reopened batch runs its budget-skipped rows again). */
  async dropResults(
    batchId: string,
    outcome: ResultLine['outcome'],
    code: string,
  ): Promise<number> {
    const res = await this.db
      .deleteFrom('pcds_results')
      .where('batch_id', '=', batchId)
      .where('outcome', '=', outcome)
      .where('code', '=', code)
      .executeTakeFirst();
    return Number(res.numDeletedRows ?? 0);
  }

  /**
   * Results in row order (or the order they were written), joined with each row's key, opened.
   * `after`: the last row (input order) or [written_at, row] (completion order) already seen.
   */
  async results(
    batchId: string,
    opts: {
      order?: 'input' | 'completion';
      outcome?: ResultLine['outcome'];
      after?: number | [number, number];
      limit?: number;
    } = {},
  ): Promise<{ lines: (ResultLine & { keyId?: string })[]; next?: number | [number, number] }> {
    const limit = Math.max(1, Math.min(opts.limit ?? 1000, 10_000));
    let q = this.db
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
      const data = this.seal.open(g.data) as { key: Record<string, unknown> };
      return {
        row: Number(g.row),
        key: data.key,
        ...this.storedFields(g),
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
  private storedFields(g: {
    outcome: ResultLine['outcome'];
    code: string | null;
    message: string | null;
    request_id: string | null;
    result: string | null;
    duplicate_of: number | null;
    cached_at: number | null;
  }): Omit<ResultLine, 'row' | 'key'> {
    return {
      outcome: g.outcome,
      ...(g.code !== null ? { code: g.code } : {}),
      ...(g.message !== null ? { message: this.seal.open(g.message) as string } : {}),
      ...(g.request_id !== null ? { requestId: g.request_id } : {}),
      ...(g.result !== null ? { result: this.seal.open(g.result) } : {}),
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

  /** Input rows in row order with their cells (for exports that show the input beside the result). */
  async inputRows(
    batchId: string,
    after: number,
    limit: number,
  ): Promise<{ row: number; cells?: unknown; key: Record<string, unknown> }[]> {
    const got = await this.db
      .selectFrom('pcds_rows')
      .select(['row', 'data'])
      .where('batch_id', '=', batchId)
      .where('row', '>', after)
      .orderBy('row')
      .limit(limit)
      .execute();
    return got.map((g) => {
      const data = this.seal.open(g.data) as { key: Record<string, unknown>; cells?: unknown };
      return {
        row: Number(g.row),
        key: data.key,
        ...(data.cells !== undefined ? { cells: data.cells } : {}),
      };
    });
  }

  /**
   * Up to `limit` input rows after row `after`, in row order, each with its result when it has
   * one (rows LEFT JOIN results): what an ordered export walks, one page at a time.
   */
  async rowsWithResults(
    batchId: string,
    after: number,
    limit: number,
  ): Promise<{ row: number; key: Record<string, unknown>; cells?: unknown; line?: ResultLine }[]> {
    const got = await this.db
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
      const data = this.seal.open(g.data) as { key: Record<string, unknown>; cells?: unknown };
      const line: ResultLine | undefined =
        g.outcome === null
          ? undefined
          : {
              row,
              key: data.key,
              ...this.storedFields({ ...g, outcome: g.outcome }),
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
  async resultValues(
    batchId: string,
    after: number,
    limit: number,
  ): Promise<{ row: number; result?: unknown }[]> {
    const got = await this.db
      .selectFrom('pcds_results')
      .select(['row', 'result'])
      .where('batch_id', '=', batchId)
      .where('row', '>', after)
      .orderBy('row')
      .limit(limit)
      .execute();
    return got.map((g) => ({
      row: Number(g.row),
      ...(g.result !== null ? { result: this.seal.open(g.result) } : {}),
    }));
  }

  /** Results whose row is not among the batch's input rows (an ordered export leaves them out). */
  async strayResults(batchId: string): Promise<number> {
    const got = await this.db
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

  /** Counts of results by outcome and failure code. */
  async counts(batchId: string): Promise<{ outcome: string; code: string | null; n: number }[]> {
    const got = await this.db
      .selectFrom('pcds_results')
      .select(['outcome', 'code', (eb) => eb.fn.countAll<number>().as('n')])
      .where('batch_id', '=', batchId)
      .groupBy(['outcome', 'code'])
      .execute();
    return got.map((g) => ({ outcome: g.outcome, code: g.code, n: Number(g.n) }));
  }

  /** Results that shared a call, and found results that were sent (charged) themselves. */
  async resultCounts(batchId: string): Promise<{
    duplicates: number;
    foundSent: number;
    /** Rows the result cache answered, and the found among them. */
    cached: number;
    cachedFound: number;
  }> {
    const got = await this.db
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
  async firstFailed(batchId: string, limit = 10): Promise<{ row: number; code: string | null }[]> {
    const got = await this.db
      .selectFrom('pcds_results')
      .select(['row', 'code'])
      .where('batch_id', '=', batchId)
      .where('outcome', '=', 'failed')
      .orderBy('row')
      .limit(limit)
      .execute();
    return got.map((g) => ({ row: Number(g.row), code: g.code }));
  }

  async saveSummary(batchId: string, summary: unknown): Promise<void> {
    await this.db
      .updateTable('pcds_batches')
      .set({ summary: this.seal.seal(summary) })
      .where('batch_id', '=', batchId)
      .execute();
  }

  /** The batch's summary once it ended. */
  async summary(batchId: string): Promise<unknown> {
    const got = await this.db
      .selectFrom('pcds_batches')
      .select('summary')
      .where('batch_id', '=', batchId)
      .executeTakeFirst();
    return got?.summary ? this.seal.open(got.summary) : undefined;
  }

  // The submit journal (see batch/journal.ts for the protocol). Each step is one statement
  // that compares and sets, so two attempts never both hold a row's claim.

  /**
   * Claims `row` for `owner` just before its POST: the row is this attempt's when nobody claimed
   * it, when an earlier attempt released it, or when this attempt holds the claim already.
   * Otherwise the earlier entry is returned (a job to poll, or a send that may have landed).
   */
  async claimRow(batchId: string, row: number, owner: string): Promise<Claim> {
    const inserted = await this.db
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
    const taken = await this.db
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
    const entry = await this.rowEntry(batchId, row);
    return entry ? { mine: false, entry } : this.claimRow(batchId, row, owner);
  }

  async rowEntry(batchId: string, row: number): Promise<JournalEntry | undefined> {
    const e = await this.db
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
  async recordRow(batchId: string, entry: JournalEntry): Promise<boolean> {
    const res = await this.db
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

  // Webhook deliveries of compact rows: the receiver records them, the row's activity reads them.

  /**
   * Keeps a delivery for a compact row, sealed: once per (row, request id), at most
   * MAX_DELIVERIES_PER_ROW per row, and never for a row that has its result.
   */
  async recordDelivery(
    batchId: string,
    row: number,
    requestId: string | undefined,
    body: unknown,
    nowMs = Date.now(),
  ): Promise<DeliveryRecording> {
    return this.db.transaction().execute(async (tx) => {
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
          body: this.seal.seal(body),
          received_at: nowMs,
          subjects: this.seal.subjects(body),
        })
        .onConflict((oc) => oc.columns(['batch_id', 'row', 'request_id']).doNothing())
        .executeTakeFirst();
      return Number(res.numInsertedOrUpdatedRows ?? 0) === 1 ? 'recorded' : 'duplicate';
    });
  }

  /** The deliveries kept for a row that name `requestId` or no job (failure envelopes), opened, oldest first. */
  async deliveries(batchId: string, row: number, requestId: string): Promise<StoredDelivery[]> {
    const got = await this.db
      .selectFrom('pcds_deliveries')
      .select(['request_id', 'body', 'received_at'])
      .where('batch_id', '=', batchId)
      .where('row', '=', row)
      .where('request_id', 'in', [requestId, ''])
      .orderBy('received_at')
      .execute();
    return got.map((d) => ({
      ...(d.request_id ? { requestId: d.request_id } : {}),
      body: this.seal.open(d.body),
      receivedAt: Number(d.received_at),
    }));
  }
}
