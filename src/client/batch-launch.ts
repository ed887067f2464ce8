// Client side of a batch: checks everything that can be checked before a batch starts (endpoint,
// files, columns, output, batch id), then starts the workflow with its search attributes and
// summary, finds it again by id, reads its status and finds its files for an export. Used by
// the CLI, the demo, the client and the tests.
import { randomBytes } from 'node:crypto';
import { access, open, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionStatusName,
  type WorkflowHandle,
} from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import {
  batchRequester,
  findEndpoint,
  mcpUnsupportedReason,
  OPERATOR_TENANT,
  tenantIdProblem,
  weightProblem,
  PcdsError,
  TRANSPORTS,
  type EndpointDef,
  type PcdsErrorCode,
  type Transport,
} from '../contract/index.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsRowsDone,
  PcdsRowsFailed,
  PcdsState,
} from '../temporal/search-attributes.js';
import { makeOpenFilePrivate } from '../files/private-mode.js';
import { checkWorkers, noWorkerMessage, type WorkerPresence } from '../temporal/pollers.js';
import type { batchWorkflow } from '../workflows/batch.js';
import { BATCH_WORKFLOW_TYPE, ROW_WORKFLOW_TYPES } from '../temporal/workflow-types.js';
import { orNotFound, outcomeOf, PcdsUsageError } from '../client-errors.js';
import {
  checkColumnMap,
  ColumnError,
  headerMismatchAnswer,
  parseColumnMap,
} from '../batch/columns.js';
import type { NoLineLabel } from '../batch/flatten.js';
import { batchProgressQuery, resumeBatchSignal } from '../batch/messages.js';
import { formatOf, inspectInput, InputError } from '../batch-io/row-reader.js';
import { checkedEncoding, EncodingError } from '../batch-io/text-encoding.js';
import { BatchStoreError } from '../store/batch-store.js';
import type { BatchRows, IdentifiedStore } from '../store/roles.js';
import { explainProgress } from './batch-waits.js';
import type { WaitReason } from './wait-reasons.js';
import {
  scopedCacheUse,
  type CacheOption,
  type CacheScope,
  type CacheUse,
} from '../calls/cache-policy.js';
import {
  LoadError,
  loadFileIntoStore,
  loadRowsIntoStore,
  type LoadProgress,
  type LoadResult,
} from '../store/load.js';
import {
  BATCH_ID_PATTERN,
  MAX_ROW_BYTES_LIMIT,
  MAX_WINDOW,
  batchSummaryLine,
  type BatchInput,
  type BatchProgress,
  type BatchSummary,
  type InputFiles,
  type InputInspection,
} from '../batch/types.js';
import {
  batchIdOfWorkflowId,
  batchWorkflowId,
  CURRENT_ROW_ID_SCHEME,
  isScopedId,
  scopedId,
} from '../contract/workflow-ids.js';
import { taskPriorityOf } from '../temporal/task-priority.js';
import {
  BATCH_QUERY_ATTEMPTS,
  BATCH_QUERY_BACKOFF,
  NO_JITTER,
  PROGRESS_QUERY_BACKOFF,
  backoffDelayMs,
} from '../calls/backoff.js';

/** A batch could not start (or be found): the message names the problem and the fix. */
export class BatchSetupError extends PcdsError {
  override name = 'BatchSetupError';
  constructor(code: PcdsErrorCode, message: string) {
    super(code, message);
  }
}

