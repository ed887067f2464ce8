// `pcds batch start`: checks a batch's input and options, prints its plan (only that with
// --dry-run), loads its rows into the store, starts it and watches it until it ends or is left.
import type { Client } from '@temporalio/client';
import { Command, Option } from 'commander';
import {
  cacheDefaultOf,
  cacheUseOf,
  readsCache,
  scopedCacheUse,
  type CacheUse,
} from '../../calls/cache-policy.js';
import { InputError } from '../../batch-io/row-reader.js';
import { MAX_ROW_BYTES_LIMIT, MAX_WINDOW } from '../../batch/types.js';
import {
  BatchSetupError,
  prepareBatch,
  startBatchWorkflow,
  webUiLink,
  webUiRowsLink,
  type BatchHandle,
  type BatchRequest,
  type PreparedBatch,
} from '../../client/batch-launch.js';
import { loadedInputCounts, type CacheHitCounter } from '../../client/batch-plan-input.js';
import { loadConfig, paceNote, type Config } from '../../config.js';
import { OPERATOR_TENANT, TRANSPORTS, type Transport } from '../../contract/index.js';
import { BatchStore, openStoreFromSettings, type Store } from '../../store/index.js';
import { ResultCache } from '../../store/result-cache.js';
import { ageArg, CSV_RAW_CELLS_HELP, intArg, TENANT_HELP, tenantArg, weightArg } from '../args.js';
import { loadProgressBar } from '../load-progress.js';
import { action, UsageError } from '../output.js';
import { connectTemporal, warnWithoutWorker } from '../temporal-connection.js';
import { batchPlanFromCounts, batchPlanOf, printPlan } from './plan.js';
import { summaryText } from './text.js';
import { watchStoredBatch } from './watch.js';

/** A comma-separated list option (--ignore, --keys): its items, trimmed, none empty. */
const listArg = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

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

/** The batch a start asks for, from its flags and this machine's settings. */
function batchRequestOf(o: StartFlags, config: Config): BatchRequest {
  return {
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
}

/** How the batch uses the result cache (--no-cache, --refresh, --max-age over PCDS_CACHE). */
function cacheUseOfFlags(o: StartFlags, config: Config): CacheUse {
  try {
    return cacheUseOf(
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
}

/**
 * The batch checked before anything starts; with --dry-run, its plan printed instead and
 * undefined returned.
 */
async function prepareOrPlan(
  o: StartFlags,
  config: Config,
  req: BatchRequest,
  cache: CacheUse,
): Promise<PreparedBatch | undefined> {
  try {
    const prepared = await prepareBatch(req, { dryRun: o.dryRun === true });
    if (!o.dryRun) return prepared;
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
    return undefined;
  } catch (err) {
    if (err instanceof BatchSetupError) throw new UsageError(err.message);
    if (err instanceof InputError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * Reads the file here and puts its rows into the store (workers never open it), then starts the
 * batch; its plan is printed once the rows are loaded.
 */
async function loadAndStart(
  o: StartFlags,
  config: Config,
  client: Client,
  store: Store,
  prepared: PreparedBatch,
  cache: CacheUse,
): Promise<BatchHandle> {
  const loading = loadProgressBar();
  const batchStore = new BatchStore(store);
  try {
    return await startBatchWorkflow(client, config.PCDS_TASK_QUEUE, prepared, {
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
}

/** The batch's id on stdout; its rows, output and Web UI links on stderr. */
function printStarted(config: Config, prepared: PreparedBatch, handle: BatchHandle): void {
  const { batchId } = prepared.input;
  process.stdout.write(`batch ${batchId}\n`);
  const { csvOutput, output } = prepared.input;
  process.stderr.write(
    `${prepared.inspection.total} rows of ${prepared.input.source.path} -> ${csvOutput ? `${csvOutput} (results stream to ${output})` : output}\n` +
      `Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, handle.workflowId)}\n` +
      `rows:   ${webUiRowsLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, batchId)}\n`,
  );
}

/** Prepares, plans, loads and starts a batch, then watches it unless --detach. */
async function startBatch(o: StartFlags): Promise<void> {
  const config = loadConfig();
  const req = batchRequestOf(o, config);
  const cache = cacheUseOfFlags(o, config);
  const prepared = await prepareOrPlan(o, config, req, cache);
  if (!prepared) return;
  const { client, close } = await connectTemporal(config);
  const store = await openStoreFromSettings(config);
  try {
    const handle = await loadAndStart(o, config, client, store, prepared, cache);
    printStarted(config, prepared, handle);
    const { batchId, csvOutput, output } = prepared.input;
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
}

/** `pcds batch start`: its options, and the start. */
export function registerStartCommand(cmd: Command): void {
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
    .action(action(startBatch));
}
