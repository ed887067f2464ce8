// The typed entry point for services: validate parameters with the contract, then start a durable
// call, a paged person search, a search export or a batch, and await its outcome or keep a small
// handle on it. Workflows are started by their function types, so inputs and results are typed.
import { randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { DataConverter, SearchAttributePair, Workflow } from '@temporalio/common';
import {
  BatchSetupError,
  batchHandle,
  batchNotFound,
  batchResult,
  batchStatus,
  newBatchId,
  checkExportOutput,
  prepareBatch,
  prepareRowsBatch,
  resumeBatch,
  startBatchWorkflow,
  type BatchOptions,
  type BatchRequest,
  type BatchStatus,
  type BatchWorkflowHandle,
} from './client/batch-launch.js';
import { pauseBatchSignal, setBatchWindowSignal } from './batch/messages.js';
import type { BatchPlan } from './batch/plan.js';
import { planPreparedBatch, type PlanLimits } from './client/batch-plan-input.js';
import {
  BATCH_ID_PATTERN,
  MAX_WINDOW,
  type BatchSummary,
  type ExportReport,
} from './batch/types.js';
import { lazyBatchStore, openStoreFromEnv, type LazyBatchStore } from './store/index.js';
import {
  cacheDefaultOf,
  cacheScopeOf,
  CACHE_SCOPES,
  parseAge,
  scopedCacheUse,
  type CacheOption,
  type CacheScope,
  type CacheUse,
} from './calls/cache-policy.js';
import {
  batchResultPages,
  exportBatchFromStore,
  type BatchResultsQuery,
  type StoreExportFormat,
  type StoredResult,
} from './store/export.js';
import { outputsOf, writeBatchOutputs, type BatchOutputs } from './store/outputs.js';
import { orNotFound, outcomeOf, PcdsCallError, PcdsUsageError } from './client-errors.js';
import { connectTemporalClient, type TemporalTlsOptions } from './temporal/connection.js';
import { dataConverterFromEnv } from './temporal/data-converter.js';
import { checkWorkers, type WorkerPresence } from './temporal/pollers.js';
import {
  FINGERPRINT_MEMO,
  idempotencyDigest,
  idSecretFromEnv,
  idSecretFromSettings,
  requestFingerprint,
  type IdSecret,
} from './temporal/idempotency.js';
import {
  findEndpoint,
  formatProblems,
  interactiveRequester,
  OPERATOR_TENANT,
  tenantIdProblem,
  mcpArgumentProblems,
  mcpUnsupportedReason,
  pcdsErrorCode,
  searchCallProblem,
  TRANSPORTS,
  validateInput,
  type AsyncEndpointName,
  type EndpointDef,
  type EndpointParams,
  type EndpointResult,
  type Transport,
} from './contract/index.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsKeyId,
  PcdsOutcome,
  PcdsState,
} from './temporal/search-attributes.js';
import {
  pcdsEndpointCall,
  pcdsPersonSearch,
  pcdsSearchExport,
  type EndpointCallInput,
  type PersonSearchInput,
  type PersonSearchResult,
  type SearchExportInput,
  type SearchExportSummary,
} from './workflows/index.js';
import { callStateQuery } from './calls/signals.js';
import { taskPriorityOf } from './temporal/task-priority.js';
import {
  isScopedId,
  localIdOf,
  resolveScopedId,
  scopedId,
  searchExportWorkflowId,
} from './temporal/workflow-ids.js';
import { workflowWaitReasons, type WaitReason } from './client/wait-reasons.js';
import { runDoctor, type DoctorReport } from './doctor/checks.js';
import type { CallOutcome, CallState } from './calls/types.js';

export { PcdsCallError, PcdsUsageError } from './client-errors.js';

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

/**
 * A cache option as the workflows and the store carry it; refused when the age is not one.
 * Omitted: the deployment's default (PCDS_CACHE).
 */