/** A batch's options, whatever its rows come from. */
export interface BatchOptions {
  endpoint?: string;
  /** The caller's id for the batch (letters, digits, _ and -); its tenant scopes it. */
  batchId?: string;
  /**
   * Whose batch it is (default: the operator's, `default`): a tenant's batch ids are its own (two
   * tenants' `f2` never meet), and its rows share the pool as its work.
   */
  tenant?: string;
  /** The batch's share of the pool against other batches, 0.001 to 1000 (default 1). */
  weight?: number;
  window?: number;
  keyIds?: string[];
  webhooks?: boolean;
  webhookFallbackPollMs?: number;
  /** Rows run as activities of the batch (see BatchInput.compact). */
  compact?: boolean;
  /** Submit and poll each row over the HTTP API (default) or the MCP endpoint's tools. */
  transport?: Transport;
  /** Replace an existing non-empty output file. */
  overwrite?: boolean;
  /**
   * A .csv output with its cells exactly as they are, for programs that read it; by default a
   * cell a spreadsheet would run as a formula gets a single quote in front (batch/spreadsheet-safe.ts).
   */
  csvRawCells?: boolean;
  historyThreshold?: number;
  chunkSize?: number;
  pollIntervalMs?: number;
  maxWaitMs?: number;
  /** Rows longer than this fail with row_too_large; the worker's PCDS_MAX_ROW_BYTES by default. */
  maxRowBytes?: number;
  /** false: send every row, duplicates included (see BatchInput.dedupe). */
  dedupe?: boolean;
  /** Credit budget (see BatchInput.maxCredits). */
  maxCredits?: number;
  /**
   * How the batch uses the result cache (the client's CacheOption): `{}` to use it (a fresh
   * cached result answers a row with no request and no credit), `{ maxAge: '7d' }` to accept
   * only younger entries, `'refresh'` to fetch every row again and renew the entries, `false`
   * to neither read nor fill. Default: the client's `defaults.cache`, else PCDS_CACHE.
   */
  cache?: CacheOption;
  /**
   * Messages name the files by role ("the input file"), not by path: for `pcds mcp`, whose
   * paths are the server's. The CLI names the paths its user gave.
   */
  filesByRole?: boolean;
}

/** A batch over an input file. */
export interface BatchRequest extends BatchOptions {
  input: string;
  output: string;
  format?: string;
  /** `email=Email Address,name=Full Name` */
  map?: string;
  /** Columns to leave out. */
  ignore?: string[];
  /**
   * The input's encoding (utf-8, windows-1252, iso-8859-15, ...). Default: UTF-8, and a line that
   * is not UTF-8 is read as Windows-1252 (the plan counts those rows).
   */
  encoding?: string;
}

export interface PreparedBatch {
  input: BatchInput;
  endpoint: EndpointDef;
  inspection: InputInspection;
}

/** An output named *.csv is a CSV, written in row order when the batch ends. */
export const isCsvOutput = (path: string) => /\.csv$/i.test(path);
/**
 * A search export writes JSONL: an output named otherwise (a .csv) would hold JSONL under a name
 * that promises something else, so it is refused.
 */
export function checkExportOutput(path: string): void {
  if (!/\.jsonl$/i.test(path))
    throw new PcdsUsageError(
      'output_not_jsonl',
      'a search export writes JSONL: give an output whose name ends in .jsonl',
    );
}
/** Where the results of a CSV batch stream while it runs: a JSONL beside the CSV. */
export const streamPathOf = (csvOutput: string) => `${csvOutput}.jsonl`;

export const newBatchId = () =>
  `b${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(4).toString('hex')}`;

/**
 * Every check that needs no server: a bad request fails here, before anything is started. With
 * `dryRun`, only the checks: an output to overwrite is left as it is.
 */
export async function prepareBatch(
  req: BatchRequest,
  opts: { dryRun?: boolean } = {},
): Promise<PreparedBatch> {
  const { endpoint, batchId } = checkBatchOptions(req);
  return prepareFiles(req, endpoint, batchId, opts);
}

