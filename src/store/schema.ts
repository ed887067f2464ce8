// The store's tables as Kysely sees them. One schema for both engines (PostgreSQL and the
// embedded SQLite): values that hold person data are sealed text (store/sealer.ts), lookups are
// keyed HMACs, and every other column is an id, a count, a code or a time.
/** A batch's own record: what it runs and how far its rows were loaded. */
export interface BatchTable {
  batch_id: string;
  endpoint: string;
  /** loading: rows are still coming in; loaded: the batch may run over them. */
  state: 'loading' | 'loaded';
  /** Rows loaded so far (valid and invalid), numbered 1..total. */
  total: number;
  blank_lines: number;
  invalid: number;
  /** Sealed JSON: the input's columns in order (header cells are file content). */
  columns: string | null;
  /** Sealed JSON of the batch's summary once it ended. */
  summary: string | null;
  created_at: string;
  loaded_at: string | null;
  /** JSON of the batch's cache policy ({mode, maxAgeMs}); null: no cache. */
  cache: string | null;
}

/** One input row: exactly one per (batch, row). */
export interface RowTable {
  batch_id: string;
  row: number;
  /** Sealed JSON {params, key, cells}: the row as read, parameters mapped. */
  data: string;
  /** Why the row cannot be sent (names the rule, never a value); null for a valid row. */
  problem: string | null;
  /** invalid_row or row_too_large for an invalid row. */
  code: string | null;
  /** Keyed HMAC of the normalised parameters; null for an invalid row. */
  lookup: string | null;
  /** The first earlier row with the same lookup: this row shares its call. */
  duplicate_of: number | null;
  /**
   * Erasure subjects (keyed HMACs of the identifiers, see person-identifiers.ts) of the row's
   * parameters and cells, space-separated; null when they name none.
   */
  subjects: string | null;
}

/** One result: exactly one per (batch, row), by the primary key. */
export interface ResultTable {
  batch_id: string;
  row: number;
  outcome: 'found' | 'empty' | 'failed' | 'skipped';
  code: string | null;
  /** Sealed: a service's message may quote what it was sent. */
  message: string | null;
  request_id: string | null;
  key_id: string | null;
  duplicate_of: number | null;
  /** Sealed JSON of the result. */
  result: string | null;
  /** Epoch milliseconds when the line was written: the order of completion. */
  written_at: number;
  /**
   * Epoch ms when the result, taken from the cache, was fetched; null when fetched for the row; 0
   * when another tenant's request fetched it (a shared cache shows neither its time nor its id).
   */
  cached_at: number | null;
  /**
   * Erasure subjects of the result and its message (of the cached entry's request too, for a
   * result taken from the cache); null when they name none or the result predates them.
   */
  subjects: string | null;
}

/**
 * The submit journal of compact rows (see batch/journal.ts for the protocol): a row is
 * claimed before its POST, marked accepted with its job after a 202, released after a refusal
 * that sent nothing. Ids, codes and times only: nothing personal.
 */
export interface JournalTable {
  batch_id: string;
  row: number;
  state: 'sending' | 'accepted' | 'released';
  /** The attempt that wrote it: `runId/activityId/attempt`. */
  owner: string;
  key_id: string | null;
  request_id: string | null;
  status: string | null;
  /** Epoch ms when the 202 arrived. */
  accepted_at: number | null;
}

/**
 * One cached result per lookup (endpoint and normalised parameters, keyed HMAC): found or empty,
 * never a failure. The result is sealed; the rest is ids, codes and times.
 */
export interface CacheTable {
  lookup: string;
  endpoint: string;
  outcome: 'found' | 'empty';
  /** The request that fetched it. */
  request_id: string;
  status: string | null;
  /** Sealed JSON of the result (null when empty). */
  result: string | null;
  /** Erasure subjects of the request's parameters and of the result, space-separated. */
  subjects: string | null;
  fetched_at: number;
  expires_at: number;
  hits: number;
  /** The tenant whose request fetched it; null: the operator's (entries from before tenants). */
  scope: string | null;
}

/** A single call's accepted job, until a poll reads its result into the cache. */
export interface CachePendingTable {
  request_id: string;
  lookup: string;
  endpoint: string;
  subjects: string | null;
  created_at: number;
  /** The tenant whose call expects it (as pcds_cache.scope). */
  scope: string | null;
}

/**
 * A webhook delivery for a compact row (which has no workflow to signal), kept until the row
 * ends: one per (batch, row, request id), so a repeated delivery adds nothing.
 */
export interface DeliveryTable {
  batch_id: string;
  row: number;
  /** The job the envelope names; '' for a failure envelope, which names none. */
  request_id: string;
  /** Sealed JSON of the delivered envelope (it holds the result). */
  body: string;
  /** Epoch ms when the receiver took it. */
  received_at: number;
  /** Erasure subjects of the envelope's result. */
  subjects: string | null;
}

/** The store's own facts by name: `store_id` (its identity, random), `created_at`. */
export interface StoreMetaTable {
  name: string;
  value: string;
}

/**
 * What a worker last reported of itself (store/worker-reports.ts): its identity (the one it polls
 * Temporal with), where it polls, and a JSON report of ids, versions and fingerprints (never a
 * secret, never personal data).
 */
export interface WorkerTable {
  identity: string;
  task_queue: string;
  namespace: string;
  /** JSON of a WorkerReport. */
  report: string;
  /** Epoch ms when the worker started, and when it last reported. */
  started_at: number;
  seen_at: number;
}

export interface StoreSchema {
  pcds_batches: BatchTable;
  pcds_rows: RowTable;
  pcds_results: ResultTable;
  pcds_journal: JournalTable;
  pcds_cache: CacheTable;
  pcds_cache_pending: CachePendingTable;
  pcds_deliveries: DeliveryTable;
  pcds_store_meta: StoreMetaTable;
  pcds_workers: WorkerTable;
}
