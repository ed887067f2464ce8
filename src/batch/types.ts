// Data of a batch shared by the batch workflow, its activities, the client and the CLI. Pure
// types: workflow code imports this file. Rows are numbered from 1 (the first data row).

import type { PcdsErrorCode } from '../contract/errors.js';
import type { Transport } from '../contract/mcp-replies.js';
import type { RequestCounts } from './job-duration.js';
import type { EtaInput, SentLog } from './plan.js';
import { LOCAL_ID_PATTERN, type RowIdScheme } from '../contract/workflow-ids.js';

export type InputFormat = 'csv' | 'jsonl';

/** Where a file's rows are read from; the CSV header is read once and carried. */
export interface InputSource {
  /** Absolute path: workers read it, so they must see the same filesystem as the CLI. */
  path: string;
  format: InputFormat;
  /** Parameter name -> column (or JSON key) name, for inputs whose names differ. */
  columnMap?: Record<string, string>;
  /** Columns that are not parameters and are left out of the calls. */
  ignoreColumns?: string[];
  /**
   * The file's encoding as the caller named it (batch-io/text-encoding.ts). Absent: UTF-8, and a
   * line that is not UTF-8 is read as Windows-1252.
   */
  encoding?: string;
}

/** Position of the next unread row. */
export interface ReadCursor {
  /** Number of the next row (1-based). */
  row: number;
  byteOffset: number;
  done: boolean;
}

export interface ValidRow {
  row: number;
  /** Byte offset where the row starts, so a new run can resume at the first unstarted row. */
  offset: number;
  params: Record<string, unknown>;
  key: Record<string, unknown>;
  /** Parameters whose value had whitespace around it, trimmed before they were checked. */
  trimmed?: string[];
  /** Parameters left out because their bytes could not be read in the file's encoding. */
  unreadable?: string[];
  /** The earlier row with the same parameters once normalised: this row shares its call. */
  duplicateOf?: number;
  /** How many later rows share this row's call. */
  followers?: number;
  /**
   * How the leader's line ended, when it is in the output or the store already (set by the
   * reader: a stored batch's duplicates, or a batch reopened over its output).
   */
  leaderLine?: { outcome: ResultLine['outcome']; code?: string };
  /**
   * The result cache answered the row when it was read: its line is written, and the batch
   * takes it without a call (no request, no credit). An entry another tenant fetched (a shared
   * cache) comes without its request id and time.
   */
  cached?: { outcome: 'found' | 'empty'; requestId?: string; fetchedAt?: string };
}

/** A duplicate row waiting for its leader: no parameters (it is never sent). */
export type ParkedRow = Pick<ValidRow, 'row' | 'key'> & { duplicateOf: number };

export interface InvalidRow {
  row: number;
  offset: number;
  /** Names the fields and the rule, never the values. */
  problem: string;
  /** invalid_row when absent; row_too_large for a row over the size limit. */
  code?: string;
  key: Record<string, unknown>;
}

export type InputRow = ValidRow | InvalidRow;

export const isInvalidRow = (r: InputRow): r is InvalidRow => 'problem' in r;

export interface ReadRowsRequest {
  source: InputSource;
  endpoint: string;
  /** CSV header as found by inspectInput; unused for JSONL. */
  header?: string[];
  from: ReadCursor;
  count: number;
  /** A longer row fails with row_too_large; the worker's PCDS_MAX_ROW_BYTES when absent. */
  maxRowBytes?: number;
  /** The chunk's rows stop before this many bytes (serialized), but hold at least one row. */
  maxBytes?: number;
}

export interface ReadRowsResult {
  rows: InputRow[];
  next: ReadCursor;
}

export interface InputInspection {
  total: number;
  header?: string[];
  /** Where the first data row starts. */
  dataOffset: number;
  /** Lines with nothing but spaces: skipped, not rows. */
  blankLines: number;
  /** Rows that were not UTF-8 and were read as Windows-1252 (no encoding named): none when absent. */
  notUtf8Rows?: number;
}