/** The checks of a batch's options that concern no file: endpoint, id, window, limits. */
export function checkBatchOptions(req: BatchOptions): { endpoint: EndpointDef; batchId: string } {
  const endpointName = req.endpoint ?? 'person_enrichment';
  const endpoint = findEndpoint(endpointName);
  if (!endpoint) {
    throw new BatchSetupError(
      'unknown_endpoint',
      `unknown endpoint "${endpointName}"; see \`pcds call --help\` for the catalogue`,
    );
  }
  if (endpoint.polling === 'sync') {
    throw new BatchSetupError(
      'not_async_endpoint',
      `${endpoint.name} is synchronous: there is nothing to batch`,
    );
  }
  if (req.transport !== undefined && !(TRANSPORTS as readonly string[]).includes(req.transport))
    throw new BatchSetupError(
      'invalid_options',
      `--transport must be one of ${TRANSPORTS.join(', ')}`,
    );
  if (req.transport === 'mcp') {
    const why = mcpUnsupportedReason(endpoint, { webhook: req.webhooks === true });
    if (why) throw new BatchSetupError('mcp_unsupported', why);
  }
  const localId = req.batchId ?? newBatchId();
  if (!BATCH_ID_PATTERN.test(localId)) {
    throw new BatchSetupError(
      'invalid_batch_id',
      '--id: 1 to 64 letters, digits, _ or - (and never personal data)',
    );
  }
  const tenantProblem = req.tenant !== undefined ? tenantIdProblem(req.tenant) : undefined;
  if (tenantProblem) throw new BatchSetupError('invalid_options', `--tenant: ${tenantProblem}`);
  const weightIssue = req.weight !== undefined ? weightProblem(req.weight) : undefined;
  if (weightIssue) throw new BatchSetupError('invalid_options', `--weight: ${weightIssue}`);
  const batchId = scopedId(req.tenant ?? OPERATOR_TENANT, localId);
  if (
    req.window !== undefined &&
    (!Number.isInteger(req.window) || req.window < 1 || req.window > MAX_WINDOW)
  ) {
    throw new BatchSetupError(
      'invalid_options',
      `--window must be an integer from 1 to ${MAX_WINDOW}`,
    );
  }
  if (
    req.maxRowBytes !== undefined &&
    (!Number.isInteger(req.maxRowBytes) ||
      req.maxRowBytes < 1 ||
      req.maxRowBytes > MAX_ROW_BYTES_LIMIT)
  ) {
    throw new BatchSetupError(
      'invalid_options',
      `--max-row-bytes must be an integer from 1 to ${MAX_ROW_BYTES_LIMIT}`,
    );
  }
  if (
    req.maxCredits !== undefined &&
    (!Number.isSafeInteger(req.maxCredits) || req.maxCredits < 0)
  ) {
    throw new BatchSetupError('invalid_options', '--max-credits must be a whole number, 0 or more');
  }
  return { endpoint, batchId };
}