export function callCacheUse(option: CacheOption | undefined): CacheUse {
  if (option === undefined) return cacheDefaultOf(process.env.PCDS_CACHE);
  if (option === false) return { mode: 'off' };
  if (option === 'refresh') return { mode: 'refresh' };
  if (option.maxAge === undefined) return { mode: 'use' };
  const { maxAge } = option;
  if (typeof maxAge === 'number') {
    if (!Number.isFinite(maxAge) || maxAge < 0)
      throw new PcdsUsageError(
        'invalid_options',
        'cache.maxAge must be a number of milliseconds from 0, or a duration such as "7d"',
      );
    return { mode: 'use', maxAgeMs: Math.round(maxAge) };
  }
  try {
    return { mode: 'use', maxAgeMs: parseAge(maxAge) };
  } catch (err) {
    throw new PcdsUsageError('invalid_options', `cache.maxAge: ${(err as Error).message}`);
  }
}

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

const PREFIX_RE = /^[A-Za-z0-9_.-]{1,40}$/;
const MAX_KEY_LENGTH = 512;

/**
 * The workflow id of a call. Callers pass emails and phone numbers as idempotency keys, so the
 * key itself never enters the id: only its HMAC-SHA256 with the id secret (128 bits), after a
 * readable prefix when the caller gives one it knows to be safe. A plain hash would let anyone
 * who guesses a key find (and read) the call it started.
 */
export function callWorkflowId(
  endpoint: string,
  idempotencyKey?: string,
  readablePrefix?: string,
  secret: IdSecret | undefined = idSecretFromEnv(),
): string {
  if (readablePrefix !== undefined && !PREFIX_RE.test(readablePrefix))
    throw new PcdsUsageError(
      'invalid_options',
      'idempotency key prefix: 1-40 letters, digits, _ . - only',
    );
  if (idempotencyKey === undefined) return `call-${endpoint}-${randomUUID()}`;
  if (idempotencyKey.length === 0 || idempotencyKey.length > MAX_KEY_LENGTH)
    throw new PcdsUsageError('invalid_options', `idempotency key: 1-${MAX_KEY_LENGTH} characters`);
  if (!secret)
    throw new PcdsUsageError(
      'id_secret_missing',
      'an idempotency key needs the id secret: set PCDS_ID_SECRET (32+ characters) or PCDS_ID_SECRET_FILE, the same in every client',
    );
  const digest = idempotencyDigest(secret, idempotencyKey);
  return `call-${endpoint}-${readablePrefix ? `${readablePrefix}-` : ''}k${digest}`;
}

export { searchExportWorkflowId } from './temporal/workflow-ids.js';

/**
 * An idempotency key as its tenant's own: the same key from two tenants names two calls. The
 * operator's keys are as given (so are the keys of work started before tenants).
 */
export const tenantIdempotencyKey = (tenant: string, key: string) =>
  tenant === OPERATOR_TENANT ? key : `${tenant}:${key}`;

/** A tenant id checked with the contract's rule (the message names the rule, never the value). */
function checkedTenant(tenant: string): string {
  const problem = tenantIdProblem(tenant);
  if (problem) throw new PcdsUsageError('invalid_options', `tenant: ${problem}`);
  return tenant;
}