/** One line of the output file: exactly one per input row. */
export interface ResultLine {
  row: number;
  key: Record<string, unknown>;
  /** skipped: not sent, and not charged (code credit_budget: the batch's budget was spent). */
  outcome: 'found' | 'empty' | 'failed' | 'skipped';
  code?: string;
  message?: string;
  requestId?: string;
  result?: unknown;
  /**
   * The row whose call this row shared (same parameters once normalised): the writer copies that
   * row's line (result, request id, code, message) from the output.
   */
  duplicateOf?: number;
  /** The result came from the result cache: no request, no credit. */
  cached?: true;
  /** When a cached result was fetched (ISO 8601); requestId is the request that fetched it. */
  fetchedAt?: string;
}

/** Code of a row that was not sent because its input is malformed. */
export const INVALID_ROW = 'invalid_row' satisfies PcdsErrorCode;
/** Code of a row skipped because it could have taken the credits past the batch's budget. */
export const CREDIT_BUDGET = 'credit_budget' satisfies PcdsErrorCode;
/** Code of a row that was not sent because it is over the row size limit. */
export const ROW_TOO_LARGE = 'row_too_large' satisfies PcdsErrorCode;
/** Code of a batch (or a compact row of one) started before the store: not run by this release. */
export const BATCH_BEFORE_STORE = 'batch_before_store' satisfies PcdsErrorCode;

export type BatchStateName =
  'running' | 'paused' | 'draining' | 'cancelling' | 'done' | 'cancelled';

export interface PauseReason {
  code: string;
  message: string;
  keyId?: string;
}

export interface PoolKey {
  id: string;
  /** Requests per minute: the key's share of the rows is proportional to it. */
  weight: number;
  /** Requests per hour, and how many times faster the worker's throttle windows run (for the ETA). */
  perHour?: number;
  timeScale?: number;
  /** false: the worker's throttle is off; the ETA follows the rows per second. */
  throttled?: boolean;
  /** Set when the key left the pool (401/403). */
  removed?: { code: string; at: string };
}

export interface KeyPoolState {
  keys: PoolKey[];
  /** Smooth weighted round-robin counters, one per key, in the order of `keys`. */
  current: number[];
  /** Rows started per key, for progress. */
  started: Record<string, number>;
}

export interface Counters {
  done: number;
  found: number;
  empty: number;
  failed: number;
  failedByCode: Record<string, number>;
  /** Rows not sent for the credit budget (absent before the first). */
  skipped?: number;
  /** Rows that shared an earlier row's call (counted in found, empty, failed or skipped too). */
  duplicates?: number;
  /**
   * Credits charged so far, as the batch counts them: each row sent that came back found, at
   * the endpoint's typical price (batch/cost.ts). Empty results and duplicates are free.
   */
  credits?: number;
  /** Rows the result cache answered (counted in found or empty too): no request, no credit. */
  cached?: number;
  /** Credits the cache saved: each cached found row at the endpoint's typical price. */
  creditsSaved?: number;
}

