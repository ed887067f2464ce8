// The typed client's public shape: the client, its options, the handles it gives on calls,
// searches, exports and batches, and what they return. The modules beside this one implement it;
// src/client.ts is its entry and re-exports it.
import type { Client, Connection, WorkflowHandle } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type {
  BatchOptions,
  BatchRequest,
  BatchStatus,
  BatchWorkflowHandle,
} from './batch-launch.js';
import type { BatchPlan } from '../batch/plan.js';
import type { PlanLimits } from './batch-plan-input.js';
import type { BatchSummary, ExportReport } from '../batch/types.js';
import type { LazyBatchStore } from '../store/index.js';
import type { CacheOption, CacheScope } from '../calls/cache-policy.js';
import type { BatchResultsQuery, StoreExportFormat, StoredResult } from '../store/export.js';
import type { TemporalTlsOptions } from '../temporal/connection.js';
import type { WorkerPresence } from '../temporal/pollers.js';
import type {
  AsyncEndpointName,
  EndpointParams,
  EndpointResult,
  Transport,
} from '../contract/index.js';
import type {
  EndpointCallInput,
  PersonSearchResult,
  pcdsEndpointCall,
  pcdsSearchExport,
  SearchExportSummary,
} from '../workflows/index.js';
import type { WaitReason } from './wait-reasons.js';
import type { DoctorReport } from '../doctor/checks.js';
import type { CallOutcome, CallState } from '../calls/types.js';

/**
 * Call outcomes a caller receives, a found one with its result typed `R` (a call's endpoint's
 * result: `CallSuccess<EndpointResult<'person_enrichment'>>`); failures are thrown as
 * PcdsCallError.
 */
export type CallSuccess<R = unknown> =
  | (Omit<Extract<CallOutcome, { outcome: 'found' }>, 'result'> & { result: R })
  | Extract<CallOutcome, { outcome: 'empty' }>;

export interface PcdsClientOptions {
  connection?: Connection;
  /** Default 127.0.0.1:7233; ignored when a connection is given. */
  address?: string;
  /**
   * TLS to the frontend (ignored when a connection is given): true for a publicly trusted server,
   * or the client certificate and key (mutual TLS), the server's CA and name, each PEM text or a
   * file path. Default: plain, or TLS when `apiKey` is set.
   */
  tls?: boolean | TemporalTlsOptions;
  /** A Temporal Cloud API key, sent as `Authorization: Bearer` over TLS (never logged). */
  apiKey?: string;
  namespace?: string;
  taskQueue?: string;
  /**
   * Defaults for every call started by this client, batch rows included (e.g. from the PCDS_
   * configuration). `cache`: how calls and batches use the result cache unless they say
   * otherwise (see CacheOption); default PCDS_CACHE (on: use it; off: `false`).
   */
  defaults?: Pick<
    EndpointCallInput,
    'pollIntervalMs' | 'maxWaitMs' | 'webhookFallbackPollMs' | 'transport'
  > & { cache?: CacheOption };
  /**
   * Default: from PCDS_ENCRYPTION* in the environment (the payload codec with the configured keys;
   * refused without a key unless PCDS_ENCRYPTION=off). Workers must use the same keys.
   */
  dataConverter?: DataConverter;
  /**
   * The secret of workflow ids made from idempotency keys, 32+ characters. Default: from
   * PCDS_ID_SECRET / PCDS_ID_SECRET_FILE. Every client that starts work under the same keys (the
   * CLI and `pcds mcp` included) needs the same one; without it, idempotent starts are refused.
   */
  idSecret?: string;
  /**
   * Who this client works for (a tenant id: letters, digits, _ . -; default PCDS_TENANT, else the
   * operator's `default`). A tenant's batch, export ids and idempotency keys are its own (two
   * tenants' `f2` never meet), its result cache entries too (unless `cacheScope` is `shared`), and
   * the shared throttle and Temporal share the pool between tenants. `withTenant` gives a client
   * for another tenant on the same connection.
   */
  tenant?: string;
  /**
   * Whose result cache entries answer: `tenant` (each tenant its own) or `shared` (one for the
   * deployment: an entry another tenant fetched answers without its request id or time). Default
   * PCDS_CACHE_SCOPE, else `tenant`.
   */
  cacheScope?: CacheScope;
  /**
   * Where batches keep their rows and results. Default: PCDS_STORE_URL (or the embedded file
   * under PCDS_DATA_DIR), opened on first use, with the PCDS_ENCRYPTION* keys. Workers must use
   * the same store.
   */
  store?: LazyBatchStore;
}

/**
 * A batch over rows handed in by code (an array or an async iterable of parameter objects), each
 * checked as a JSONL line's object is. Results are read with the handle (results, export); with
 * an `output`, result() also writes that file (JSONL, or CSV by its name) where this client runs.
 */
export type RowsBatchRequest<E extends AsyncEndpointName = AsyncEndpointName> = Omit<
  BatchOptions,
  'endpoint'