function checkedCacheScope(setting: string | undefined): CacheScope {
  if (
    setting !== undefined &&
    setting !== '' &&
    !(CACHE_SCOPES as readonly string[]).includes(setting)
  )
    throw new PcdsUsageError(
      'invalid_options',
      `PCDS_CACHE_SCOPE must be one of ${CACHE_SCOPES.join(', ')}`,
    );
  return cacheScopeOf(setting);
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

export function validatedParams(
  endpointName: string,
  params: Record<string, unknown>,
): { endpoint: EndpointDef; params: Record<string, unknown> } {
  const endpoint = findEndpoint(endpointName);
  if (!endpoint)
    throw new PcdsUsageError(
      'unknown_endpoint',
      `unknown endpoint "${endpointName}" (see \`pcds call --help\`)`,
    );
  if (endpoint.polling === 'sync') {
    throw new PcdsUsageError(
      'not_async_endpoint',
      `${endpoint.name} is synchronous: there is no durable call to start`,
    );
  }
  const v = validateInput(endpoint, params);
  if (!v.ok)
    throw new PcdsUsageError(
      'invalid_params',
      `invalid parameters for ${endpoint.name}: ${formatProblems(v.problems)}`,
      v.problems,
    );
  return { endpoint, params: v.value };
}

/** Parameters a call cannot take although the endpoint does (a person search's cursor). */
export function checkCallParams(endpoint: EndpointDef, params: Record<string, unknown>): void {
  const problem = endpoint.polling === 'person_search' ? searchCallProblem(params) : undefined;
  if (problem)
    throw new PcdsUsageError(
      'invalid_params',
      `invalid parameters for ${endpoint.name}: ${problem}`,
    );
}

/**
 * A call over MCP needs an endpoint with a tool, no webhook, and parameters the tool accepts (a
 * tool takes fewer than its endpoint): refused here, naming the endpoint, before anything starts.
 */
export function checkTransport(
  endpoint: EndpointDef,
  params: Record<string, unknown>,
  transport: string,
  webhook: boolean,
): void {
  if (!(TRANSPORTS as readonly string[]).includes(transport))
    throw new PcdsUsageError(
      'invalid_options',
      `transport must be one of ${TRANSPORTS.join(', ')} (got "${transport}")`,
    );
  if (transport !== 'mcp') return;
  const why = mcpUnsupportedReason(endpoint, { webhook });
  if (why) throw new PcdsUsageError('mcp_unsupported', why);
  const problems = mcpArgumentProblems(endpoint.mcpTool!, params);
  if (problems.length)
    throw new PcdsUsageError(
      'invalid_params',
      `invalid parameters for ${endpoint.mcpTool} over MCP: ${formatProblems(problems)}`,
      problems,
    );
}

const isIntIn = (n: number | undefined, min: number, max: number) =>
  n !== undefined && Number.isInteger(n) && n >= min && n <= max;

function checkPaging(maxResults: number, pageSize: number | undefined, maxOfMax: number) {
  if (!isIntIn(maxResults, 1, maxOfMax))
    throw new PcdsUsageError(
      'invalid_options',
      `maxResults must be an integer from 1 to ${maxOfMax}`,
    );
  if (pageSize !== undefined && !isIntIn(pageSize, 1, 100))
    throw new PcdsUsageError('invalid_options', 'pageSize must be an integer from 1 to 100');
}

export async function createPcdsClient(options: PcdsClientOptions = {}): Promise<PcdsClient> {
  // A bad tenant or cache scope is refused before anything connects.
  const rootTenant = checkedTenant(options.tenant ?? (process.env.PCDS_TENANT || OPERATOR_TENANT));
  const cacheScope = options.cacheScope ?? checkedCacheScope(process.env.PCDS_CACHE_SCOPE);
  const dataConverter = options.dataConverter ?? dataConverterFromEnv();
  const ownsConnection = !options.connection;
  const connection =
    options.connection ??
    (await connectTemporalClient({
      address: options.address ?? '127.0.0.1:7233',
      ...(options.namespace ? { namespace: options.namespace } : {}),
      ...(options.tls !== undefined ? { tls: options.tls } : {}),
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    }));
  const temporal = new Client({
    connection,
    namespace: options.namespace ?? 'default',
    dataConverter,
  });
  const taskQueue = options.taskQueue ?? 'pcds';
  const ownsStore = !options.store;
  const store = options.store ?? lazyBatchStore(() => openStoreFromEnv());
  const defaults = options.defaults ?? {};
  const idSecret =
    options.idSecret !== undefined
      ? idSecretFromSettings({ PCDS_ID_SECRET: options.idSecret })
      : idSecretFromEnv();

  /**
   * Starts a workflow, or finds the one its idempotency key started before. With a fingerprint
   * (the key was given), the request is compared with the one that key first carried, stored in
   * the memo as a keyed HMAC: the same request gets the earlier workflow back, another one is
   * refused with idempotency_conflict rather than answered with someone else's work.
   */
  async function startOrFind<W extends Workflow>(
    workflowType: W,
    start: WorkflowStartOptions<W>,
    fingerprint: { endpoint: string; value: string } | undefined,
  ): Promise<WorkflowHandle<W>> {
    let workflow: WorkflowHandle<W>;
    try {
      workflow = await temporal.workflow.start(workflowType, {
        ...start,
        ...(fingerprint ? { memo: { ...start.memo, [FINGERPRINT_MEMO]: fingerprint.value } } : {}),
      });
    } catch (err) {
      // The same key finished earlier: that workflow is the answer, not a second one.
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      workflow = temporal.workflow.getHandle<W>(start.workflowId);
    }
    if (fingerprint) {
      const { memo } = await workflow.describe();
      if (memo?.[FINGERPRINT_MEMO] !== fingerprint.value)
        throw new PcdsUsageError(
          'idempotency_conflict',
          `the idempotency key was used before for a ${fingerprint.endpoint} request with other parameters: nothing was started (use another key)`,
        );
    }
    return workflow;
  }

  // A call's result is typed by its endpoint (contract/result-types.ts): what the service returns
  // at the endpoint's result path, as the interface documents it.
  const callHandleOf = <R = unknown>(
    workflow: WorkflowHandle<typeof pcdsEndpointCall>,
  ): CallHandle<R> => {
    const { workflowId } = workflow;
    const notFound = () =>
      new PcdsUsageError('call_not_found', `no call with workflow id ${workflowId}`);
    return {
      workflowId,
      workflow,
      async result() {
        const outcome = await orNotFound(() => outcomeOf(workflowId, workflow.result()), notFound);
        // Failures end the workflow with their code; a returned failure is reported the same way.
        if (outcome.outcome === 'failed')
          throw new PcdsCallError(
            pcdsErrorCode(outcome.code),
            outcome.message,
            workflowId,
            outcome.httpStatus,
            outcome.requestId,
          );
        return outcome as CallSuccess<R>;
      },
      state: () => orNotFound(() => workflow.query(callStateQuery), notFound),
      waiting: () => orNotFound(() => workflowWaitReasons(temporal, workflowId), notFound),
    };
  };

  /** An export by its id as the system knows it, shown to its caller by its own id. */
  const exportHandleOf = (scoped: string, exportId: string): SearchExportHandle => {
    const workflowId = searchExportWorkflowId(scoped);
    const workflow = temporal.workflow.getHandle<typeof pcdsSearchExport>(workflowId);
    return {
      exportId,
      workflowId,
      workflow,
      result: () =>
        orNotFound(
          () => outcomeOf(workflowId, workflow.result()),
          () => new PcdsUsageError('export_not_found', `no search export with id ${exportId}`),
        ),
    };
  };

  /** A batch by its id as the system knows it (the store's), shown to its caller by its own id. */
  const batchHandleOf = <R = unknown>(
    workflow: BatchWorkflowHandle,
    scoped: string,
    shownId: string,
    outputs?: BatchOutputs,
  ): BatchHandle<R> => {
    const batchId = scoped;
    const notFound = () => batchNotFound(shownId);
    return {
      batchId: shownId,
      workflowId: workflow.workflowId,
      workflow,
      status: () => batchStatus(workflow),
      pause: (reason) =>
        orNotFound(() => workflow.signal(pauseBatchSignal, reason ? { reason } : {}), notFound),
      resume: async (options = {}) => {
        await resumeBatch(temporal, batchId, options);
      },
      async setWindow(width) {
        if (!isIntIn(width, 1, MAX_WINDOW))
          throw new PcdsUsageError(
            'invalid_options',
            `the window must be an integer from 1 to ${MAX_WINDOW}`,
          );
        await orNotFound(() => workflow.signal(setBatchWindowSignal, width), notFound);
      },
      async cancel() {
        await orNotFound(() => workflow.cancel(), notFound);
      },
      async result() {
        const summary = await batchResult(workflow);
        if (!outputs) return summary;
        return (await writeBatchOutputs(await store.get(), batchId, outputs, summary)) ?? summary;
      },
      async writeOutputs() {
        const status = await batchStatus(workflow);
        const named = status.ended ? status.summary : status.progress;
        if (!named?.stored || !named.output) return undefined;
        const files = outputs ?? outputsOf(named);
        return writeBatchOutputs(
          await store.get(),
          batchId,
          files,
          status.ended ? status.summary : undefined,
        );
      },
      async *results(query = {}) {
        for await (const page of batchResultPages(await store.get(), batchId, query))
          yield* page.lines as StoredResult<R>[];
      },
      async export({ format, output, rawCells }) {
        const ended = await workflow
          .describe()
          .then((d) => d.status.name !== 'RUNNING' && d.status.name !== 'CONTINUED_AS_NEW');
        return exportBatchFromStore(await store.get(), {
          batchId,
          format,
          target: resolve(output),
          noLine: ended ? 'not_run' : 'pending',
          ...(rawCells ? { rawCells: true } : {}),
        });
      },
    };
  };

  let closedBy: Promise<void> | undefined;
  /** The client of one tenant: every client and every withTenant view is one of these. */
  const forTenant = (tenant: string, root = false): PcdsClient => {
    const startCall: PcdsClient['startCall'] = async (endpointName, rawParams, opts = {}) => {
      // Checked at run time too: a caller in JavaScript, or one that casts, gets a clear refusal.
      const { endpoint, params } = validatedParams(
        endpointName,
        rawParams as Record<string, unknown>,
      );
      checkCallParams(endpoint, params);
      const transport = opts.transport ?? defaults.transport ?? 'http';
      checkTransport(endpoint, params, transport, opts.webhook === true);
      const idempotencyKey =
        opts.idempotencyKey !== undefined
          ? tenantIdempotencyKey(tenant, opts.idempotencyKey)
          : undefined;
      const workflowId = callWorkflowId(
        endpoint.name,
        idempotencyKey,
        opts.idempotencyKeyPrefix,
        idSecret,
      );
      const cache = scopedCacheUse(callCacheUse(opts.cache ?? defaults.cache), tenant, cacheScope);
      // A single call is a person's (or a service's) waiting: interactive, the tenant's.
      const requester = interactiveRequester(tenant);
      const { transport: _defaultTransport, cache: _defaultCache, ...tuning } = defaults;
      const input: EndpointCallInput = {
        endpoint: endpoint.name,
        params,
        ...tuning,
        cache,
        ...(transport === 'mcp' ? { transport } : {}),
        ...(opts.keyId ? { keyId: opts.keyId } : {}),
        ...(opts.webhook ? { webhook: true } : {}),
        ...(opts.pollIntervalMs ? { pollIntervalMs: opts.pollIntervalMs } : {}),
        ...(opts.maxWaitMs ? { maxWaitMs: opts.maxWaitMs } : {}),
        requester,
      };
      const attrs: SearchAttributePair[] = [
        { key: PcdsEndpoint, value: endpoint.name },
        { key: PcdsOutcome, value: 'running' },
        { key: PcdsState, value: 'submitting' },
      ];
      if (opts.keyId) attrs.push({ key: PcdsKeyId, value: opts.keyId });
      const workflow = await startOrFind(
        pcdsEndpointCall,
        {
          taskQueue,
          workflowId,
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          workflowIdConflictPolicy: 'USE_EXISTING',
          typedSearchAttributes: attrs,
          ...(opts.memo ? { memo: opts.memo } : {}),
          priority: taskPriorityOf(requester),
          staticSummary: `${endpoint.name} call`,
        },
        // idSecret is set: callWorkflowId refused the key otherwise.
        opts.idempotencyKey !== undefined
          ? {
              endpoint: endpoint.name,
              value: requestFingerprint(idSecret!, endpoint.name, params),
            }
          : undefined,
      );
      return callHandleOf<EndpointResult<typeof endpointName>>(workflow);
    };

    return {
      temporal,
      tenant,
      withTenant: (other) => forTenant(checkedTenant(other)),
      taskQueue,
      workers: () => checkWorkers(temporal, taskQueue),
      startCall,
      async call(endpoint, params, opts) {
        const handle = await startCall(endpoint, params, opts);
        return handle.result();
      },
      getCall: <R>(workflowId: string) =>
        callHandleOf<R>(temporal.workflow.getHandle<typeof pcdsEndpointCall>(workflowId)),

      async searchPeople(rawParams, opts) {
        const { params } = validatedParams('person_search', rawParams);
        checkPaging(opts.maxResults, opts.pageSize, Number.MAX_SAFE_INTEGER);
        const idempotencyKey =
          opts.idempotencyKey !== undefined
            ? tenantIdempotencyKey(tenant, opts.idempotencyKey)
            : undefined;
        const workflowId = callWorkflowId(
          'person_search',
          idempotencyKey,
          opts.idempotencyKeyPrefix,
          idSecret,
        ).replace(/^call-/, 'search-');
        const requester = interactiveRequester(tenant);
        const input: PersonSearchInput = {
          params,
          maxResults: opts.maxResults,
          ...(opts.pageSize ? { pageSize: opts.pageSize } : {}),
          ...(opts.keyId ? { keyId: opts.keyId } : {}),
          pollIntervalMs: opts.pollIntervalMs ?? defaults.pollIntervalMs,
          maxWaitMs: opts.maxWaitMs ?? defaults.maxWaitMs,
          output: { kind: 'return' },
          requester,
        };
        const workflow = await startOrFind(
          pcdsPersonSearch,
          {
            taskQueue,
            workflowId,
            args: [input],
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            workflowIdConflictPolicy: 'USE_EXISTING',
            typedSearchAttributes: [
              { key: PcdsEndpoint, value: 'person_search' },
              { key: PcdsOutcome, value: 'running' },
            ],
            priority: taskPriorityOf(requester),
            staticSummary: `person_search, up to ${opts.maxResults} rows`,
          },
          opts.idempotencyKey !== undefined
            ? {
                endpoint: 'person_search',
                value: requestFingerprint(idSecret!, 'person_search', {
                  params,
                  maxResults: opts.maxResults,
                }),
              }
            : undefined,
        );
        return outcomeOf(workflowId, workflow.result());
      },

      async startSearchExport(rawParams, opts) {
        const { params } = validatedParams('person_search', rawParams);
        checkPaging(opts.maxResults, opts.pageSize, MAX_EXPORT_RESULTS);
        const exportId = opts.exportId ?? `s${newBatchId().slice(1)}`;
        if (!BATCH_ID_PATTERN.test(exportId))
          throw new PcdsUsageError(
            'invalid_batch_id',
            'export id: 1 to 64 letters, digits, _ or -',
          );
        // The tenant's own id: another tenant's export of the same name is another export.
        const scoped = scopedId(tenant, exportId);
        const requester = interactiveRequester(tenant);
        checkExportOutput(opts.output);
        const output = resolve(opts.output);
        const existing = await stat(output).catch(() => undefined);
        if (existing && existing.size > 0 && !opts.overwrite) {
          throw new PcdsUsageError(
            'output_exists',
            `the output file ${opts.output} exists and is not empty: choose another output or overwrite it`,
          );
        }
        const pollIntervalMs = opts.pollIntervalMs ?? defaults.pollIntervalMs;
        const maxWaitMs = opts.maxWaitMs ?? defaults.maxWaitMs;
        const input: SearchExportInput = {
          params,
          maxResults: opts.maxResults,
          output,
          exportId: scoped,
          requester,
          ...(opts.pageSize ? { pageSize: opts.pageSize } : {}),
          ...(opts.keyId ? { keyId: opts.keyId } : {}),
          ...(pollIntervalMs ? { pollIntervalMs } : {}),
          ...(maxWaitMs ? { maxWaitMs } : {}),
        };
        try {
          await temporal.workflow.start(pcdsSearchExport, {
            taskQueue,
            workflowId: searchExportWorkflowId(scoped),
            args: [input],
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            priority: taskPriorityOf(requester),
            typedSearchAttributes: [
              { key: PcdsBatchId, value: scoped },
              { key: PcdsEndpoint, value: 'person_search' },
            ],
            ...(opts.memo ? { memo: opts.memo } : {}),
            staticSummary: `person search export of up to ${opts.maxResults} rows`,
          });
        } catch (err) {
          if (err instanceof WorkflowExecutionAlreadyStartedError)
            throw new PcdsUsageError(
              'export_exists',
              `a search export with id ${exportId} already exists: choose another id`,
            );
          throw err;
        }
        return exportHandleOf(scoped, exportId);
      },
      getSearchExport(exportId) {
        const scoped = resolveScopedId(tenant, exportId);
        // Another tenant's export is not found, as an id that names nothing.
        if (scoped === undefined && isScopedId(exportId))
          throw new PcdsUsageError('export_not_found', `no search export with id ${exportId}`);
        if (scoped === undefined)
          throw new PcdsUsageError(
            'invalid_batch_id',
            'export id: 1 to 64 letters, digits, _ or -',
          );
        return exportHandleOf(scoped, localIdOf(tenant, scoped));
      },

      async startBatch({ memo, ...request }) {
        const withDefaults = {
          ...request,
          tenant: request.tenant ?? tenant,
          pollIntervalMs: request.pollIntervalMs ?? defaults.pollIntervalMs,
          maxWaitMs: request.maxWaitMs ?? defaults.maxWaitMs,
          webhookFallbackPollMs: request.webhookFallbackPollMs ?? defaults.webhookFallbackPollMs,
          ...((request.transport ?? defaults.transport)
            ? { transport: request.transport ?? defaults.transport }
            : {}),
        };
        const rows =
          'rows' in request
            ? (request.rows as
                Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>)
            : undefined;
        const prepared =
          'rows' in withDefaults
            ? prepareRowsBatch(withDefaults)
            : await prepareBatch(withDefaults);
        await startBatchWorkflow(temporal, taskQueue, prepared, {
          store: await store.get(),
          ...(rows ? { rows } : {}),
          ...(memo ? { memo } : {}),
          cache: callCacheUse(request.cache ?? defaults.cache),
          cacheScope,
        });
        // A handle bound to the batch's id, not to this execution: a batch resumed with a higher
        // budget after it ended runs again as a new execution under the same id.
        const { batchId, output, csvOutput, csvRawCells } = prepared.input;
        return batchHandleOf<EndpointResult<NonNullable<typeof request.endpoint>>>(
          batchHandle(temporal, batchId),
          batchId,
          localIdOf(withDefaults.tenant, batchId),
          output
            ? {
                output,
                ...(csvOutput ? { csvOutput } : {}),
                ...(csvRawCells ? { csvRawCells } : {}),
              }
            : undefined,
        );
      },
      getBatch<R>(batchId: string) {
        const scoped = resolveScopedId(tenant, batchId);
        // Another tenant's batch is not found, as an id that names nothing.
        if (scoped === undefined && isScopedId(batchId)) throw batchNotFound(batchId);
        // The id is not echoed: a malformed one may be anything, personal data included.
        if (scoped === undefined)
          throw new BatchSetupError(
            'invalid_batch_id',
            'not a batch id: 1 to 64 letters, digits, _ or -',
          );
        return batchHandleOf<R>(batchHandle(temporal, scoped), scoped, localIdOf(tenant, scoped));
      },

      async planBatch(request, limits) {
        return planPreparedBatch(
          await prepareBatch({ ...request, tenant: request.tenant ?? tenant }, { dryRun: true }),
          limits,
        );
      },

      doctor: (env = process.env) => runDoctor(env),

      async close() {
        // A view from withTenant shares the connection and store of the client that made it.
        if (!root) return;
        if (closedBy !== undefined) return closedBy;
        closedBy = (async () => {
          if (ownsStore) await store.close();
          if (ownsConnection) await connection.close();
        })();
        return closedBy;
      },
    };
  };

  return forTenant(rootTenant, true);
}
