// What the store does, by role: a batch's record, its rows, its results written and read back,
// the submit journal and the webhook deliveries of compact rows, the reports of its workers, and
// the result cache (what a call, a plan and its upkeep do with it). Each consumer depends on the
// roles it uses; BatchStore and ResultCache implement them, once, over Kysely for SQLite and
// PostgreSQL, and a test (or another backend) can implement any one of them alone.
import type { Claim, JournalEntry } from '../batch/journal.js';
import type { InputRow, ResultLine } from '../batch/types.js';
import type { CacheUse } from '../calls/cache-policy.js';
import type { WorkerReport } from './worker-reports.js';

/**
 * A cached result, opened. The request id and fetch time are the fetching tenant's to see: an
 * entry another tenant fetched (a shared cache) answers without them.
 */
export interface CachedResult {
  outcome: 'found' | 'empty';
  requestId?: string;
  status: string;
  result?: unknown;
  /** Epoch ms when it was fetched. */
  fetchedAt?: number;
}

export interface CacheStats {
  endpoint: string;
  entries: number;
  found: number;
  empty: number;
  expired: number;
  hits: number;
  oldestFetchedAt?: number;
  newestFetchedAt?: number;
}

export interface PurgeRequest {
  endpoint?: string;
  /** Entries fetched longer ago than this many ms. */
  olderThanMs?: number;
  /** Only entries past their time to live. */
  expired?: boolean;
}

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

/** What a loaded batch's plan counts (BatchRecords.planCounts). */
export interface PlanCounts {
  rows: number;
  invalid: number;
  duplicates: number;
  /** Rows the batch sends that the result cache would answer now, and the found among them. */
  cached?: number;
  cachedFound?: number;
}

/** A chunk of rows read to run (BatchRows.readRows). */
export interface RowsRead {
  rows: InputRow[];
  next: number;
  done: boolean;
  /** Lookups this read made in the result cache: rows answered, rows to send. */
  cache: { hits: number; misses: number };
}

/** What a write of result lines did (BatchResults.writeResults). */
export interface ResultsWritten {
  written: number;
  skipped: number;
  inserted: { row: number; outcome: ResultLine['outcome'] }[];
}

/** Which results to read, in which order, from where (ResultReader.results). */
export interface ResultLinesQuery {
  order?: 'input' | 'completion';
  outcome?: ResultLine['outcome'];
  /** The last row (input order) or [written_at, row] (completion order) already seen. */
  after?: number | [number, number];
  limit?: number;
}