export interface BatchInput {
  /**
   * The caller's id ([A-Za-z0-9_-]{1,64}), after its tenant and a dot for a tenant other than the
   * operator's (contract/workflow-ids.ts); never derived from row data.
   */
  batchId: string;
  endpoint: string;
  source: InputSource;
  /** Absolute path of the JSONL output. */
  output: string;
  /** Absolute path of a CSV written in row order when the batch ends (`output` streams beside it). */
  csvOutput?: string;
  /** The CSV's cells exactly as they are: no cell starting like a formula is neutralised. */
  csvRawCells?: boolean;
  /** Children in flight at once. */
  window?: number;
  /** Rows read per activity call. */
  chunkSize?: number;
  /** Continue-as-new once the run's history passes this many events. */
  historyThreshold?: number;
  /** Restrict the pool to these configured key ids; all of the worker's keys by default. */
  keyIds?: string[];
  /** Children wait for webhook deliveries instead of polling. */
  webhooks?: boolean;
  /** With webhooks: each child polls this often while no delivery arrives. */
  webhookFallbackPollMs?: number;
  /** Each child submits and polls over this transport (default http). */
  transport?: Transport;
  /** Passed to each child. */
  pollIntervalMs?: number;
  maxWaitMs?: number;
  /** Rows longer than this fail with row_too_large; the worker's PCDS_MAX_ROW_BYTES by default. */
  maxRowBytes?: number;
  /**
   * How often rows carried over a continue-as-new that have not reported are looked up (a call
   * terminated by an operator never reports). Default 10 minutes.
   */
  carriedCheckMs?: number;
  /**
   * Rows run as activities of the batch instead of workflows of their own: fewer history events
   * and several times the rows per second where the service is not the limit. With webhooks, a
   * row's delivery is kept in the store by the receiver, where its activity reads it.
   */
  compact?: boolean;
  /**
   * Rows whose parameters repeat an earlier row's once normalised share its call (one request,
   * one charge) and get a copy of its line marked duplicateOf. On unless false.
   */
  dedupe?: boolean;
  /**
   * Credit budget: no row starts that could take the credits charged (found rows at the
   * endpoint's typical price) past it; the rows left are written as skipped (credit_budget).
   */
  maxCredits?: number;
  /**
   * Set when a finished batch is run again under its id with a higher budget: the rows skipped
   * for the budget lose their lines and run; every other line stays as it is.
   */
  reopen?: boolean;
  /**
   * The batch's rows were loaded into the store under its id, and its results go there: workers
   * never open `source` or `output` (the caller's files, named for display and for the caller's
   * own copy). Every batch sets it; one without it was started by a release before the store
   * (workers read and wrote its files), which workers of this release refuse (batch_before_store).
   */
  store?: boolean;
  /**
   * The identity of that store (its random id) and where it is (no password), recorded by the
   * client that loaded the rows: a worker on another store refuses the batch (store_mismatch).
   * Absent on batches started before stores had an identity: they run unchecked.
   */
  storeId?: string;
  storeShown?: string;
  /**
   * Whose batch it is (a `pcds mcp` caller's label, a client's `tenant`): the shared throttle
   * shares the pool between tenants, then between a tenant's batches. The operator's when absent.
   */
  tenant?: string;
  /** The batch's share weight among its tenant's batches (default 1). */
  weight?: number;
  /**
   * How its rows' workflows are named (see RowIdScheme): set when the batch starts and kept for
   * its whole life; absent from batches started before, which keep their own scheme.
   */
  rowIdScheme?: RowIdScheme;
  /** Set by the workflow itself when it continues as new. */
  carried?: CarriedState;
}

/** What a stored batch's activities are told of its store, to check it is theirs. */
export interface ExpectedStore {
  storeId?: string;
  storeShown?: string;
}

/** The store a batch recorded at start, for its activities' inputs (nothing when it has none). */
export const expectedStoreOf = (input: BatchInput): ExpectedStore =>
  input.storeId
    ? { storeId: input.storeId, ...(input.storeShown ? { storeShown: input.storeShown } : {}) }
    : {};

/** A row whose call runs, and the key it went to. */
export interface InFlightRow {
  row: ValidRow;
  keyId: string;
}

