// `pcds batch start|status|watch|pause|resume|window|cancel|export`: bulk jobs from CSV or JSONL
// files, with a live progress bar that Ctrl-C leaves without stopping the batch, and ordered
// copies of their output (CSV or JSONL) at any time.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { SingleBar } from 'cli-progress';
import { Command, Option } from 'commander';
import { BatchStore, BatchStoreError, openStoreFromSettings } from '../store/index.js';
import {
  cacheDefaultOf,
  cacheUseOf,
  readsCache,
  scopedCacheUse,
  type CacheUse,
} from '../calls/cache-policy.js';
import { ResultCache } from '../store/result-cache.js';
import { ResultFollower } from '../store/follow.js';
import {
  outputsOf,
  summaryPathOf,
  writeBatchOutputs,
  type BatchOutputs,
} from '../store/outputs.js';
import { batchResults, exportBatchFromStore, type StoreExportFormat } from '../store/export.js';
import type { NoLineLabel } from '../batch/flatten.js';
import type { ResultLine } from '../batch/types.js';
import { loadProgressBar } from './load-progress.js';
import { describeEstimate, estimateCost } from '../batch/cost.js';
import { exportBatchOutput } from '../batch-io/export.js';
import { failedRowOfLine, failedRowText, type FailedRowReason } from '../batch/failed-rows.js';
import {
  BatchSetupError,
  batchFiles,
  batchHandle,
  batchStatus,
  batchWorkers,
  prepareBatch,
  resumeBatch,
  queryProgress,
  startBatchWorkflow,
  webUiLink,
  webUiRowsLink,
  type BatchHandle,
  type BatchRequest,
  type PreparedBatch,
  type PublishedProgress,
} from '../client/batch-launch.js';
import { pauseBatchSignal, setBatchWindowSignal } from '../batch/messages.js';
import { InputError } from '../batch-io/row-reader.js';
import {
  MAX_ROW_BYTES_LIMIT,
  MAX_WINDOW,
  type BatchProgress,
  type BatchSummary,
  type ExportReport,
  type FailedRow,
} from '../batch/types.js';
import { batchWorkflowId } from '../temporal/workflow-ids.js';
import { loadConfig, paceNote, type Config } from '../config.js';
import {
  OPERATOR_TENANT,
  TRANSPORTS,
  backgroundRequester,
  type Transport,
} from '../contract/index.js';
import { resolveScopedId } from '../temporal/workflow-ids.js';
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createUsageReader, slowPermitNote } from './usage.js';
import { action, CliError, printJson, UsageError } from './output.js';
import { connectTemporal, warnWithoutWorker } from './temporal-connection.js';
import { checkWorkers, noWorkerMessage } from '../temporal/pollers.js';
import { callErrorOf } from '../client-errors.js';
import { explainProgress, type ExplainedProgress } from '../client/batch-waits.js';
import { readKeyWindowUse, type KeyWindowUse } from '../client/key-window-use.js';
import { connectTemporalClient, temporalConnectionOptions } from '../temporal/connection.js';
import { temporalClient } from '../temporal/data-converter.js';
import { waitLines, type WaitReason } from '../client/wait-reasons.js';
import { ageArg, intArg, TENANT_HELP, tenantArg, weightArg } from './args.js';
import { registerBatchListCommand } from './batch-list.js';
import { readEachThrottleStatus } from '../client/throttle-operator.js';
import { batchShareNotes } from '../throttle/status-text.js';
import { MIN_JOB_SAMPLES } from '../batch/job-duration.js';
import {
  keyWindows,
  type BatchPlan,
  type KeyWindows,
  type FieldCounts,
  type InputText,
} from '../batch/plan.js';
import {
  loadedInputCounts,
  planOfCounts,
  planPreparedBatch,
  type CacheHitCounter,
  type InputCounts,
} from '../client/batch-plan-input.js';

const listArg = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const fmtSeconds = (s: number | undefined) => {
  if (s === undefined) return '--';
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
};

/**
 * A paused batch has no ETA: it says so. Under `pcds dev --time-scale`/`--no-limits` the ETA says
 * it is not the real service's pace (`pace`, from paceNote).
 */
export const etaText = (
  p: Pick<BatchProgress, 'etaSeconds' | 'paused' | 'state'>,
  pace?: string,
) =>
  p.paused || p.state === 'paused'
    ? 'paused'
    : `${fmtSeconds(p.etaSeconds)}${pace && p.etaSeconds !== undefined ? ` (${pace})` : ''}`;

const failedByCode = (p: { failedByCode: Record<string, number> }) =>
  Object.entries(p.failedByCode)
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');

/** One line of progress, for status output and logs. */
export function progressLine(p: BatchProgress, pace?: string): string {
  const failed = failedByCode(p);
  const spend = spendText(p);
  return (
    `${p.state}: ${p.done}/${p.total} rows | found ${p.found}, empty ${p.empty}, failed ${p.failed}` +
    `${failed ? ` (${failed})` : ''}${spend ? ` | ${spend}` : ''} | ${p.inFlight} in flight (window ${p.window}) | ${p.rowsPerSecond} rows/s | ETA ${etaText(p, pace)}`
  );
}

/** `credits 12 of 20, 3 skipped (credit_budget), 5 duplicates not sent`, or nothing to say. */
export function spendText(
  p: Pick<
    BatchProgress,
    'credits' | 'maxCredits' | 'skipped' | 'duplicates' | 'cached' | 'creditsSaved'
  >,
): string | undefined {
  const parts = [
    ...(p.maxCredits !== undefined ? [`credits ${p.credits ?? 0} of ${p.maxCredits}`] : []),
    ...(p.skipped ? [`${p.skipped} skipped (credit_budget)`] : []),
    ...(p.duplicates ? [`${p.duplicates} duplicates not sent`] : []),
    ...(p.cached
      ? [`${p.cached} from the result cache (~${p.creditsSaved ?? 0} credits saved)`]
      : []),
  ];
  return parts.length > 0 ? parts.join(', ') : undefined;
}

/**
 * What the rows cost and how long their jobs take: requests (submit and polls) per row found or
 * empty, and the learned job duration that times each new row's first poll.
 */
export function requestsText(
  p: Pick<BatchProgress, 'requestsPerRow' | 'jobMsEstimate' | 'cached'>,
): string {
  // Rows the result cache answered send nothing: none is measured, none is missing.
  const fromCache = p.cached ? ` (the result cache answered ${p.cached} rows: they send none)` : '';
  const perRow =
    p.requestsPerRow !== undefined
      ? `${p.requestsPerRow} requests per found/empty row`
      : fromCache
        ? `requests per row: none measured${fromCache}`
        : 'requests per row: none measured yet (no row found or empty)';
  const estimate =
    p.jobMsEstimate !== undefined
      ? `job duration estimate ${p.jobMsEstimate} ms`
      : `job duration estimate: not learned yet (it needs ${MIN_JOB_SAMPLES} rows found or empty${fromCache ? ' from the service' : ''})`;
  return `${perRow}; ${estimate}`;
}

/**
 * What a resume does to the keys' credit breakers, for the operator who sends it: only a resume
 * after a pause for credits closes them (the operator says the account was topped up); any other
 * resume leaves an open breaker open, and rows on that key pause the batch for credits again.
 */