/** A page of result lines and where the next one starts (absent: this was the last). */
export interface ResultLinesPage {
  lines: (ResultLine & { keyId?: string })[];
  next?: number | [number, number];
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

/** Which store this is: what a batch records at start and its workers check before serving it. */
export interface IdentifiedStore {
  /** The store's id (made by its migrations) and where it is, without a password. */
  readonly identity: { id: string | undefined; shown: string };
}

/** A batch's record: its endpoint, state and counts, its plan, and its summary once it ended. */
export interface BatchRecords {
  /** The batch's record; undefined when the store has none. */
  record(batchId: string): Promise<BatchRecord | undefined>;
  /** The loaded batch's record; refused (BatchStoreError) when it is missing or still loading. */
  loadedRecord(batchId: string): Promise<BatchRecord>;
  /**
   * What a loaded batch's plan counts: its rows, the invalid ones, the duplicates, and (with
   * `cache`) the rows it sends that the result cache would answer at `nowMs`.
   */
  planCounts(batchId: string, cache?: CacheUse, nowMs?: number): Promise<PlanCounts>;
  /** Keeps the batch's summary (sealed) once it ended. */
  saveSummary(batchId: string, summary: unknown): Promise<void>;
  /** The batch's summary once it ended. */
  summary(batchId: string): Promise<unknown>;
}

/** A batch's rows: loaded once (duplicates marked at the end), then read by number to run. */
export interface BatchRows {
  /**
   * Starts loading a batch's rows. A batch still loading starts again from nothing; a loaded
   * batch is refused (BatchStoreError batch_exists).
   */
  beginLoad(batchId: string, endpoint: string, columns?: string[], cache?: CacheUse): Promise<void>;
  /** Adds rows to a batch being loaded; a row already there is left as it is. */
  addRows(batchId: string, endpoint: string, rows: readonly LoadedRow[]): Promise<void>;
  /** Sets the input's columns of a batch still loading (a JSONL's keys are known at its end). */
  setColumns(batchId: string, columns: string[]): Promise<void>;
  /**
   * Ends the load: counts the rows, marks duplicates (unless `dedupe` is false) and opens the
   * batch to run. Returns its record.
   */
  finishLoad(batchId: string, opts: { blankLines: number; dedupe: boolean }): Promise<BatchRecord>;
  /** Drops a load that failed half way; a loaded batch is left as it is. */
  abandonLoad(batchId: string): Promise<void>;
  /** How many rows share an earlier row's call (marked by finishLoad). */
  duplicateCount(batchId: string): Promise<number>;
  /**
   * Up to `count` rows from row `from` on, in row order, as the batch runs them (rows the result
   * cache answers have their lines written now). `skipWritten`: rows with a result are left out.
   */
  readRows(
    batchId: string,
    from: number,
    count: number,
    opts?: { skipWritten?: boolean; dedupe?: boolean },
  ): Promise<RowsRead>;
  /** Input rows after row `after`, in row order, with their cells. */
  inputRows(
    batchId: string,
    after: number,
    limit: number,
  ): Promise<{ row: number; cells?: unknown; key: Record<string, unknown> }[]>;
}

/** A running batch's results: written once per row, dropped to run again, counted. */
export interface BatchResults {
  /**
   * Writes each line whose row has no result yet (a duplicate's line takes its leader's result).
   * A row already written is skipped: a retried, zombie or duplicate write inserts nothing.
   */
  writeResults(batchId: string, lines: readonly ResultLine[]): Promise<ResultsWritten>;
  /** Removes the results that match (a reopened batch runs its budget-skipped rows again). */
  dropResults(batchId: string, outcome: ResultLine['outcome'], code: string): Promise<number>;
  /** Counts of results by outcome and failure code. */
  counts(batchId: string): Promise<{ outcome: string; code: string | null; n: number }[]>;
  /** Results that shared a call, found results that were sent, and those the cache answered. */
  resultCounts(batchId: string): Promise<{
    duplicates: number;
    foundSent: number;
    cached: number;
    cachedFound: number;
  }>;
  /** The failed results with the lowest row numbers. */
  firstFailed(batchId: string, limit?: number): Promise<{ row: number; code: string | null }[]>;
}

/** A batch's results read back, opened: what exports, follows and the clients' readers page. */
export interface ResultReader {
  /** Result lines with each row's key, one page at a time, in input or completion order. */
  results(batchId: string, opts?: ResultLinesQuery): Promise<ResultLinesPage>;
  /** Input rows after row `after`, in row order, each with its result when it has one. */
  rowsWithResults(
    batchId: string,
    after: number,
    limit: number,
  ): Promise<{ row: number; key: Record<string, unknown>; cells?: unknown; line?: ResultLine }[]>;
  /** Results after row `after` in row order, the result value alone (an export's columns). */
  resultValues(
    batchId: string,
    after: number,
    limit: number,
  ): Promise<{ row: number; result?: unknown }[]>;
  /** Results whose row is not among the batch's input rows. */
  strayResults(batchId: string): Promise<number>;
}

/** A compact row's journal entry, read: what its next attempt and the webhook receiver go by. */
export interface SubmitJournalReader {
  rowEntry(batchId: string, row: number): Promise<JournalEntry | undefined>;
}

/**
 * The submit journal of compact rows (the protocol is in batch/journal.ts): each step compares
 * and sets, so two attempts never both hold a row's claim.
 */
export interface SubmitJournal extends SubmitJournalReader {
  /**
   * Claims `row` for `owner` just before its POST; otherwise returns the earlier entry (a job to
   * poll, or a send that may have landed).
   */
  claimRow(batchId: string, row: number, owner: string): Promise<Claim>;
  /** Records what became of `entry.owner`'s claim; false when the claim is no longer its own. */
  recordRow(batchId: string, entry: JournalEntry): Promise<boolean>;
}

/** Webhook deliveries of compact rows: the receiver keeps them, the row's activity reads them. */
export interface DeliveryInbox {
  /**
   * Keeps a delivery for a row: once per (row, request id), within the row's bound, and never
   * for a row that has its result.
   */
  recordDelivery(
    batchId: string,
    row: number,
    requestId: string | undefined,
    body: unknown,
    nowMs?: number,
  ): Promise<DeliveryRecording>;
  /** The deliveries kept for a row that name `requestId` or no job, oldest first. */
  deliveries(batchId: string, row: number, requestId: string): Promise<StoredDelivery[]>;
}

/** The workers that use this store, as they report themselves (`pcds doctor` reads them). */
export interface WorkerRegistry {
  reportWorker(report: WorkerReport): Promise<void>;
  removeWorkerReport(identity: string): Promise<void>;
  /** The workers of a task queue that reported into this store lately. */
  workerReports(where: { taskQueue: string; namespace: string }): Promise<WorkerReport[]>;
}

/** Every role of the store: what a store opened for a process (a worker, a client) offers. */
export interface StoreRoles
  extends
    IdentifiedStore,
    BatchRecords,
    BatchRows,
    BatchResults,
    ResultReader,
    SubmitJournal,
    DeliveryInbox,
    WorkerRegistry {}

/** A cached result's facts as the service gave them (what a call puts or fills). */
type FetchedResult = { outcome: 'found' | 'empty'; status: string; result?: unknown };

/** The result cache as a single call uses it: a lookup, and the result it fetched put back. */
export interface CallCache {
  /** The fresh entry for a call's parameters, or undefined; a hit is counted on the entry. */
  get(
    endpoint: string,
    params: Record<string, unknown>,
    use: CacheUse | undefined,
    nowMs?: number,
  ): Promise<CachedResult | undefined>;
  /** Remembers a call's accepted job, so the poll that reads its result fills the cache. */
  expect(
    requestId: string,
    endpoint: string,
    params: Record<string, unknown>,
    use: CacheUse | undefined,
    nowMs?: number,
  ): Promise<void>;
  /** A job's result was read: fills the cache if a call expected it (else does nothing). */
  fill(requestId: string, got: FetchedResult, nowMs?: number): Promise<void>;
  /** Puts a result fetched now for these parameters (a job that completed at its submit). */
  put(
    endpoint: string,
    params: Record<string, unknown>,
    use: CacheUse | undefined,
    got: FetchedResult & { requestId: string },
    nowMs?: number,
  ): Promise<void>;
}

/** What a plan counts in the result cache: the rows a run started now would take from it. */
export interface CacheHits {
  /** Of a loaded batch's rows: those the cache would answer, and the found among them. */
  expectedHits(
    batchId: string,
    use: CacheUse | undefined,
    nowMs?: number,
  ): Promise<{ rows: number; found: number }>;
  /** Of these parameter sets (one per row sent): those the cache would answer, and the found. */
  hitsAmong(
    endpoint: string,
    paramSets: readonly Record<string, unknown>[],
    use: CacheUse | undefined,
    nowMs?: number,
  ): Promise<{ rows: number; found: number }>;
}

/** The result cache's upkeep: what `pcds cache` shows and purges, and a worker's sweep. */
export interface CacheUpkeep {
  /** Entries per endpoint: found, empty, past their time to live, hits, oldest and newest. */
  stats(nowMs?: number): Promise<CacheStats[]>;
  /** Removes the entries that match every given condition (none given: every entry). */
  purge(req: PurgeRequest, nowMs?: number): Promise<number>;
  /** Drops entries past their time to live and single-call jobs whose poll never came. */
  sweep(nowMs?: number): Promise<{ expired: number }>;
}

/** Every role of the result cache: what a store opened for a process hands out beside StoreRoles. */
export interface ResultCacheRoles extends CallCache, CacheHits, CacheUpkeep {}