/** The parts of a batch's workflow input that come from its options (not from its files). */
function optionsInput(req: BatchOptions): Partial<BatchInput> {
  return {
    rowIdScheme: CURRENT_ROW_ID_SCHEME,
    ...(req.tenant !== undefined && req.tenant !== OPERATOR_TENANT ? { tenant: req.tenant } : {}),
    ...(req.weight !== undefined ? { weight: req.weight } : {}),
    ...(req.window ? { window: req.window } : {}),
    ...(req.keyIds?.length ? { keyIds: req.keyIds } : {}),
    ...(req.webhooks ? { webhooks: true } : {}),
    ...(req.compact ? { compact: true } : {}),
    ...(req.webhooks && req.webhookFallbackPollMs
      ? { webhookFallbackPollMs: req.webhookFallbackPollMs }
      : {}),
    ...(req.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
    ...(req.historyThreshold ? { historyThreshold: req.historyThreshold } : {}),
    ...(req.chunkSize ? { chunkSize: req.chunkSize } : {}),
    ...(req.pollIntervalMs ? { pollIntervalMs: req.pollIntervalMs } : {}),
    ...(req.maxWaitMs ? { maxWaitMs: req.maxWaitMs } : {}),
    ...(req.maxRowBytes ? { maxRowBytes: req.maxRowBytes } : {}),
    ...(req.dedupe === false ? { dedupe: false } : {}),
    ...(req.maxCredits !== undefined ? { maxCredits: req.maxCredits } : {}),
  };
}

/** A batch over rows handed in by code: no input file, an output only if asked for. */
export function prepareRowsBatch(req: BatchOptions & { output?: string }): PreparedBatch {
  const { endpoint, batchId } = checkBatchOptions(req);
  const requested = req.output ? resolve(req.output) : undefined;
  const csvOutput = requested && isCsvOutput(requested) ? requested : undefined;
  return {
    endpoint,
    // Counted when the rows are loaded.
    inspection: { total: 0, dataOffset: 0, blankLines: 0 },
    input: {
      batchId,
      endpoint: endpoint.name,
      source: { path: ROWS_FROM_CODE, format: 'jsonl' },
      output: csvOutput ? streamPathOf(csvOutput) : (requested ?? ''),
      ...(csvOutput ? { csvOutput } : {}),
      ...(req.csvRawCells ? { csvRawCells: true } : {}),
      ...optionsInput(req),
    },
  };
}

/** What a batch over rows from code names as its input. */
export const ROWS_FROM_CODE = '(rows handed in by code)';

async function prepareFiles(
  req: BatchRequest,
  endpoint: EndpointDef,
  batchId: string,
  opts: { dryRun?: boolean },
): Promise<PreparedBatch> {
  const inputPath = resolve(req.input);
  const requested = resolve(req.output);
  const csvOutput = isCsvOutput(requested) ? requested : undefined;
  const outputPath = csvOutput ? streamPathOf(csvOutput) : requested;
  if (req.csvRawCells && !csvOutput)
    throw new BatchSetupError(
      'invalid_options',
      '--csv-raw-cells is for a .csv --output: a JSONL output holds the values as they are',
    );
  if (inputPath === requested)
    throw new BatchSetupError('invalid_options', '--output must not be the input file');
  const byRole = req.filesByRole === true;
  if (inputPath === outputPath) {
    throw new BatchSetupError(
      'invalid_options',
      byRole
        ? 'the results of the CSV output stream to a file beside it that is the input file: rename one of them'
        : `the results of --output ${req.output} stream to ${outputPath}, the input file: rename one of them`,
    );
  }
  try {
    const st = await stat(inputPath);
    if (!st.isFile())
      throw new BatchSetupError(
        'input_not_readable',
        `${byRole ? 'the input' : req.input} is not a file`,
      );
    await access(inputPath, constants.R_OK);
  } catch (err) {
    if (err instanceof BatchSetupError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    // A system error's message holds the path too: by role, its code alone.
    const why =
      code === 'ENOENT' ? 'no such file' : byRole ? (code ?? 'error') : (err as Error).message;
    throw new BatchSetupError(
      'input_not_readable',
      `cannot read the input file${byRole ? '' : ` ${req.input}`}: ${why}`,
    );
  }
  const outputs = [...(csvOutput ? [csvOutput] : []), outputPath];
  for (const path of outputs) {
    const existing = await stat(path).catch(() => undefined);
    if (existing && existing.size > 0 && !req.overwrite) {
      throw new BatchSetupError(
        'output_exists',
        byRole
          ? 'an output file exists and is not empty: choose another output or pass overwrite'
          : `the output file ${path} exists and is not empty: choose another --output or pass --overwrite`,
      );
    }
  }
  let encoding: string | undefined;
  try {
    encoding = req.encoding === undefined ? undefined : checkedEncoding(req.encoding);
  } catch (err) {
    if (err instanceof EncodingError) throw new BatchSetupError('invalid_options', err.message);
    throw err;
  }
  try {
    const columnMap = req.map ? parseColumnMap(req.map) : undefined;
    // What the map itself gets wrong is said in full: it tells nothing of the file.
    if (columnMap) checkColumnMap(endpoint, columnMap);
    const source = {
      path: inputPath,
      format: formatOf(inputPath, req.format, byRole ? 'the input file' : inputPath),
      ...(columnMap ? { columnMap } : {}),
      ...(req.ignore?.length ? { ignoreColumns: req.ignore } : {}),
      ...(encoding ? { encoding } : {}),
    };
    const inspection = await inspectInput(
      source,
      endpoint.name,
      req.maxRowBytes,
      byRole ? 'the input file' : source.path,
    ).catch((err: unknown) => {
      // A caller who cannot read the file (pcds mcp) gets one answer for a header that does not
      // fit, whatever it holds: otherwise trying names would tell which columns it has.
      if (byRole && err instanceof ColumnError)
        throw new ColumnError(headerMismatchAnswer(endpoint, columnMap !== undefined));
      throw err;
    });
    // The batch itself never truncates its output (a reset batch must keep its lines): starting
    // over an old file is decided here, once every check has passed.
    const overwrite = req.overwrite && !opts.dryRun;
    if (overwrite && (await stat(outputPath).catch(() => undefined))) {
      // Replaced and made private: an old output others could read keeps no wider mode.
      const fh = await open(outputPath, 'r+');
      try {
        await fh.truncate(0);
        await makeOpenFilePrivate(fh);
      } finally {
        await fh.close();
      }
    }
    const input: BatchInput = {
      batchId,
      endpoint: endpoint.name,
      source,
      output: outputPath,
      ...(csvOutput ? { csvOutput } : {}),
      ...(req.csvRawCells ? { csvRawCells: true } : {}),
      ...optionsInput(req),
    };
    return { input, endpoint, inspection };
  } catch (err) {
    if (err instanceof ColumnError || err instanceof InputError)
      throw new BatchSetupError('invalid_input_file', err.message);
    throw err;
  }
}

export type BatchWorkflowHandle = WorkflowHandle<typeof batchWorkflow>;
/** @deprecated The client's BatchHandle is another type: use BatchWorkflowHandle. */
export type BatchHandle = BatchWorkflowHandle;

export interface StartBatchOptions {
  /** Where the batch's rows go before it starts, and its results as it runs. */
  store: IdentifiedStore & BatchRows;
  /** The rows, handed in by code; without them the batch's input file is read. */
  rows?: Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>;
  memo?: Record<string, string>;
  /** Told as the input's rows go into the store (a large file takes a while). */
  onLoad?: (p: LoadProgress) => void;
  /** Called once the rows are in the store, before the batch starts (the CLI shows its plan). */
  onLoaded?: (loaded: LoadResult) => Promise<void>;
  /**
   * How the batch uses the result cache; absent: not at all (the CLI and the client pass their
   * default, PCDS_CACHE, which is on).
   */
  cache?: CacheUse;
  /** Whose cache entries answer the batch's rows (PCDS_CACHE_SCOPE); default per tenant. */
  cacheScope?: CacheScope;
}

/**
 * Loads the batch's rows into the store where this process runs (the file is read here, never
 * by a worker), then starts the batch workflow over them. A batch id already used is refused
 * (its rows' ids would collide).
 */
export async function startBatchWorkflow(
  client: Client,
  taskQueue: string,
  prepared: PreparedBatch,
  opts: StartBatchOptions,
): Promise<BatchHandle> {
  const { endpoint } = prepared;
  let { inspection } = prepared;
  // The store's identity goes with the batch: a worker on another store refuses it at once
  // (store_mismatch) instead of finding no rows.
  const { id: storeId, shown: storeShown } = opts.store.identity;
  const input: BatchInput = {
    ...prepared.input,
    store: true,
    ...(storeId ? { storeId, storeShown } : {}),
  };
  const memo = opts.memo;
  // A workflow under this id already: refused before its rows are touched.
  const existing = await client.workflow
    .getHandle(batchWorkflowId(input.batchId))
    .describe()
    .then(
      () => true,
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );
  if (existing)
    throw new BatchSetupError(
      'batch_exists',
      `a batch with id ${input.batchId} already exists: choose another --id`,
    );
  let loaded: LoadResult;
  try {
    const common = {
      batchId: input.batchId,
      endpoint: endpoint.name,
      dedupe: input.dedupe !== false,
      ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
      // The batch's rows look up (and fill) its tenant's entries, or the shared ones.
      ...(opts.cache
        ? {
            cache: scopedCacheUse(
              opts.cache,
              input.tenant ?? OPERATOR_TENANT,
              opts.cacheScope ?? 'tenant',
            ),
          }
        : {}),
    };
    loaded = opts.rows
      ? await loadRowsIntoStore(opts.store, { ...common, rows: opts.rows })
      : await loadFileIntoStore(opts.store, {
          ...common,
          source: input.source,
          ...(opts.onLoad ? { onProgress: opts.onLoad } : {}),
        });
    inspection = { ...inspection, total: loaded.rows, blankLines: loaded.blankLines };
  } catch (err) {
    if (err instanceof BatchStoreError && err.code === 'batch_exists')
      throw new BatchSetupError(
        'batch_exists',
        `a batch with id ${input.batchId} already has its rows in the store: choose another --id`,
      );
    if (err instanceof LoadError) throw new BatchSetupError(err.code, err.message);
    throw err;
  }
  await opts.onLoaded?.(loaded);
  try {
    return await client.workflow.start<typeof batchWorkflow>(BATCH_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: batchWorkflowId(input.batchId),
      args: [input],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      typedSearchAttributes: [
        { key: PcdsBatchId, value: input.batchId },
        { key: PcdsEndpoint, value: endpoint.name },
        { key: PcdsState, value: 'running' },
      ],
      ...(memo ? { memo } : {}),
      priority: batchPriority(input),
      staticSummary: batchSummaryLine(inspection.total, endpoint.name),
      staticDetails: `input ${input.source.path}\noutput ${input.output}\nrows and results in the store`,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      throw new BatchSetupError(
        'batch_exists',
        `a batch with id ${input.batchId} already exists: choose another --id`,
      );
    }
    throw err;
  }
}

/** A batch's own work (and, inherited, its activities) carries its rows' priority and fairness. */
const batchPriority = (input: BatchInput) =>
  taskPriorityOf(batchRequester(input.batchId, input.tenant, input.weight));

/** A handle on a batch by its id as the system knows it (scoped by its tenant). */
export function batchHandle(client: Client, batchId: string): BatchHandle {
  // The id is not echoed: a malformed one may be anything, personal data included.
  if (!isScopedId(batchId))
    throw new BatchSetupError(
      'invalid_batch_id',
      'not a batch id: 1 to 64 letters, digits, _ or -',
    );
  return client.workflow.getHandle<typeof batchWorkflow>(batchWorkflowId(batchId));
}

/** A progress query waits for a worker: without one it would hang for minutes, so it is bounded. */
export const PROGRESS_QUERY_TIMEOUT_MS = 5_000;

export function queryProgress(
  handle: BatchHandle,
  timeoutMs = PROGRESS_QUERY_TIMEOUT_MS,
): Promise<BatchProgress> {
  return handle.client.withDeadline(Date.now() + timeoutMs, () => handle.query(batchProgressQuery));
}

/**
 * What a running batch last published on its execution, read from its description when no worker
 * answers its progress query: its state and counters (search attributes, brought up to date at
 * most every 10 s and at each change of state) and the summary it was started with.
 */
export interface PublishedProgress {
  batchId: string;
  /** The batch's own state (running, paused, draining, ...), as last published. */
  state?: string;
  done?: number;
  failed?: number;
  /** The summary of the batch's first run (later runs have none of their own). */
  summary?: string;
  taskQueue: string;
  /** Why this is the last published progress, not the live one. */
  reason: string;
}

/**
 * Where a batch stands: its progress while it runs (paused included), or, when no worker answers,
 * what it last published; its summary once it ended. While it runs, `waiting` says why it waits
 * (no worker, paused, a key's window full until a time, a budget), empty when nothing holds it
 * back, and the progress's ETA counts what its keys already spent in their windows.
 */
export type BatchStatus =
  | { ended: false; progress: BatchProgress; published?: undefined; waiting?: WaitReason[] }
  | { ended: false; progress?: undefined; published: PublishedProgress; waiting?: WaitReason[] }
  | {
      ended: true;
      summary: BatchSummary;
      progress?: undefined;
      published?: undefined;
      waiting?: undefined;
    };

/** Who polls a batch's task queue (the one of its current run). */
export async function batchWorkers(
  handle: BatchHandle,
): Promise<{ taskQueue: string; presence: WorkerPresence }> {
  const { taskQueue } = await handle.describe();
  return { taskQueue, presence: await checkWorkers(handle.client, taskQueue) };
}

/**
 * How a batch's status is read from its execution status: a running batch answers the progress
 * query, a completed one (done or cancelled) has its summary as result, any other end is a failure.
 */
export function batchStatusSource(
  execution: WorkflowExecutionStatusName,
): 'progress' | 'summary' | 'failure' {
  switch (execution) {
    case 'RUNNING':
    case 'CONTINUED_AS_NEW':
    case 'PAUSED':
      return 'progress';
    case 'COMPLETED':
      return 'summary';
    default:
      return 'failure';
  }
}

const batchIdOf = (handle: BatchWorkflowHandle) =>
  batchIdOfWorkflowId(handle.workflowId) ?? handle.workflowId.replace(/^batch-/, '');

/** A batch id that names no batch. */
export const batchNotFound = (batchId: string) =>
  new BatchSetupError('batch_not_found', `no batch with id ${batchId} (workflow batch-${batchId})`);

/** The summary of a batch once it ends; a batch that failed throws its PcdsCallError. */
export function batchResult(handle: BatchWorkflowHandle): Promise<BatchSummary> {
  return orNotFound(
    () => outcomeOf(handle.workflowId, handle.result()),
    () => batchNotFound(batchIdOf(handle)),
  );
}

/**
 * Resumes a batch. A running batch (paused, or spending its budget) is signalled, with its new
 * budget if given. A batch that ended with rows skipped for its credit budget runs again under
 * its id with the higher budget: those rows lose their skipped lines and run; every other line
 * stays. Returns which of the two it did.
 */
export async function resumeBatch(
  client: Client,
  batchId: string,
  opts: { maxCredits?: number } = {},
): Promise<'signalled' | 'reopened'> {
  const handle = batchHandle(client, batchId);
  const { maxCredits } = opts;
  if (maxCredits !== undefined && (!Number.isSafeInteger(maxCredits) || maxCredits < 0))
    throw new BatchSetupError('invalid_options', '--max-credits must be a whole number, 0 or more');
  const described = await orNotFound(
    () => handle.describe(),
    () => batchNotFound(batchId),
  );
  const status = described.status.name;
  if (status === 'RUNNING') {
    if (maxCredits !== undefined) {
      const { maxCredits: current } = await queryProgress(handle).catch(() => {
        throw new BatchSetupError(
          'no_worker',
          `batch ${batchId}'s budget cannot be read: no worker answered its progress query (start one with \`pcds worker\`)`,
        );
      });
      if (current !== undefined && maxCredits <= current)
        throw new BatchSetupError(
          'invalid_options',
          `batch ${batchId} has a budget of ${current} credits: give a higher --max-credits`,
        );
    }
    await handle.signal(resumeBatchSignal, maxCredits !== undefined ? { maxCredits } : {});
    return 'signalled';
  }
  const summary = status === 'COMPLETED' ? await batchResult(handle) : undefined;
  if (summary?.state === 'cancelled')
    throw new BatchSetupError(
      'invalid_options',
      `batch ${batchId} was cancelled: there is nothing to resume (start a new batch for its rows)`,
    );
  if (!summary?.skipped) {
    throw new BatchSetupError(
      'invalid_options',
      `batch ${batchId} has ended (${summary?.state ?? status.toLowerCase()}) with no row skipped for its credit budget: there is nothing to resume`,
    );
  }
  if (maxCredits === undefined || maxCredits <= (summary.maxCredits ?? 0)) {
    throw new BatchSetupError(
      'invalid_options',
      `batch ${batchId} ended with ${summary.skipped} rows skipped for its budget of ${summary.maxCredits ?? 0} credits: give a higher --max-credits to run them`,
    );
  }
  // The input of the batch's last run, as the worker got it (decoded like any payload).
  const history = await handle.fetchHistory();
  const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads;
  const [last] = (await decodeArrayFromPayloads(client.options.loadedDataConverter, payloads)) as [
    BatchInput,
  ];
  const { carried: _carried, ...input } = last;
  await client.workflow.start<typeof batchWorkflow>(BATCH_WORKFLOW_TYPE, {
    taskQueue: described.taskQueue,
    workflowId: handle.workflowId,
    args: [{ ...input, maxCredits, reopen: true }],
    // Only a batch that completed comes here: its id is taken again on purpose.
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    // The memo says who started the batch (a `pcds mcp` caller): the new run keeps it.
    ...(described.memo ? { memo: described.memo } : {}),
    priority: batchPriority(input),
    typedSearchAttributes: [
      { key: PcdsBatchId, value: input.batchId },
      { key: PcdsEndpoint, value: input.endpoint },
      { key: PcdsState, value: 'running' },
    ],
    staticSummary: `batch of ${input.endpoint} rows, resumed with a budget of ${maxCredits} credits`,
    staticDetails: `input ${input.source.path}\noutput ${input.output}`,
  });
  return 'reopened';
}

/** Queries are refused between two runs of a batch and before its first task: ask again shortly. */
const PROGRESS_RETRY_MS = backoffDelayMs(1, NO_JITTER, PROGRESS_QUERY_BACKOFF);

/**
 * The status of a batch, as `pcds batch status` shows it: the progress while it runs, the summary
 * once it ended. Never waits long for a worker: with none polling, or no answer within
 * `timeoutMs`, a running batch's status is what it last published. A batch that failed or was
 * terminated throws a PcdsCallError with its code; an unknown id a BatchSetupError.
 */
export async function batchStatus(
  handle: BatchWorkflowHandle,
  timeoutMs = PROGRESS_QUERY_TIMEOUT_MS,
): Promise<BatchStatus> {
  const notFound = () => batchNotFound(batchIdOf(handle));
  const deadline = Date.now() + timeoutMs;
  let checked: WorkerPresence | undefined;
  for (;;) {
    const described = await orNotFound(() => handle.describe(), notFound);
    const source = batchStatusSource(described.status.name);
    // Completed: its summary. Failed, terminated or timed out: the result throws why.
    if (source !== 'progress') return { ended: true, summary: await batchResult(handle) };
    // One describe of the task queue: with no worker the query would only wait.
    checked ??= await checkWorkers(handle.client, described.taskQueue);
    const left = deadline - Date.now();
    if (checked.state === 'none' || left <= 0) {
      const published = await publishedProgress(handle, described, checked);
      return {
        ended: false,
        published,
        waiting: [
          checked.state === 'none'
            ? { kind: 'no_worker', message: published.reason }
            : {
                kind: 'task_not_taken',
                message: `no worker answered the batch's progress query within ${Math.round(timeoutMs / 1000)} s: the workers of task queue ${described.taskQueue} stopped or are all busy (start one with \`pcds worker\`)`,
              },
        ],
      };
    }
    let progress: BatchProgress;
    try {
      progress = await queryProgress(handle, left);
    } catch {
      if (deadline - Date.now() <= PROGRESS_RETRY_MS) continue;
      await sleep(PROGRESS_RETRY_MS);
      continue;
    }
    // Why it waits, and an ETA that counts what its keys already spent (other traffic too).
    const explained = await explainProgress(handle.client, progress);
    return { ended: false, progress: explained.progress, waiting: explained.waiting };
  }
}

async function publishedProgress(
  handle: BatchWorkflowHandle,
  described: Awaited<ReturnType<BatchWorkflowHandle['describe']>>,
  presence: WorkerPresence,
): Promise<PublishedProgress> {
  const attrs = described.typedSearchAttributes;
  const state = attrs.get(PcdsState);
  const done = attrs.get(PcdsRowsDone);
  const failed = attrs.get(PcdsRowsFailed);
  const summary = await described.staticSummary().catch(() => undefined);
  return {
    batchId: batchIdOf(handle),
    ...(state !== undefined ? { state } : {}),
    ...(done !== undefined ? { done } : {}),
    ...(failed !== undefined ? { failed } : {}),
    ...(summary ? { summary } : {}),
    taskQueue: described.taskQueue,
    reason:
      presence.state === 'none'
        ? noWorkerMessage(described.taskQueue)
        : 'no worker answered the progress query in time',
  };
}

/** The Web UI page of a workflow. */
export function webUiLink(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** The Web UI list of a batch's rows. */
export function webUiRowsLink(uiUrl: string, namespace: string, batchId: string): string {
  const query = `PcdsBatchId="${batchId}" AND WorkflowType IN (${ROW_WORKFLOW_TYPES.map((t) => `"${t}"`).join(', ')})`;
  return `${uiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
}

/** What an export of a batch needs, as the batch itself records it (paths, never row data). */
export interface BatchFiles {
  source: InputFiles;
  /** The streamed JSONL. */
  output: string;
  csvOutput?: string;
  /** What a row with no line is: pending while the batch runs. */
  noLine: NoLineLabel;
  running: boolean;
}

const RUNNING = new Set(['RUNNING', 'CONTINUED_AS_NEW']);

/**
 * The files of a batch: from its progress while it runs, from its summary once it completed,
 * and from a progress query (answered by a worker replaying it) once it failed or was stopped.
 */
export async function batchFiles(handle: BatchHandle): Promise<BatchFiles> {
  const status = (await handle.describe()).status.name;
  let from: BatchProgress | BatchSummary;
  let noLine: NoLineLabel;
  if (RUNNING.has(status)) {
    const { taskQueue, presence } = await batchWorkers(handle);
    if (presence.state === 'none')
      throw new BatchSetupError(
        'no_worker',
        `${noWorkerMessage(taskQueue)}: a running batch's files are named by its progress query`,
      );
    from = await queryWithRetry(handle);
    noLine = 'pending';
  } else if (status === 'COMPLETED') {
    from = await handle.result();
    noLine = from.state === 'done' ? 'missing' : 'not_run';
  } else {
    try {
      from = await queryProgress(handle);
    } catch {
      throw new BatchSetupError(
        'export_unavailable',
        `batch ${handle.workflowId.replace(/^batch-/, '')} is ${status.toLowerCase()} and no worker ` +
          'answered its progress query, which names its files: start a worker, then try again',
      );
    }
    noLine = 'not_run';
  }
  // Progress and summaries of batches started before they named their input carry no source.
  if (!(from as Partial<BatchProgress>).source) {
    throw new BatchSetupError(
      'export_unavailable',
      `batch ${handle.workflowId.replace(/^batch-/, '')} does not name its input file in its progress or summary (started by an older version)`,
    );
  }
  return {
    source: from.source,
    output: from.output,
    ...(from.csvOutput ? { csvOutput: from.csvOutput } : {}),
    noLine,
    running: RUNNING.has(status),
  };
}

/** Between two runs of a batch (continue-as-new) a query may fail for a moment. */
async function queryWithRetry(handle: BatchHandle): Promise<BatchProgress> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await queryProgress(handle);
    } catch (err) {
      if (attempt >= BATCH_QUERY_ATTEMPTS) throw err;
      await sleep(backoffDelayMs(attempt, NO_JITTER, BATCH_QUERY_BACKOFF));
    }
  }
}
