// A batch's data in the store: its record, its rows as read, one result per row, and the submit
// journal and webhook deliveries of compact rows: every role of roles.ts, in one implementation.
// "One result per row" is the primary key: a retried, zombie or duplicate write inserts nothing
// (ON CONFLICT DO NOTHING), so no lock and no rescan is needed.
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
import { keepDelivery, keptDeliveries } from './delivery-inbox.js';
import { cacheLookup, putCacheEntry, ResultCache } from './result-cache.js';
import type {
  BatchRecord,
  DeliveryInbox,
  DeliveryRecording,
  LoadedRow,
  PlanCounts,
  ResultReader,
  ResultLinesPage,
  ResultLinesQuery,
  ResultsWritten,
  RowsRead,
  StoreRoles,
  StoredDelivery,
} from './roles.js';
import { resultCounts, firstFailed, resultsByOutcome } from './result-counts.js';
import {
  HIDDEN_FETCH_TIME,
  resultLines,
  resultValues,
  rowsWithResults,
  strayResults,
} from './result-reader.js';
import { mergedSubjects } from './sealer.js';
import type { StoreSchema } from './schema.js';
import { claimJournalRow, journalEntry, recordJournalRow } from './submit-journal.js';
import {
  freshWorkerReports,
  removeWorkerReport,
  writeWorkerReport,
  type WorkerReport,
} from './worker-reports.js';

/** How a row the result cache answered ended (set by readRows). */
type CachedMark = ValidRow['cached'];
import type { Store } from './open.js';

export class BatchStoreError extends PcdsError {
  override name = 'BatchStoreError';
  constructor(
    override readonly code: 'batch_exists' | 'batch_not_loaded' | 'no_such_batch',
    message: string,
  ) {
    super(code, message);
  }
}

/** Rows per INSERT: well under SQLite's and PostgreSQL's parameter limits. */
const INSERT_CHUNK = 200;

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

/** Every role of the store (roles.ts), over Kysely for SQLite and PostgreSQL alike. */
export class BatchStore implements StoreRoles {
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

  /** The result cache of the same store (a plan counts the rows it would answer). */
  private resultCache(): ResultCache {
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
  async planCounts(batchId: string, cache?: CacheUse, nowMs = Date.now()): Promise<PlanCounts> {
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
  ): Promise<RowsRead> {
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
  private async outcomes(
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
  async writeResults(batchId: string, lines: readonly ResultLine[]): Promise<ResultsWritten> {
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

  // Results read back (store/result-reader.ts) and counted (store/result-counts.ts).

  results(batchId: string, opts?: ResultLinesQuery): Promise<ResultLinesPage> {
    return resultLines(this.db, this.seal, batchId, opts);
  }

  rowsWithResults(...page: Parameters<ResultReader['rowsWithResults']>) {
    return rowsWithResults(this.db, this.seal, ...page);
  }

  resultValues(...page: Parameters<ResultReader['resultValues']>) {
    return resultValues(this.db, this.seal, ...page);
  }

  strayResults(batchId: string): Promise<number> {
    return strayResults(this.db, batchId);
  }

  counts(batchId: string) {
    return resultsByOutcome(this.db, batchId);
  }

  resultCounts(batchId: string) {
    return resultCounts(this.db, batchId);
  }

  firstFailed(batchId: string, limit?: number) {
    return firstFailed(this.db, batchId, limit);
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

  // The submit journal (store/submit-journal.ts) and the deliveries of compact rows
  // (store/delivery-inbox.ts).

  claimRow(batchId: string, row: number, owner: string): Promise<Claim> {
    return claimJournalRow(this.db, batchId, row, owner);
  }

  rowEntry(batchId: string, row: number): Promise<JournalEntry | undefined> {
    return journalEntry(this.db, batchId, row);
  }

  recordRow(batchId: string, entry: JournalEntry): Promise<boolean> {
    return recordJournalRow(this.db, batchId, entry);
  }

  recordDelivery(
    ...delivery: Parameters<DeliveryInbox['recordDelivery']>
  ): Promise<DeliveryRecording> {
    return keepDelivery(this.db, this.seal, ...delivery);
  }

  deliveries(batchId: string, row: number, requestId: string): Promise<StoredDelivery[]> {
    return keptDeliveries(this.db, this.seal, batchId, row, requestId);
  }
}