/** What a run hands to the next one: small, no per-row lists but the rows to redo. */
export interface CarriedState {
  cursor: ReadCursor;
  header?: string[];
  total: number;
  counters: Counters;
  /** Rows sent back by a systemic failure, to be started again. At most a window's worth. */
  redo: ValidRow[];
  window: number;
  paused?: PauseReason;
  pool: KeyPoolState;
  startedAt: string;
  runs: number;
  /** Completions per second over the last minute: [epoch second, count]. */
  rate: [number, number][];
  /** History events of the finished runs, for the events-per-row figure. */
  historyEvents: number;
  /** jobMs of the last finished rows, oldest first (see batch/job-duration.ts). */
  jobMs?: number[];
  /** Submits and polls of the rows that finished found or empty. */
  requests?: RequestCounts;
  /** Requests each key sent for the batch over the last hour, for the ETA (batch/plan.ts). */
  sent?: Record<string, SentLog>;
  /** Rows of the input that repeat an earlier row (from the duplicates index), for the ETA. */
  duplicatesTotal?: number;
  /** Blank lines of the input (absent in a state carried from a run that did not count them). */
  blankLines?: number;
  /** The failed rows with the lowest numbers (see batch/failed-rows.ts). */
  failedRows?: FailedRow[];
  /**
   * Rows still in flight when the run continued as new: their calls report to the batch's
   * workflow id, so the next run takes them. Absent when the run drained its window first.
   */
  inFlight?: InFlightRow[];
  /** Reads mark duplicate rows (the store marked them when the rows were loaded). */
  dedupe?: boolean;
  /**
   * Duplicate rows waiting for the row whose call they share (it is in flight or sent back).
   * Counted with the rows read ahead, so at most a window's worth.
   */
  parked?: ParkedRow[];
  /**
   * How leader rows ended, while rows that share their call are still to come. A stored batch
   * keeps it within a run only: its reads give each duplicate its leader's end from the store.
   */
  leaders?: Record<string, LeaderEnd>;
  /** The credit budget is spent: every row left is written as skipped. */
  budgetSpent?: boolean;
  /** The budget as last raised by a resume (the input's maxCredits until then). */
  maxCredits?: number;
  /** Reads leave out rows that have their line already (a reopened batch). */
  skipWritten?: boolean;
}

/**
 * How a leader row ended, for the rows that share its call: its outcome, how many of them are
 * still to come, and its failure code. A tuple: a batch may carry many across continue-as-new.
 */
export type LeaderEnd = [outcome: ResultLine['outcome'], left: number, code?: string];

export interface BatchProgress {
  batchId: string;
  endpoint: string;
  state: BatchStateName;
  total: number;
  done: number;
  found: number;
  empty: number;
  failed: number;
  failedByCode: Record<string, number>;
  inFlight: number;
  window: number;
  paused?: PauseReason;
  pool: { id: string; weight: number; started: number; removed?: string }[];
  /** Rows per second over the last minute. */
  rowsPerSecond: number;
  /**
   * Seconds until the batch ends at its keys' limits (both windows, the requests per row learned
   * so far, the keys in the pool): absent while paused or when no key can send.
   */
  etaSeconds?: number;
  /**
   * What `etaSeconds` was computed from, but the requests already in the keys' windows: a
   * reader that knows the keys' whole use (other traffic on them included: the throttle's state)
   * computes the ETA again from it (batch/plan.ts etaSeconds), at the part of each key the batch
   * has been getting (`shares`). Absent while paused, with the throttle off, and from workers of
   * earlier releases (`shares` too from a few).
   */
  etaBasis?: EtaBasis;
  /** Learned job duration (ms): new rows poll first at about 0.9 of it. Absent while learning. */
  jobMsEstimate?: number;
  /** Submits + polls per row that finished found or empty. */
  requestsPerRow?: number;
  startedAt: string;
  runs: number;
  output: string;
  /** The rows and results are in the store (`output` is the caller's file, written by the caller). */
  stored?: boolean;
  /** The CSV output keeps its cells as they are (BatchInput.csvRawCells). */
  csvRawCells?: boolean;
  /** Blank lines of the input, skipped (not rows). */
  blankLines: number;
  /** The files an export needs; paths and formats only, never row data. */
  source: InputFiles;
  csvOutput?: string;
  failedRows: FailedRow[];
  /** Rows written as skipped because the credit budget was spent. */
  skipped?: number;
  /** Rows that shared an earlier row's call. */
  duplicates?: number;
  /** Credits charged so far, as the batch counts them (see Counters.credits). */
  credits?: number;
  /** The batch's credit budget (--max-credits), if it has one. */
  maxCredits?: number;
  /** Rows the result cache answered, and the credits that saved (see Counters.cached). */
  cached?: number;
  creditsSaved?: number;
}

/** The inputs of a batch's ETA but what its keys already sent (see BatchProgress.etaBasis). */
export type EtaBasis = Pick<EtaInput, 'rowsLeft' | 'requestsPerRow' | 'keys' | 'tailMs' | 'shares'>;