> & {
  /** Default person_enrichment. */
  endpoint?: E;
  rows: Iterable<EndpointParams<E>> | AsyncIterable<EndpointParams<E>>;
  output?: string;
};

/** A batch over an input file, its endpoint one of the catalogue's (default person_enrichment). */
export type FileBatchRequest<E extends AsyncEndpointName = AsyncEndpointName> = Omit<
  BatchRequest,
  'endpoint'
> & { endpoint?: E };

/**
 * How a call or a batch uses the result cache (the store's found and empty results, shared by
 * every call and batch on it; a person search is never cached):
 * - `{}` (the default unless PCDS_CACHE=off): a fresh entry answers with no request and no credit
 *   (`cached: true`, `fetchedAt`, and the request id of the job that fetched it); what is
 *   fetched fills the cache.
 * - `{ maxAge }`: the same, but only an entry fetched at most this long ago answers: milliseconds,
 *   or a duration such as "7d", "12h", "30m" (0: never answered, always fetched and stored).
 * - `'refresh'`: fetched again; the result replaces the entry.
 * - `false`: the cache is neither read nor filled.
 */
export type { CacheOption };
/** The former name of CacheOption. */
export type CallCacheOption = CacheOption;

export interface StartCallOptions {
  /**
   * Makes the workflow id deterministic: a repeated start with the same parameters attaches to
   * (or returns) the same call; with other parameters it is refused (idempotency_conflict). Any
   * string (an email, an order number): only its keyed HMAC goes into the workflow id.
   */
  idempotencyKey?: string;
  /** Shown in clear before the hash in the workflow id (e.g. `orders`): never personal data. */
  idempotencyKeyPrefix?: string;
  keyId?: string;
  webhook?: boolean;
  /**
   * 'mcp': submit with the MCP endpoint's tool and poll with check_status (the seven endpoints
   * that have a tool); 'http' (the default) uses the HTTP API.
   */
  transport?: Transport;
  pollIntervalMs?: number;
  maxWaitMs?: number;
  /**
   * How the call uses the result cache (see CallCacheOption): default the client's
   * `defaults.cache`, else use it. Ignored by a start its idempotency key attaches to an earlier call.
   */
  cache?: CacheOption;
  /** Memo fields of the workflow (non-searchable labels, never personal data). */
  memo?: WorkflowMemo;
}

/** Memo fields set on a started workflow, e.g. which `pcds mcp` caller started it. */
export type WorkflowMemo = Record<string, string>;

/** A call under way; `R` is its endpoint's result (unknown for a call found by workflow id). */
export interface CallHandle<R = unknown> {
  workflowId: string;
  /** The outcome (found / empty); throws PcdsCallError when the call failed. */
  result(): Promise<CallSuccess<R>>;
  /** Where the call stands (phase, request id, polls). */
  state(): Promise<CallState>;
  /**
   * Why the call waits now, each reason in a line a person can act on: no worker takes its
   * tasks, its key's window is full until a time, a budget, a step retried after failures.
   * Empty while nothing holds it back (or once it ended). Needs no worker.
   */
  waiting(): Promise<WaitReason[]>;
  workflow: WorkflowHandle<typeof pcdsEndpointCall>;
}

export interface SearchPeopleOptions {
  maxResults: number;
  pageSize?: number;
  keyId?: string;
  /** As for a call: its keyed HMAC goes into the workflow id, after the optional readable prefix. */
  idempotencyKey?: string;
  idempotencyKeyPrefix?: string;
  pollIntervalMs?: number;
  maxWaitMs?: number;
}

/** The service pages a search up to offset 999, so an export holds at most 1,099 rows. */
export const MAX_EXPORT_RESULTS = 1099;

export interface SearchExportOptions {
  /** Most results to export, 1 to MAX_EXPORT_RESULTS. */
  maxResults: number;
  /** JSONL file the worker writes, one line `{row, result}` per result: workers must see this path. */
  output: string;
  /** Results per page, 1-100 (default 100). */
  pageSize?: number;
  keyId?: string;
  /** Letters, digits, _ and - (never personal data); default: generated. A used id is refused. */
  exportId?: string;
  /** Replace an existing non-empty output file. */
  overwrite?: boolean;
  pollIntervalMs?: number;
  maxWaitMs?: number;
  memo?: WorkflowMemo;
}

export interface SearchExportHandle {
  exportId: string;
  workflowId: string;
  /** The export's summary once every page is written; throws PcdsCallError when it failed. */
  result(): Promise<SearchExportSummary>;
  workflow: WorkflowHandle<typeof pcdsSearchExport>;
}