export function resumeNotes(p: Pick<BatchProgress, 'paused'>, openBreakers: string[]): string[] {
  if (!p.paused) return ['the batch was not paused: nothing changes'];
  if (p.paused.code === 'insufficient_credits')
    return [
      `paused for credits: this resume closes the credit breaker of its keys${openBreakers.length ? ` (open: ${openBreakers.join(', ')})` : ''}; a key still without credits opens it again at its next submit`,
    ];
  return openBreakers.map(
    (k) =>
      `key ${k}: its credit breaker is open and stays open (this batch was paused for ${p.paused!.code}, not for credits); after a top-up: pcds throttle resume ${k}`,
  );
}

/** `row 3 invalid_row, row 8 not_found, ...` (and how many more failed). */
export function failedRowsText(rows: FailedRow[] | undefined, failed: number): string | undefined {
  if (!rows?.length) return undefined;
  const more = failed - rows.length;
  return (
    `${rows.length < failed ? 'first failed rows' : 'failed rows'}: ` +
    rows.map((f) => `row ${f.row} ${f.code}`).join(', ') +
    (more > 0 ? ` (and ${more} more)` : '')
  );
}

/** Every failed line of a batch's output: row number, code and reason (in file order). */
async function* failedLines(output: string): AsyncGenerator<FailedRowReason> {
  let input;
  try {
    input = createReadStream(output);
    for await (const text of createInterface({ input, crlfDelay: Infinity })) {
      if (!text) continue;
      let line: unknown;
      try {
        line = JSON.parse(text);
      } catch {
        // A partial last line of a running batch: skipped.
        continue;
      }
      const failed = failedRowOfLine(line);
      if (failed) yield failed;
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new UsageError(
        `the batch's output ${output} is not on this machine: run this where the workers write`,
      );
    throw err;
  }
}

/** Rows listed by number, then how many more. */
const rowList = (rows: number[], count: number) =>
  `row${count === 1 ? '' : 's'} ${rows.join(', ')}${count > rows.length ? ` (and ${count - rows.length} more)` : ''}`;

export function summaryText(s: BatchSummary): string {
  const failed = failedByCode(s);
  const failedRows = failedRowsText(s.failedRows, s.failed);
  const spend = spendText(s);
  const lines = [
    `batch ${s.batchId} ${s.state}: ${s.done} of ${s.total} rows in ${s.seconds} s (${s.rowsPerSecond} rows/s)`,
    `  found ${s.found}, empty ${s.empty}, failed ${s.failed}${failed ? ` (${failed})` : ''}`,
    ...(spend ? [`  ${spend}`] : []),
    ...(s.skipped
      ? [
          `  the credit budget stopped ${s.skipped} row${s.skipped === 1 ? '' : 's'}: pcds batch resume ${s.batchId} --max-credits <more> runs them`,
        ]
      : []),
    `  ${requestsText(s)}`,
    ...(s.blankLines
      ? [`  ${s.blankLines} blank line${s.blankLines === 1 ? '' : 's'} skipped`]
      : []),
    ...(failedRows ? [`  ${failedRows}`] : []),
  ];
  if (s.csvOutput) {
    lines.push(
      `  output: ${s.csvOutput} (CSV in row order; results streamed to ${s.output}; summary: ${summaryPathOf(s.csvOutput)})`,
    );
  } else {
    lines.push(`  output: ${s.output} (summary: ${summaryPathOf(s.output)})`);
  }
  if (s.csvError) lines.push(`  warning: ${s.csvError}`);
  if (s.csv && s.csv.withoutLine > 0) {
    const what =
      s.state === 'done' ? 'have no result line (outcome "missing" in the CSV)' : 'were not run';
    lines.push(
      `  ${s.csv.withoutLine} input rows ${what}: ${rowList(s.csv.firstWithoutLine, s.csv.withoutLine)}`,
    );
  }
  return lines.join('\n');
}

/** What an export wrote, for people. */
export function exportText(r: ExportReport, running: boolean): string[] {
  const order = r.sorted ? 'in row order' : 'in file order';
  const lines = [
    `wrote ${r.written} ${r.format === 'csv' ? 'rows' : 'lines'} of ${r.inputRows} input rows to ${r.path} (${r.format}, ${order})`,
  ];
  if (r.withoutLine > 0) {
    lines.push(
      running
        ? `${r.withoutLine} rows have no result yet (the batch is running): ${rowList(r.firstWithoutLine, r.withoutLine)}`
        : `warning: ${r.withoutLine} input rows have no result line: ${rowList(r.firstWithoutLine, r.withoutLine)}`,
    );
  }
  if (r.strayLines > 0)
    lines.push(`note: ${r.strayLines} lines of the output match no input row or repeat a row`);
  return lines;
}

/** A running batch's status when no worker answered: what it last published, and why. */
export function publishedText(p: PublishedProgress): string[] {
  const counts =
    p.done !== undefined
      ? `${p.done} rows done, ${p.failed ?? 0} failed`
      : 'no counts published yet';
  return [
    `batch ${p.batchId} ${p.state ?? 'running'}: ${counts} (last published progress: ${p.reason})`,
    ...(p.summary ? [`  ${p.summary}`] : []),
  ];
}

function poolNotes(p: BatchProgress): string[] {
  const notes: string[] = [];
  if (p.paused) notes.push(`paused: ${p.paused.code}: ${p.paused.message}`);
  const removed = p.pool.filter((k) => k.removed);
  if (removed.length > 0)
    notes.push(`keys out of the pool: ${removed.map((k) => `${k.id} (${k.removed})`).join(', ')}`);
  return notes;
}

/** How often the progress view asks whether a worker polls, and repeats that none does. */
const WORKERS_CHECK_MS = 10_000;
const NO_WORKER_REPEAT_MS = 30_000;
/** How often the progress view reads the keys' windows (why it waits, its ETA). */
const EXPLAIN_EVERY_MS = 5_000;

export interface WatchOptions {
  /** Called when Ctrl-C detaches; default prints how to watch again. */
  onDetach?: () => void;
  out?: NodeJS.WriteStream;
  /** Says the ETA is not the real service's pace (paceNote of the configuration). */
  pace?: string;
  /** Run about every half second while watching (a stored batch's results go to its files). */
  onTick?: () => Promise<void>;
}

/** How often a watch asks whether the batch ended. */
const END_CHECK_MS = 1_000;

/** How often a watch brings a stored batch's JSONL output up to date. */
const FOLLOW_EVERY_MS = 1_000;

/**
 * Watches a stored batch while its results go to the caller's JSONL as rows finish; once it
 * ended, writes the CSV (if asked) and the summary beside the output, and returns the summary
 * with what the CSV got. Undefined when the watch was left (Ctrl-C): the batch goes on.
 */
export async function watchStoredBatch(
  handle: BatchHandle,
  store: BatchStore,
  files: BatchOutputs,
  opts: WatchOptions = {},
): Promise<BatchSummary | undefined> {
  const batchId = handle.workflowId.replace(/^batch-/, '');
  const follower = new ResultFollower(store, batchId, files.output);
  let followedAt = 0;
  const summary = await watchBatch(handle, {
    ...opts,
    onTick: async () => {
      if (Date.now() - followedAt < FOLLOW_EVERY_MS) return;
      followedAt = Date.now();
      await follower.step();
    },
  });
  if (!summary) {
    await follower.step();
    return undefined;
  }
  return writeBatchOutputs(store, batchId, files, summary, follower);
}

/** The progress bar's last line: how the batch ended and how long it took, no ETA. */
export const endedBar = (s: BatchSummary) => ({
  found: s.found,
  empty: s.empty,
  failed: s.failed,
  rate: s.rowsPerSecond.toFixed(1),
  timing: `${s.state} in ${fmtSeconds(Math.round(s.seconds))}`,
  note: '',
});

/**
 * Shows a live progress bar until the batch ends, then returns its summary. Ctrl-C stops
 * watching (the batch goes on) and resolves undefined.
 */
export async function watchBatch(
  handle: BatchHandle,
  opts: WatchOptions = {},
): Promise<BatchSummary | undefined> {
  const out = opts.out ?? process.stderr;
  const bar = new SingleBar({
    stream: out,
    format:
      '{bar} {value}/{total} rows | found {found} empty {empty} failed {failed} | {rate} rows/s | {timing} {note}',
    hideCursor: true,
    barsize: 30,
    noTTYOutput: true,
    notTTYSchedule: 5000,
  });
  let started = false;
  let lastNotes = '';
  const show = (p: BatchProgress) => {
    const payload = {
      found: p.found,
      empty: p.empty,
      failed: p.failed,
      rate: p.rowsPerSecond.toFixed(1),
      timing: `ETA ${etaText(p, opts.pace)}`,
      note: p.paused
        ? `| PAUSED (${p.paused.code})`
        : p.state === 'draining'
          ? '| continuing as new'
          : '',
    };
    if (!started) {
      bar.start(Math.max(p.total, 1), p.done, payload);
      started = true;
    } else {
      bar.setTotal(Math.max(p.total, 1));
      bar.update(p.done, payload);
    }
    const notes = poolNotes(p).join('; ');
    if (notes && notes !== lastNotes) {
      out.write(`\n${notes}\n`);
    }
    lastNotes = notes;
  };

  let detached = false;
  let wake: () => void = () => undefined;
  const onSigint = () => {
    detached = true;
    wake();
  };
  process.once('SIGINT', onSigint);
  let finished: { summary?: BatchSummary; error?: unknown } | undefined;
  // Whether the batch ended is asked every second, and its result read once it has: a long poll
  // for the result (handle.result() under an abort signal for leaving the view) made the client
  // add a listener to that signal for each of its calls, hundreds over a long batch
  // (MaxListenersExceededWarning), and nothing is left to cancel when the view is left.
  let endCheckedAt = 0;
  const checkEnded = async () => {
    endCheckedAt = Date.now();
    const status = await handle
      .describe()
      .then((d) => d.status.name)
      .catch(() => undefined);
    if (status === undefined || status === 'RUNNING' || status === 'CONTINUED_AS_NEW') return;
    finished = await handle.result().then(
      (summary) => ({ summary }),
      (error: unknown) => ({ error }),
    );
  };
  // Without a worker nothing moves and no query is answered: the view says so, and keeps saying.
  let workersCheckedAt = 0;
  let noWorkerSaidAt = 0;
  let noWorker = false;
  const checkWorkers = async () => {
    workersCheckedAt = Date.now();
    const { taskQueue, presence } = await batchWorkers(handle).catch(() => ({
      taskQueue: '',
      presence: { state: 'unknown' as const },
    }));
    const none = presence.state === 'none';
    if (none && Date.now() - noWorkerSaidAt >= NO_WORKER_REPEAT_MS) {
      noWorkerSaidAt = Date.now();
      out.write(`\nwaiting: ${noWorkerMessage(taskQueue)}\n`);
    } else if (!none && noWorker) {
      noWorkerSaidAt = 0;
      out.write(`\na worker polls task queue ${taskQueue}: the batch goes on\n`);
    }
    noWorker = none;
  };
  // Why the batch waits (a key's window full until a time, a budget), said when it changes and
  // again every half minute while it lasts; the ETA is counted again from the keys' windows.
  let explainedAt = 0;
  let explained: ExplainedProgress | undefined;
  let waitsSaid = '';
  let waitsSaidAt = 0;
  const sayWaits = (reasons: WaitReason[]) => {
    const key = reasons.map((r) => `${r.kind}:${r.keyId ?? ''}`).join('|');
    if (key === waitsSaid && Date.now() - waitsSaidAt < NO_WORKER_REPEAT_MS) return;
    if (reasons.length > 0) out.write(`\n${waitLines(reasons).join('\n')}\n`);
    else if (waitsSaid) out.write('\ngoing on: nothing holds the batch back now\n');
    waitsSaid = key;
    waitsSaidAt = Date.now();
  };
  try {
    while (!finished && !detached) {
      if (Date.now() - endCheckedAt >= END_CHECK_MS) {
        await checkEnded();
        if (finished) break;
      }
      if (Date.now() - workersCheckedAt >= (noWorker ? 2_000 : WORKERS_CHECK_MS))
        await checkWorkers();
      if (!noWorker) {
        try {
          const p = await queryProgress(handle);
          if (Date.now() - explainedAt >= EXPLAIN_EVERY_MS) {
            explainedAt = Date.now();
            explained = await explainProgress(handle.client, p).catch(() => undefined);
            if (explained) sayWaits(explained.waiting);
          }
          // The ETA counts what the keys already spent in their windows (other traffic too).
          const eta = explained?.progress.etaSeconds;
          const { etaBasis: _basis, ...shown } = p;
          show(
            eta !== undefined && p.etaBasis && !p.paused ? { ...shown, etaSeconds: eta } : shown,
          );
        } catch {
          // Between two runs of the batch, or before its first task: ask again shortly.
        }
      }
      await opts.onTick?.();
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 500);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    process.removeListener('SIGINT', onSigint);
    if (finished?.summary && started) bar.update(finished.summary.done, endedBar(finished.summary));
    if (started) bar.stop();
  }
  if (detached) {
    (
      opts.onDetach ??
      (() => {
        const id = handle.workflowId.replace(/^batch-/, '');
        out.write(`\ndetached: the batch goes on. Watch it again with: pcds batch watch ${id}\n`);
      })
    )();
    return undefined;
  }
  if (finished?.error) {
    // A batch that failed says why with its code (store_mismatch, no_keys, ...), as status does.
    const err = callErrorOf(handle.workflowId, finished.error);
    throw err instanceof Error ? err : new Error('the batch failed');
  }
  return finished?.summary;
}

/** The keys a batch will run on, as this machine's configuration knows them. */
function planKeys(
  config: Config,
  keyIds: string[] | undefined,
): { keys: KeyWindows[]; assumed: boolean } {
  const scale = config.PCDS_THROTTLE_TIME_SCALE;
  const limits = (k: { id: string; perMinute?: number; perHour?: number }) =>
    keyWindows(
      {
        id: k.id,
        perMinute: k.perMinute ?? config.PCDS_RATE_PER_MINUTE,
        perHour: k.perHour ?? config.PCDS_RATE_PER_HOUR,
      },
      scale,
    );
  const known = config.keys.filter((k) => !keyIds?.length || keyIds.includes(k.id));
  if (known.length > 0) return { keys: known.map(limits), assumed: false };
  // The workers hold the keys: one key (or each named one) at the configured default limits.
  return {
    keys: (keyIds?.length ? keyIds : ['default']).map((id) => limits({ id })),
    assumed: true,
  };
}

export type PlannedBatch = {
  plan: BatchPlan;
  keys: KeyWindows[];
  assumed: boolean;
  use?: Map<string, KeyWindowUse>;
};

/**
 * The keys a plan counts on, and what they already spent (other work on them included): a key
 * whose hour is nearly spent sends this batch's first requests only as its window slides.
 */
async function planLimitsOf(config: Config, prepared: PreparedBatch) {
  const { keys, assumed } = planKeys(config, prepared.input.keyIds);
  const use = await keyUseForPlan(
    config,
    keys.map((k) => k.id),
  );
  const sent = use && Object.fromEntries([...use].map(([id, u]) => [id, u.sent]));
  const limits = {
    keys,
    timeScale: config.PCDS_THROTTLE_TIME_SCALE,
    ...(sent && Object.keys(sent).length ? { sent, nowMs: Date.now() } : {}),
  };
  return { keys, assumed, limits, ...(use?.size ? { use } : {}) };
}

/** What a batch will take: its rows and requests, the hours its keys' limits imply, its credits. */
export async function batchPlanOf(
  config: Config,
  prepared: PreparedBatch,
  cacheHits?: CacheHitCounter,
): Promise<PlannedBatch> {
  const { limits, ...planned } = await planLimitsOf(config, prepared);
  return { plan: await planPreparedBatch(prepared, limits, cacheHits), ...planned };
}

/** The same, from counts of the batch's rows (as the store gives them once they are loaded). */
async function batchPlanFromCounts(
  config: Config,
  prepared: PreparedBatch,
  counts: InputCounts,
): Promise<PlannedBatch> {
  const { limits, ...planned } = await planLimitsOf(config, prepared);
  return { plan: planOfCounts(prepared, counts, limits), ...planned };
}

/** How long a plan waits for Temporal and the keys' throttles before planning without them. */
const PLAN_USE_TIMEOUT_MS = 3_000;

/**
 * The keys' windows as their throttles know them, for a plan; undefined when the throttle is off
 * or Temporal cannot be reached within seconds (the plan then takes the windows as empty).
 */
async function keyUseForPlan(
  config: Config,
  keyIds: string[],
): Promise<Map<string, KeyWindowUse> | undefined> {
  if (config.PCDS_THROTTLE === 'off' || keyIds.length === 0) return undefined;
  let connection: Awaited<ReturnType<typeof connectTemporalClient>> | undefined;
  try {
    connection = await connectTemporalClient({
      ...temporalConnectionOptions(config),
      connectTimeoutMs: PLAN_USE_TIMEOUT_MS,
      explain: false,
    });
    return await readKeyWindowUse(temporalClient(connection, config).workflow, keyIds, {
      timeoutMs: PLAN_USE_TIMEOUT_MS,
    });
  } catch {
    return undefined;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/** The plan's lines, with the credit check against GET /usage unless --no-estimate. */
async function printPlan(
  config: Config,
  prepared: PreparedBatch,
  planned: PlannedBatch,
  o: Pick<StartFlags, 'webhooks' | 'estimate'>,
  out: NodeJS.WritableStream,
): Promise<void> {
  const lines = planText(
    planned,
    config.PCDS_THROTTLE_TIME_SCALE,
    o.webhooks === true,
    o.estimate ? await usageNote(config, prepared, planned.plan.sent) : undefined,
  );
  out.write(`${lines.join('\n')}\n`);
}

const fmtHours = (h: number | undefined, timeScale: number) => {
  if (h === undefined) return 'never (a key has no room at all)';
  const service = fmtSeconds(Math.round(h * 3600));
  return timeScale === 1
    ? `about ${service}`
    : `about ${service} of the service's time (${fmtSeconds(Math.ceil((h * 3600) / timeScale))} here, ${timeScale} times faster: PCDS_THROTTLE_TIME_SCALE)`;
};

const rowsText = (n: number) => `${n} row${n === 1 ? '' : 's'}`;
const fieldsText = (counts: FieldCounts) =>
  Object.entries(counts.fields)
    .map(([field, n]) => `${field} ${n}`)
    .join(', ');

/** "trimmed: 6 rows had spaces around a value (email 6, name 2): sent without them". */
const trimmedText = (trimmed: FieldCounts): string =>
  `trimmed: ${rowsText(trimmed.rows)} had spaces around a value (${fieldsText(trimmed)}): sent without them`;

/** How the input was read, when that is worth a line: not UTF-8 throughout, or values lost. */
function inputTextLines(text: InputText): string[] {
  const lines: string[] = [];
  if (text.notUtf8)
    lines.push(
      `encoding: ${rowsText(text.notUtf8.rows)} not UTF-8, read as ${text.notUtf8.readAs} (a spreadsheet's CSV on Windows); if the file is in another encoding, name it with --encoding`,
    );
  else if (text.encoding !== 'utf-8') lines.push(`encoding: ${text.encoding} (--encoding)`);
  if (text.unreadable.rows)
    lines.push(
      `unreadable: ${rowsText(text.unreadable.rows)} had a value that could not be read as ${text.notUtf8 ? 'UTF-8 or ' + text.notUtf8.readAs : text.encoding} (${fieldsText(text.unreadable)}): sent without it`,
    );
  return lines;
}

/** The plan, for people: a few lines, then what would shorten it. */
export function planText(
  { plan, keys, assumed, use }: PlannedBatch,
  timeScale: number,
  webhooks: boolean,
  /** The credit check against the account (GET /usage), in place of the plain estimate. */
  creditsNote?: string,
): string[] {
  const notSent = [
    ...(plan.duplicates ? [`${plan.duplicates} duplicates`] : []),
    ...(plan.invalid ? [`${plan.invalid} invalid`] : []),
    ...(plan.cached ? [`${plan.cached} answered by the result cache`] : []),
  ];
  const limits = [...new Set(keys.map((k) => `${k.perMinute}/min, ${k.perHour}/h`))].join('; ');
  const perRow = webhooks ? 'submit, result by webhook' : 'submit + first poll, timed to the job';
  return [
    `plan: ${plan.rows} rows${notSent.length ? ` (${notSent.join(', ')}: not sent)` : ''}, ${plan.sent} sent x ~${plan.requestsPerRow} request${plan.requestsPerRow === 1 ? '' : 's'} (${perRow}) = ${plan.requests} requests`,
    `  ${plan.keys} key${plan.keys === 1 ? '' : 's'} (${limits} each${assumed ? '; no keys configured here: the default limits assumed' : ''}): ${fmtHours(plan.hours, timeScale)} at the limits`,
    ...(use?.size
      ? [
          `  counted from what the keys already sent: ${[...use.values()]
            .map(
              (u) =>
                `${u.keyId} ${u.hour.used}/${u.hour.limit} this hour` +
                (u.hour.used >= u.hour.limit ? ' (full)' : ''),
            )
            .join(', ')}`,
        ]
      : []),
    `  ${creditsNote ?? `credits: up to ${plan.credits} (every row sent found; empty results are free)`}`,
    ...[
      ...(plan.trimmed.rows ? [trimmedText(plan.trimmed)] : []),
      ...inputTextLines(plan.text),
    ].map((line) => `  ${line}`),
    ...(plan.cached
      ? [
          `  cache: ${plan.cached} row${plan.cached === 1 ? '' : 's'} from the result cache save ~${plan.savedRequests} requests and ~${plan.savedCredits} credits (--refresh fetches them again)`,
        ]
      : []),
    ...(plan.shorter.length
      ? [
          `  shorter: ${plan.shorter
            .map((s) =>
              s.with === 'one more key'
                ? `one more key in the pool (PCDS_API_KEYS), about ${fmtSeconds(Math.round(s.hours * 3600))}`
                : `--webhooks (1 request a row), about ${fmtSeconds(Math.round(s.hours * 3600))}`,
            )
            .join('; ')}`,
        ]
      : []),
  ];
}

/** How long a plan waits for its credit read: a plan answers within seconds, read or not. */
export const PLAN_USAGE_TIMEOUT_MS = 10_000;

/**
 * Why a plan's credit read would only wait, or undefined when it may be tried: GET /usage takes a
 * permit from the shared throttle, which a worker runs, so with no worker polling the task queue
 * (or no Temporal to ask) the credits are unknown.
 */
async function creditsUnknownBecause(config: Config): Promise<string | undefined> {
  if (config.PCDS_THROTTLE === 'off') return undefined;
  let connected: Awaited<ReturnType<typeof connectTemporal>>;
  try {
    connected = await connectTemporal(config);
  } catch (err) {
    return (err as Error).message;
  }
  try {
    const presence = await checkWorkers(connected.client, config.PCDS_TASK_QUEUE);
    return presence.state === 'none'
      ? `${noWorkerMessage(config.PCDS_TASK_QUEUE)}, and GET /usage waits for a permit of the shared throttle, which a worker grants`
      : undefined;
  } finally {
    await connected.close();
  }
}

async function usageNote(config: Config, prepared: PreparedBatch, rows: number): Promise<string> {
  const estimate = estimateCost(prepared.endpoint, rows);
  if (config.keys.length === 0) return describeEstimate(estimate, undefined);
  const unknown = (why: string) =>
    `${describeEstimate(estimate, undefined)}; available credits: unknown (${why})`;
  // A plan needs no worker: without one the read would wait for a permit, so it is not tried.
  const because = await creditsUnknownBecause(config);
  if (because) return unknown(because);
  // Through the shared throttle like every request: a batch start never crowds out running work.
  const reader = createUsageReader(config, { onSlowPermit: slowPermitNote(config) });
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), PLAN_USAGE_TIMEOUT_MS);
  try {
    // A plan's credit read is background work: it never goes ahead of a person's call.
    // The ask itself waits for the throttle's answer: the deadline ends the wait either way (the
    // reader's connection closes after it).
    const late = new Promise<never>((_, reject) =>
      deadline.signal.addEventListener('abort', () => reject(new Error('late')), { once: true }),
    );
    const usage = await Promise.race([
      reader.read(
        undefined,
        prepared.input.keyIds?.[0],
        backgroundRequester(prepared.input.tenant),
        deadline.signal,
      ),
      late,
    ]);
    const limits = (usage.limits ?? {}) as { available_credits?: unknown; is_unlimited?: unknown };
    const available =
      limits.is_unlimited === true
        ? 'unlimited'
        : typeof limits.available_credits === 'number'
          ? limits.available_credits
          : undefined;
    return describeEstimate(estimate, available);
  } catch (err) {
    if (deadline.signal.aborted)
      return unknown(
        `no permit of the shared throttle within ${PLAN_USAGE_TIMEOUT_MS / 1000} s: the key's windows are full, or no worker polls task queue ${config.PCDS_TASK_QUEUE}`,
      );
    return `${describeEstimate(estimate, undefined)}; could not read GET /usage: ${(err as Error).message}`;
  } finally {
    clearTimeout(timer);
    await reader.close();
  }
}

const CSV_RAW_CELLS_HELP =
  'CSV cells exactly as they are, for programs that read the file (by default a cell starting ' +
  'with =, +, -, @ (or their full-width forms), tab, CR or LF, also behind blanks or invisible ' +
  "characters, gets a ' in front, and one after a ; or a line break inside the cell, so a " +
  'spreadsheet never runs it as a formula)';

interface ExportFlags {
  output: string;
  format?: string;
  sorted?: boolean;
  overwrite?: boolean;
  json?: boolean;
  csvRawCells?: boolean;
}

function exportFormatOf(path: string, given?: string): StoreExportFormat {
  if (given === 'csv' || given === 'jsonl' || given === 'parquet') return given;
  if (given) throw new UsageError(`--format must be csv, jsonl or parquet, not "${given}"`);
  if (/\.csv$/i.test(path)) return 'csv';
  if (/\.(jsonl|ndjson)$/i.test(path)) return 'jsonl';
  if (/\.parquet$/i.test(path)) return 'parquet';
  throw new UsageError(
    `cannot tell the format of ${path} from its name: pass --format csv, jsonl or parquet`,
  );
}

/** A row with no result, as an export labels it: pending while the batch runs. */
async function noLineOf(handle: BatchHandle): Promise<NoLineLabel> {
  const status = (await handle.describe()).status.name;
  if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') return 'pending';
  if (status !== 'COMPLETED') return 'not_run';
  return (await handle.result()).state === 'done' ? 'missing' : 'not_run';
}

interface StartFlags {
  endpoint: string;
  input: string;
  output: string;
  format?: string;
  map?: string;
  ignore?: string[];
  id?: string;
  encoding?: string;
  tenant?: string;
  weight?: number;
  window?: number;
  keys?: string[];
  maxRowBytes?: number;
  webhooks?: boolean;
  compact?: boolean;
  transport?: Transport;
  overwrite?: boolean;
  detach?: boolean;
  estimate: boolean;
  dryRun?: boolean;
  dedupe: boolean;
  maxCredits?: number;
  csvRawCells?: boolean;
  /** false with --no-cache. */
  cache: boolean;
  refresh?: boolean;
  maxAge?: number;
}

/**
 * Runs a plan with a counter of the rows the result cache would answer (when the batch reads
 * it); the store is opened for the count and closed after.
 */
async function withPlanCache<T>(
  config: Config,
  cache: CacheUse,
  endpoint: string,
  plan: (hits?: CacheHitCounter) => Promise<T>,
): Promise<T> {
  if (!readsCache(endpoint, cache)) return plan();
  const store = await openStoreFromSettings(config);
  try {
    const results = new ResultCache(store);
    return await plan((params) => results.hitsAmong(endpoint, params, cache));
  } finally {
    await store.close();
  }
}

async function withStore<T>(config: Config, fn: (store: BatchStore) => Promise<T>): Promise<T> {
  const store = await openStoreFromSettings(config);
  try {
    return await fn(new BatchStore(store));
  } catch (err) {
    if (err instanceof BatchStoreError) throw new UsageError(err.message);
    throw err;
  } finally {
    await store.close();
  }
}

/** Lists a stored batch's failed rows (number, code, reason); false when the store has no such batch. */
async function printFailedRows(store: BatchStore, id: string, json?: boolean): Promise<boolean> {
  if (!(await store.record(id))) return false;
  for await (const line of batchResults(store, id, { outcome: 'failed' })) {
    const f = failedRowOfLine(line);
    if (f) process.stdout.write(json ? `${JSON.stringify(f)}\n` : `${failedRowText(f)}\n`);
  }
  return true;
}

/**
 * The batch a command names: its id as the system knows it, or a tenant's own id (after
 * `--tenant`, else PCDS_TENANT) scoped by that tenant. The operator names any batch by its id.
 */
function batchIdOf(given: string, tenant: string): string {
  const id = resolveScopedId(tenant, given);
  // The id is not echoed: a malformed one may be anything, personal data included.
  if (id === undefined)
    throw new UsageError(
      `not a batch id${tenant !== OPERATOR_TENANT ? ` of tenant ${tenant}` : ''}: 1 to 64 letters, digits, _ or -`,
    );
  return id;
}

async function withBatch(
  given: string,
  tenant: string | undefined,
  fn: (handle: BatchHandle, config: Config, client: Client, id: string) => Promise<void>,
): Promise<void> {
  const config = loadConfig();
  const id = batchIdOf(given, tenant ?? config.PCDS_TENANT);
  const { client, close } = await connectTemporal(config);
  try {
    const handle = batchHandle(client, id);
    try {
      await fn(handle, config, client, id);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError)
        throw new UsageError(`no batch with id ${id} (workflow ${batchWorkflowId(id)})`);
      throw err;
    }
  } catch (err) {
    if (err instanceof BatchSetupError)
      throw err.code === 'no_worker' ? new CliError(err.message) : new UsageError(err.message);
    throw err;
  } finally {
    await close();
  }
}