export interface BatchSummary {
  batchId: string;
  endpoint: string;
  state: 'done' | 'cancelled';
  total: number;
  done: number;
  found: number;
  empty: number;
  failed: number;
  failedByCode: Record<string, number>;
  output: string;
  /** The rows and results are in the store (`output` is the caller's file, written by the caller). */
  stored?: boolean;
  /** The CSV output keeps its cells as they are (BatchInput.csvRawCells). */
  csvRawCells?: boolean;
  startedAt: string;
  finishedAt: string;
  seconds: number;
  rowsPerSecond: number;
  runs: number;
  /**
   * Events of the batch workflow's own histories (every run): the rows' workflows are not counted,
   * so a batch of row workflows and a compact batch (rows as activities) compare only together
   * with their rows.
   */
  batchHistoryEvents: number;
  /** Blank lines of the input, skipped (not rows). */
  blankLines: number;
  source: InputFiles;
  csvOutput?: string;
  /** The failed rows with the lowest numbers, at most MAX_FAILED_ROWS, with their codes. */
  failedRows: FailedRow[];
  skipped?: number;
  duplicates?: number;
  credits?: number;
  maxCredits?: number;
  /** Rows the result cache answered (no request, no credit), and the credits that saved. */
  cached?: number;
  creditsSaved?: number;
  /** The learned job duration (ms) at the end, as in the progress. */
  jobMsEstimate?: number;
  /** Submits + polls per row that finished found or empty. */
  requestsPerRow?: number;
  /** What the CSV export wrote, when the batch had a CSV output. */
  csv?: ExportReport;
  /** Why the CSV was not written (the JSONL output is whole all the same). */
  csvError?: string;
}

/** A failed row by number and code only: no key, no message, nothing from the row's data. */
export interface FailedRow {
  row: number;
  code: string;
}

/** How many failed rows progress and summary show. */
export const MAX_FAILED_ROWS = 10;

/** What an export needs of the input: where it is, its format, and the row limit the batch read it with. */
export type InputFiles = Pick<InputSource, 'path' | 'format'> & { maxRowBytes?: number };

/** What an ordered export (batch-io/export.ts from the files, store/export.ts from the store) wrote. */
export interface ExportReport {
  path: string;
  format: 'csv' | 'jsonl' | 'parquet';
  /** In row order (a CSV always is; a JSONL copy is in file order unless sorted). */
  sorted: boolean;
  /** Data rows of the input. */
  inputRows: number;
  /** Rows (CSV) or lines (JSONL) written, not counting the header. */
  written: number;
  /** Input rows with no result line: pending while the batch runs, none at a good end. */
  withoutLine: number;
  /** The first of them by row number (at most MAX_FAILED_ROWS). */
  firstWithoutLine: number[];
  /** Result lines that match no input row or repeat a row, left out of an ordered export. */
  strayLines: number;
}

/** A batch or export id as its caller names it (see contract/workflow-ids.ts for the scoped one). */
export const BATCH_ID_PATTERN = LOCAL_ID_PATTERN;
export const DEFAULT_WINDOW = 50;
export const MAX_WINDOW = 1000;
export const DEFAULT_CHUNK_SIZE = 250;
export const DEFAULT_HISTORY_THRESHOLD = 10_000;
/** Rows longer than this fail with row_too_large (PCDS_MAX_ROW_BYTES). */
export const DEFAULT_MAX_ROW_BYTES = 64 * 1024;
/** The row limit may not go above this: a chunk of one such row stays far under 2 MB. */
export const MAX_ROW_BYTES_LIMIT = 256 * 1024;
/** Bytes of rows per chunk read into the workflow (payloads warn at 256 KB, fail at 2 MB). */
export const DEFAULT_CHUNK_BYTES = 192 * 1024;

/** A batch's one-line summary: its static summary at start, and each run's current details. */
export const batchSummaryLine = (total: number, endpoint: string) =>
  `batch of ${total} ${endpoint} rows`;