/** A batch; `R` is its endpoint's result (unknown for a batch found by id). */
export interface BatchHandle<R = unknown> {
  batchId: string;
  workflowId: string;
  /**
   * Progress while the batch runs (paused included), its summary once it ended. Answers within
   * seconds: with no worker to answer, what the batch last published (`published`).
   */
  status(): Promise<BatchStatus>;
  /** Stop starting rows; rows in flight finish and are written. The reason must hold no personal data. */
  pause(reason?: string): Promise<void>;
  /**
   * Start rows again (the worker re-reads its keys; after a 402 pause, closes their credit
   * breakers). `maxCredits` raises the credit budget; a batch that ended with rows skipped for
   * its budget then runs again under its id and runs those rows (its other lines stay).
   */
  resume(options?: { maxCredits?: number }): Promise<void>;
  /** Rows in flight at once, 1 to MAX_WINDOW. */
  setWindow(width: number): Promise<void>;
  /** Rows in flight are cancelled; what finished is written, and result() gives the summary. */
  cancel(): Promise<void>;
  /**
   * The summary once the batch ends (state done or cancelled); throws PcdsCallError when it
   * failed. A handle from startBatch with an `output` writes that file (and the CSV, and the
   * summary beside it) from the store first.
   */
  result(): Promise<BatchSummary>;
  /**
   * Writes the batch's files, as named when it started, from the store where this client runs:
   * the JSONL output as far as the batch got, and once it ended the JSONL whole, the CSV and the
   * summary. Nothing for a batch with no output (rows from code without one), or one started
   * before the store (its workers write its files). Returns the summary once it ended.
   */
  writeOutputs(): Promise<BatchSummary | undefined>;
  /** The batch's results from the store, running or ended, a result at a time. */
  results(query?: BatchResultsQuery): AsyncIterable<StoredResult<R>>;
  /** Writes a CSV, JSONL or Parquet of the batch from the store, running or ended. */
  export(options: {
    format: StoreExportFormat;
    output: string;
    rawCells?: boolean;
  }): Promise<ExportReport>;
  workflow: BatchWorkflowHandle;
}

export interface PcdsClient {
  temporal: Client;
  /** The tenant this client works for (`default`: the operator's). */
  tenant: string;
  /**
   * A client for another tenant on the same connection, store and defaults: its ids, idempotency
   * keys and cache entries are that tenant's. Closing it closes nothing (close this client).
   */
  withTenant(tenant: string): PcdsClient;
  /** The task queue this client starts work on. */
  taskQueue: string;
  /** Whether a worker polls that task queue (one bounded describe; 'unknown' if it failed). */
  workers(): Promise<WorkerPresence>;
  /**
   * Starts one durable call of an endpoint of the catalogue: its name, its parameters and its
   * result are typed by the catalogue (`startCall('person_enrichment', { email })`).
   */
  startCall<E extends AsyncEndpointName>(
    endpoint: E,
    params: EndpointParams<E>,
    options?: StartCallOptions,
  ): Promise<CallHandle<EndpointResult<E>>>;
  /** startCall, then its outcome: `(await call('person_enrichment', { email })).result` is a PersonProfile once found. */
  call<E extends AsyncEndpointName>(
    endpoint: E,
    params: EndpointParams<E>,
    options?: StartCallOptions,
  ): Promise<CallSuccess<EndpointResult<E>>>;
  /** A handle on a call started earlier (by workflow id); `R`: its endpoint's result, if known. */
  getCall<R = unknown>(workflowId: string): CallHandle<R>;
  searchPeople(
    params: Record<string, unknown>,
    options: SearchPeopleOptions,
  ): Promise<PersonSearchResult>;
  /** Pages one person search into a JSONL file written by the worker. */
  startSearchExport(
    params: Record<string, unknown>,
    options: SearchExportOptions,
  ): Promise<SearchExportHandle>;
  /** A handle on an export started earlier (by export id). */
  getSearchExport(exportId: string): SearchExportHandle;
  /** Checks the request (endpoint, files, columns, output, id), then starts the batch. */
  startBatch<E extends AsyncEndpointName = 'person_enrichment'>(
    request: (FileBatchRequest<E> | RowsBatchRequest<E>) & { memo?: WorkflowMemo },
  ): Promise<BatchHandle<EndpointResult<E>>>;
  /**
   * What the batch would take on these keys (rows and requests sent, hours at their limits,
   * credits), after the same checks as startBatch and one pass over the input; starts nothing
   * and touches no file.
   */
  planBatch(request: FileBatchRequest, limits: PlanLimits): Promise<BatchPlan>;
  /** A handle on a batch started earlier (by batch id); `R`: its endpoint's result, if known. */
  getBatch<R = unknown>(batchId: string): BatchHandle<R>;
  /**
   * Checks the setup of this process, from the PCDS_ settings in `env` (default: the process's
   * environment), as `pcds doctor` does: Temporal, the workers, the store and that it is theirs,
   * the payload key and id secret (and that they are the workers'), the service, webhooks.
   */
  doctor(env?: NodeJS.ProcessEnv): Promise<DoctorReport>;
  close(): Promise<void>;
}