/** After a signal or a cancel, which the server keeps for the batch: a warning if no worker polls. */
async function warnLater(handle: BatchHandle, then: string): Promise<void> {
  const { taskQueue } = await handle.describe();
  await warnWithoutWorker(handle.client, taskQueue, then);
}

export function registerBatchCommand(program: Command): Command {
  const cmd = program
    .command('batch')
    .description('bulk jobs: run an endpoint over every row of a CSV or JSONL file');
  registerBatchListCommand(cmd);

  cmd
    .command('start')
    .description(
      'Start a batch, then show its progress until it ends (Ctrl-C detaches; the batch goes on)',
    )
    .option('-e, --endpoint <name>', 'endpoint of the catalogue', 'person_enrichment')
    .requiredOption('-i, --input <file>', 'CSV (with a header row) or JSONL file of inputs')
    .requiredOption(
      '-o, --output <file>',
      'results, one per input row: a .csv file is written in row order when the batch ends ' +
        '(results stream to <file>.jsonl meanwhile); any other name is the streamed JSONL',
    )
    .option('--format <csv|jsonl>', 'input format (default: from the file name)')
    .option(
      '--map <param=column,...>',
      'parameters whose column has another name, e.g. "email=Email Address,name=Full Name"',
    )
    .option('--ignore <columns>', 'comma-separated columns to leave out', listArg)
    .option(
      '--encoding <name>',
      "the input's encoding, e.g. windows-1252 or iso-8859-15 (default: UTF-8, and a line that is not UTF-8 is read as windows-1252, which the plan counts)",
    )
    .option('--id <batchId>', 'batch id (letters, digits, _ and -; default: generated)')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .option(
      '--weight <w>',
      "the batch's share of the pool against other batches while they compete (0.001-1000, default 1)",
      weightArg,
    )
    .option(
      '--window <n>',
      `rows in flight at once (1-${MAX_WINDOW}, default 50)`,
      intArg('--window', 1, MAX_WINDOW),
    )
    .option(
      '--keys <ids>',
      'comma-separated key ids of the pool (default: every configured key)',
      listArg,
    )
    .option(
      '--max-row-bytes <n>',
      `a longer row fails with row_too_large (default: the worker's PCDS_MAX_ROW_BYTES, at most ${MAX_ROW_BYTES_LIMIT})`,
      intArg('--max-row-bytes', 1, MAX_ROW_BYTES_LIMIT),
    )
    .option('--webhooks', 'rows wait for webhook deliveries instead of polling')
    .option(
      '--compact',
      'rows run as activities of the batch, not workflows of their own: fewer history events and more rows/s when the service is not the limit (with --webhooks, deliveries reach them through the store)',
    )
    .addOption(
      new Option(
        '--transport <http|mcp>',
        "submit and poll each row over the HTTP API or the MCP endpoint's tools",
      )
        .choices(TRANSPORTS)
        .default('http'),
    )
    .option(
      '--max-credits <n>',
      "credit budget: no row starts that could take the credits charged past it (found rows at the endpoint's typical price); the rows left are written as skipped (credit_budget), and `pcds batch resume <id> --max-credits <more>` runs them",
      intArg('--max-credits', 0, 1_000_000_000),
    )
    .option(
      '--no-dedupe',
      'send every row, even one whose parameters repeat an earlier row (by default it shares that call and gets a copy of its line, marked duplicateOf)',
    )
    .option('--csv-raw-cells', CSV_RAW_CELLS_HELP)
    .option(
      '--max-age <age>',
      'answer a row from the result cache only with an entry fetched within this age (7d, 12h, 30m)',
      ageArg('--max-age'),
    )
    .option('--no-cache', 'neither read nor fill the result cache: every row is sent')
    .option('--refresh', 'send every row again and replace its result cache entry')
    .option('--overwrite', 'replace an existing output file')
    .option('--detach', 'print the batch id and return at once')
    .option('--no-estimate', 'skip the GET /usage credit check')
    .option(
      '--dry-run',
      "print the plan (rows, requests, hours at the keys' limits, credits) and start nothing",
    )
    .action(
      action(async (o: StartFlags) => {
        const config = loadConfig();
        const req: BatchRequest = {
          endpoint: o.endpoint,
          input: o.input,
          output: o.output,
          ...(o.format ? { format: o.format } : {}),
          ...(o.map ? { map: o.map } : {}),
          ...(o.ignore ? { ignore: o.ignore } : {}),
          ...(o.encoding ? { encoding: o.encoding } : {}),
          ...(o.id ? { batchId: o.id } : {}),
          tenant: o.tenant ?? config.PCDS_TENANT,
          ...(o.weight !== undefined ? { weight: o.weight } : {}),
          ...(o.window ? { window: o.window } : {}),
          ...(o.keys ? { keyIds: o.keys } : {}),
          ...(o.maxRowBytes ? { maxRowBytes: o.maxRowBytes } : {}),
          ...(o.webhooks
            ? { webhooks: true, webhookFallbackPollMs: config.PCDS_WEBHOOK_FALLBACK_POLL_MS }
            : {}),
          ...(o.compact ? { compact: true } : {}),
          ...(o.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
          ...(o.overwrite ? { overwrite: true } : {}),
          ...(o.dedupe ? {} : { dedupe: false }),
          ...(o.maxCredits !== undefined ? { maxCredits: o.maxCredits } : {}),
          ...(o.csvRawCells ? { csvRawCells: true } : {}),
          // Its rows poll and give up like `pcds call` (both follow PCDS_TIME_SCALE).
          pollIntervalMs: config.PCDS_POLL_INTERVAL_MS,
          maxWaitMs: config.PCDS_MAX_WAIT_MS,
        };
        let cache: CacheUse;
        try {
          cache = cacheUseOf(
            {
              noCache: !o.cache,
              ...(o.refresh ? { refresh: true } : {}),
              ...(o.maxAge !== undefined ? { maxAgeMs: o.maxAge } : {}),
            },
            cacheDefaultOf(config.PCDS_CACHE),
          );
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        let prepared: PreparedBatch;
        try {
          prepared = await prepareBatch(req, { dryRun: o.dryRun === true });
          if (o.dryRun) {
            // Nothing goes into the store: the plan comes from one pass over the file, and counts
            // the hits the batch would get (its tenant's entries, or the shared ones).
            const planCache = scopedCacheUse(
              cache,
              prepared.input.tenant ?? OPERATOR_TENANT,
              config.PCDS_CACHE_SCOPE,
            );
            const planned = await withPlanCache(config, planCache, prepared.endpoint.name, (hits) =>
              batchPlanOf(config, prepared, hits),
            );
            await printPlan(config, prepared, planned, o, process.stdout);
            process.stdout.write('dry run: nothing started, no file written\n');
            return;
          }
        } catch (err) {
          if (err instanceof BatchSetupError) throw new UsageError(err.message);
          if (err instanceof InputError) throw new UsageError(err.message);
          throw err;
        }
        const { client, close } = await connectTemporal(config);
        const store = await openStoreFromSettings(config);
        try {
          let handle: BatchHandle;
          // The file is read here and its rows go into the store: workers never open it.
          const loading = loadProgressBar();
          const batchStore = new BatchStore(store);
          try {
            handle = await startBatchWorkflow(client, config.PCDS_TASK_QUEUE, prepared, {
              store: batchStore,
              onLoad: loading.onProgress,
              cache,
              cacheScope: config.PCDS_CACHE_SCOPE,
              // The plan, from the rows loaded: the store counts their duplicates and cached
              // rows (each row's lookup is its tenant's, or the shared one, since the load), so
              // the file is read once and nothing is held per row however large it is.
              onLoaded: async (loaded) => {
                loading.stop();
                const counts = loadedInputCounts(
                  prepared,
                  loaded,
                  await batchStore.planCounts(prepared.input.batchId, cache),
                );
                const planned = await batchPlanFromCounts(config, prepared, counts);
                await printPlan(config, prepared, planned, o, process.stderr);
              },
            });
          } catch (err) {
            if (err instanceof BatchSetupError) throw new UsageError(err.message);
            throw err;
          } finally {
            loading.stop();
          }
          const { batchId } = prepared.input;
          process.stdout.write(`batch ${batchId}\n`);
          const { csvOutput, output } = prepared.input;
          process.stderr.write(
            `${prepared.inspection.total} rows of ${prepared.input.source.path} -> ${csvOutput ? `${csvOutput} (results stream to ${output})` : output}\n` +
              `Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, handle.workflowId)}\n` +
              `rows:   ${webUiRowsLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, batchId)}\n`,
          );
          if (o.detach) {
            process.stderr.write(
              `results: pcds batch watch ${batchId} writes them to ${output} as rows finish, or pcds batch export ${batchId} --output FILE at any time\n`,
            );
            await warnWithoutWorker(
              client,
              config.PCDS_TASK_QUEUE,
              'the batch is started and runs when one does',
            );
            return;
          }
          const summary = await watchStoredBatch(
            handle,
            new BatchStore(store),
            {
              output,
              ...(csvOutput ? { csvOutput } : {}),
              ...(prepared.input.csvRawCells ? { csvRawCells: true } : {}),
            },
            { pace: paceNote(config) },
          );
          if (summary) process.stderr.write(`${summaryText(summary)}\n`);
        } finally {
          await store.close();
          await close();
        }
      }),
    );

  cmd
    .command('status <id>')
    .description('Progress of a batch (or its summary once it ended)')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .option('--json', 'print the progress as JSON')
    .option(
      '--failed',
      "list every failed row (row number, code and reason, never its values) from the batch's output: the CLI must see the workers' files",
    )
    .action(
      action(async (given: string, o: { json?: boolean; failed?: boolean; tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, config, client, id) => {
          // A stored batch's failed rows are read from the store: no worker, no file needed.
          if (o.failed && (await withStore(config, (store) => printFailedRows(store, id, o.json))))
            return;
          const status = await batchStatus(handle);
          if (!status.ended && status.published) {
            // No worker answered: the failed rows are still in the output, but its path is not.
            if (o.failed)
              throw new CliError(
                `${status.published.reason}: the batch's progress, which names its output, cannot be read`,
              );
            if (o.json) return printJson({ lastPublished: status.published });
            for (const line of publishedText(status.published)) process.stdout.write(`${line}\n`);
            process.stdout.write(
              `  Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, handle.workflowId)}\n`,
            );
            return;
          }
          if (o.failed) {
            const output = status.ended ? status.summary.output : status.progress.output;
            for await (const f of failedLines(output))
              process.stdout.write(o.json ? `${JSON.stringify(f)}\n` : `${failedRowText(f)}\n`);
            return;
          }
          if (status.ended) {
            if (o.json) printJson(status.summary);
            else process.stdout.write(`${summaryText(status.summary)}\n`);
            return;
          }
          const p = status.progress;
          const waiting = status.waiting ?? [];
          if (o.json) return printJson(waiting.length ? { ...p, waiting } : p);
          process.stdout.write(`batch ${id} ${progressLine(p, paceNote(config))}\n`);
          // Why it waits, when something holds it back (a key's window full until a time, ...).
          for (const line of waitLines(waiting.filter((r) => r.kind !== 'paused')))
            process.stdout.write(`  ${line}\n`);
          process.stdout.write(`  ${requestsText(p)}\n`);
          for (const n of poolNotes(p)) process.stdout.write(`  ${n}\n`);
          // What the batch gets of its keys, and what its waiting requests wait for.
          const readings = await readEachThrottleStatus(
            client,
            p.pool.filter((k) => !k.removed).map((k) => k.id),
          );
          for (const n of batchShareNotes(id, readings)) process.stdout.write(`  ${n}\n`);
          const failedRows = failedRowsText(p.failedRows, p.failed);
          if (failedRows) process.stdout.write(`  ${failedRows}\n`);
          process.stdout.write(
            `  Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, handle.workflowId)}\n`,
          );
        }),
      ),
    );

  cmd
    .command('watch <id>')
    .description('Live progress bar of a batch until it ends (Ctrl-C detaches)')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, config) => {
          const status = await batchStatus(handle);
          const named = status.ended
            ? status.summary
            : status.published
              ? undefined
              : status.progress;
          if (!named?.stored) {
            const summary = await watchBatch(handle, { pace: paceNote(config) });
            if (summary) process.stderr.write(`${summaryText(summary)}\n`);
            return;
          }
          // A stored batch's files are written by whoever watches it, here.
          await withStore(config, async (store) => {
            const summary = await watchStoredBatch(handle, store, outputsOf(named), {
              pace: paceNote(config),
            });
            if (summary) process.stderr.write(`${summaryText(summary)}\n`);
          });
        }),
      ),
    );

  cmd
    .command('pause <id>')
    .description('Stop starting rows; rows in flight finish and are written')
    .option('--reason <text>', 'shown in the progress (no personal data)')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { reason?: string; tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, _config, _client, id) => {
          await handle.signal(pauseBatchSignal, o.reason ? { reason: o.reason } : {});
          process.stdout.write(`pause sent to batch ${id}\n`);
          await warnLater(handle, 'the batch pauses when one does');
        }),
      ),
    );

  cmd
    .command('resume <id>')
    .description(
      "Start rows again (re-reads the worker's keys; after a pause for credits, closes their credit breakers). With --max-credits: a higher budget; a batch that ended with rows skipped for its budget runs those rows",
    )
    .option(
      '--max-credits <n>',
      'the new credit budget (credits charged so far count against it)',
      intArg('--max-credits', 0, 1_000_000_000),
    )
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { maxCredits?: number; tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, _config, client, id) => {
          const budget = o.maxCredits !== undefined ? { maxCredits: o.maxCredits } : {};
          const status = await batchStatus(handle);
          if (status.ended) {
            // Only a batch that ended with rows skipped for its budget has something to resume.
            await resumeBatch(client, id, budget);
            process.stdout.write(
              `batch ${id} runs again with a budget of ${o.maxCredits} credits: its skipped rows run, its other lines stay (pcds batch watch ${id})\n`,
            );
            return;
          }
          if (!status.ended && status.published) {
            // No worker: the signal waits in the batch's history; breakers cannot be read.
            await resumeBatch(client, id, budget);
            process.stdout.write(`resume sent to batch ${id}\n`);
            process.stderr.write(
              `warning: ${status.published.reason}; the batch resumes when one does\n`,
            );
            return;
          }
          const keyIds = status.progress.pool.map((k) => k.id);
          const breakers = (await readEachThrottleStatus(client, keyIds)).flatMap((r) =>
            r.status?.snapshot.breaker.open ? [r.keyId] : [],
          );
          await resumeBatch(client, id, budget);
          process.stdout.write(`resume sent to batch ${id}\n`);
          for (const note of resumeNotes(status.progress, breakers))
            process.stdout.write(`  ${note}\n`);
        }),
      ),
    );

  cmd
    .command('window <id> <width>')
    .description(`Set how many rows are in flight at once (1-${MAX_WINDOW})`)
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, width: string, o: { tenant?: string }) => {
        const n = intArg('window', 1, MAX_WINDOW)(width);
        await withBatch(given, o.tenant, async (handle, _config, _client, id) => {
          await handle.signal(setBatchWindowSignal, n);
          process.stdout.write(`window of batch ${id} set to ${n}\n`);
          await warnLater(handle, 'the batch takes the window when one does');
        });
      }),
    );

  cmd
    .command('export <id>')
    .description(
      "Write an ordered copy of a batch's output, running or finished: a CSV (the input's columns, " +
        'outcome, code, message, the result flattened) or a JSONL',
    )
    .requiredOption('-o, --output <file>', 'file to write')
    .option('--format <csv|jsonl|parquet>', 'format (default: from the file name)')
    .option('--sorted', 'JSONL in row order (default: file order); a CSV is always in row order')
    .option('--csv-raw-cells', CSV_RAW_CELLS_HELP)
    .option('--overwrite', 'replace an existing file')
    .option('--json', 'print what was written as JSON')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: ExportFlags & { tenant?: string }) => {
        const target = resolve(o.output);
        const format = exportFormatOf(target, o.format);
        if (o.csvRawCells && format !== 'csv')
          throw new UsageError(
            '--csv-raw-cells is for a CSV export: a JSONL holds the values as they are',
          );
        await withBatch(given, o.tenant, async (handle, config, _client, id) => {
          const refuseExisting = async () => {
            const existing = await stat(target).catch(() => undefined);
            if (existing && existing.size > 0 && !o.overwrite) {
              throw new UsageError(
                `the file ${o.output} exists and is not empty: choose another --output or pass --overwrite`,
              );
            }
          };
          // A stored batch is exported from the store, running or ended, with or without a worker.
          const fromStore = await withStore(config, async (store) => {
            if (!(await store.record(id))) return undefined;
            // The batch's own files (named by its progress or summary, when one answers).
            const status = await batchStatus(handle);
            const named = status.ended ? status.summary : status.progress;
            if (named && target === named.source.path)
              throw new UsageError(`--output must not be the batch's input (${target})`);
            if (named && (target === named.output || target === named.csvOutput)) {
              // Its own output (a detached batch's is written by whoever watches it): written
              // whole, as a watch at its end would, once the batch ended.
              if (!status.ended)
                throw new UsageError(
                  `${target} is the batch's own output, and the batch is running: pcds batch watch ${id} writes it as rows finish (or give --output another file for a copy now)`,
                );
              const ended: BatchSummary = status.summary;
              const own = await writeBatchOutputs(store, id, outputsOf(named), ended);
              return { own: own ?? ended };
            }
            await refuseExisting();
            const noLine = await noLineOf(handle);
            const report = await exportBatchFromStore(store, {
              batchId: id,
              format,
              target,
              noLine,
              ...(o.csvRawCells ? { rawCells: true } : {}),
            });
            return { report, running: noLine === 'pending' };
          });
          if (fromStore?.own) {
            const s = fromStore.own;
            if (o.json) return printJson(s);
            process.stdout.write(
              `wrote the batch's own output, whole: ${s.csvOutput ? `${s.csvOutput} and ` : ''}${s.output} (${s.total} rows; summary: ${summaryPathOf(s.csvOutput ?? s.output)})\n`,
            );
            return;
          }
          if (fromStore) {
            if (o.json) return printJson(fromStore.report);
            const [first, ...notes] = exportText(fromStore.report, fromStore.running);
            process.stdout.write(`${first}\n`);
            for (const n of notes) process.stderr.write(`${n}\n`);
            return;
          }
          if (format === 'parquet')
            throw new UsageError(
              `batch ${id} was started before the store: its export is a CSV or a JSONL`,
            );
          await refuseExisting();
          const files = await batchFiles(handle);
          if (target === files.output || target === files.source.path) {
            throw new UsageError(
              `--output must not be the batch's ${target === files.output ? 'own output' : 'input'} (${target})`,
            );
          }
          let report: ExportReport;
          try {
            report = await exportBatchOutput({
              source: files.source,
              lines: files.output,
              target,
              format,
              sorted: o.sorted === true,
              noLine: files.noLine,
              ...(o.csvRawCells ? { rawCells: true } : {}),
            });
          } catch (err) {
            if (err instanceof InputError) throw new CliError(err.message);
            throw err;
          }
          if (o.json) return printJson(report);
          const [first, ...notes] = exportText(report, files.running);
          process.stdout.write(`${first}\n`);
          for (const n of notes) process.stderr.write(`${n}\n`);
        });
      }),
    );

  cmd
    .command('rows <id>')
    .description(
      "A stored batch's rows with their outcome, code and reason (never their values), from the store",
    )
    .addOption(
      new Option('--outcome <outcome>', 'only rows that ended so').choices([
        'found',
        'empty',
        'failed',
        'skipped',
      ]),
    )
    .option('--limit <n>', 'at most this many rows', intArg('--limit', 1, 100_000_000))
    .option('--json', 'one JSON object per row')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(
        async (
          given: string,
          o: { outcome?: ResultLine['outcome']; limit?: number; json?: boolean; tenant?: string },
        ) => {
          const config = loadConfig();
          const id = batchIdOf(given, o.tenant ?? config.PCDS_TENANT);
          await withStore(config, async (store) => {
            if (!(await store.record(id)))
              throw new UsageError(
                `the store has no batch with id ${id} (started before the store, or elsewhere)`,
              );
            const query = {
              ...(o.outcome ? { outcome: o.outcome } : {}),
              ...(o.limit ? { limit: o.limit } : {}),
            };
            for await (const line of batchResults(store, id, query)) {
              const f = failedRowOfLine(line);
              const row = {
                row: line.row,
                outcome: line.outcome,
                ...(line.code ? { code: line.code } : {}),
                ...(f?.reason ? { reason: f.reason } : {}),
                ...(line.requestId ? { requestId: line.requestId } : {}),
                ...(line.duplicateOf !== undefined ? { duplicateOf: line.duplicateOf } : {}),
              };
              process.stdout.write(
                o.json
                  ? `${JSON.stringify(row)}\n`
                  : `row ${row.row} ${row.outcome}${row.code ? ` ${row.code}` : ''}${row.reason ? `: ${row.reason}` : ''}\n`,
              );
            }
          });
        },
      ),
    );

  cmd
    .command('cancel <id>')
    .description(
      'Cancel a batch: rows in flight are cancelled, what finished is written with a summary',
    )
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .action(
      action(async (given: string, o: { tenant?: string }) =>
        withBatch(given, o.tenant, async (handle, _config, _client, id) => {
          await handle.cancel();
          process.stdout.write(`cancel sent to batch ${id}\n`);
          await warnLater(handle, 'the batch writes what finished and stops when one does');
        }),
      ),
    );
  return cmd;
}
