// `pcds batch start|status|watch|pause|resume|window|cancel`: bulk jobs from CSV or JSONL files,
// with a live progress bar that Ctrl-C leaves without stopping the batch.
import { WorkflowNotFoundError } from '@temporalio/client';
import { SingleBar } from 'cli-progress';
import { Command } from 'commander';
import { describeEstimate, estimateCost } from '../batch/cost.js';
import {
  BatchSetupError,
  batchHandle,
  prepareBatch,
  queryProgress,
  startBatchWorkflow,
  webUiLink,
  webUiRowsLink,
  type BatchHandle,
  type BatchRequest,
  type PreparedBatch,
} from '../batch/launch.js';
import { pauseBatchSignal, resumeBatchSignal, setBatchWindowSignal } from '../batch/messages.js';
import {
  MAX_ROW_BYTES_LIMIT,
  MAX_WINDOW,
  batchWorkflowId,
  type BatchProgress,
  type BatchSummary,
} from '../batch/types.js';
import { loadConfig, type Config } from '../config.js';
import { createServiceClients } from '../http/service-clients.js';
import { action, printJson, UsageError } from './output.js';
import { connectTemporal } from './temporal-connection.js';
import { intArg } from './args.js';

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

const failedByCode = (p: { failedByCode: Record<string, number> }) =>
  Object.entries(p.failedByCode)
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');

/** One line of progress, for status output and logs. */
export function progressLine(p: BatchProgress): string {
  const failed = failedByCode(p);
  return (
    `${p.state}: ${p.done}/${p.total} rows | found ${p.found}, empty ${p.empty}, failed ${p.failed}` +
    `${failed ? ` (${failed})` : ''} | ${p.inFlight} in flight (window ${p.window}) | ${p.rowsPerSecond} rows/s | ETA ${fmtSeconds(p.etaSeconds)}`
  );
}

export function summaryText(s: BatchSummary): string {
  const failed = failedByCode(s);
  return [
    `batch ${s.batchId} ${s.state}: ${s.done} of ${s.total} rows in ${s.seconds} s (${s.rowsPerSecond} rows/s)`,
    `  found ${s.found}, empty ${s.empty}, failed ${s.failed}${failed ? ` (${failed})` : ''}`,
    ...(s.blankLines
      ? [`  ${s.blankLines} blank line${s.blankLines === 1 ? '' : 's'} skipped`]
      : []),
    `  output: ${s.output} (summary: ${s.output}.summary.json)`,
  ].join('\n');
}

function poolNotes(p: BatchProgress): string[] {
  const notes: string[] = [];
  if (p.paused) notes.push(`paused: ${p.paused.code}: ${p.paused.message}`);
  const removed = p.pool.filter((k) => k.removed);
  if (removed.length > 0)
    notes.push(`keys out of the pool: ${removed.map((k) => `${k.id} (${k.removed})`).join(', ')}`);
  return notes;
}

export interface WatchOptions {
  /** Called when Ctrl-C detaches; default prints how to watch again. */
  onDetach?: () => void;
  out?: NodeJS.WriteStream;
}

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
      '{bar} {value}/{total} rows | found {found} empty {empty} failed {failed} | {rate} rows/s | ETA {etaText} {note}',
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
      etaText: fmtSeconds(p.etaSeconds),
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
  handle.result().then(
    (summary) => {
      finished = { summary };
      wake();
    },
    (error: unknown) => {
      finished = { error };
      wake();
    },
  );
  try {
    while (!finished && !detached) {
      try {
        show(await queryProgress(handle));
      } catch {
        // Between two runs of the batch, or before its first task: ask again shortly.
      }
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
    if (finished?.summary) {
      const s = finished.summary;
      if (started)
        bar.update(s.done, { found: s.found, empty: s.empty, failed: s.failed, note: '' });
    }
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
  if (finished?.error)
    throw finished.error instanceof Error ? finished.error : new Error('the batch failed');
  return finished?.summary;
}

async function usageNote(config: Config, prepared: PreparedBatch): Promise<string> {
  const rows = prepared.inspection.total;
  const estimate = estimateCost(prepared.endpoint, rows);
  if (config.keys.length === 0) return describeEstimate(estimate, undefined);
  const clients = createServiceClients(config);
  try {
    const usage = await clients.get(prepared.input.keyIds?.[0]).usage();
    const limits = (usage.limits ?? {}) as { available_credits?: unknown; is_unlimited?: unknown };
    const available =
      limits.is_unlimited === true
        ? 'unlimited'
        : typeof limits.available_credits === 'number'
          ? limits.available_credits
          : undefined;
    return describeEstimate(estimate, available);
  } catch (err) {
    return `${describeEstimate(estimate, undefined)}; could not read GET /usage: ${(err as Error).message}`;
  } finally {
    await clients.close();
  }
}

interface StartFlags {
  endpoint: string;
  input: string;
  output: string;
  format?: string;
  map?: string;
  ignore?: string[];
  id?: string;
  window?: number;
  keys?: string[];
  maxRowBytes?: number;
  webhooks?: boolean;
  overwrite?: boolean;
  detach?: boolean;
  estimate: boolean;
}

async function withBatch(
  id: string,
  fn: (handle: BatchHandle, config: Config) => Promise<void>,
): Promise<void> {
  const config = loadConfig();
  const { client, close } = await connectTemporal(config);
  try {
    const handle = batchHandle(client, id);
    try {
      await fn(handle, config);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError)
        throw new UsageError(`no batch with id ${id} (workflow ${batchWorkflowId(id)})`);
      throw err;
    }
  } catch (err) {
    if (err instanceof BatchSetupError) throw new UsageError(err.message);
    throw err;
  } finally {
    await close();
  }
}

export function registerBatchCommand(program: Command): Command {
  const cmd = program
    .command('batch')
    .description('bulk jobs: run an endpoint over every row of a CSV or JSONL file');

  cmd
    .command('start')
    .description(
      'Start a batch, then show its progress until it ends (Ctrl-C detaches; the batch goes on)',
    )
    .option('-e, --endpoint <name>', 'endpoint of the catalogue', 'person_enrichment')
    .requiredOption('-i, --input <file>', 'CSV (with a header row) or JSONL file of inputs')
    .requiredOption('-o, --output <file>', 'JSONL file of results: one line per input row')
    .option('--format <csv|jsonl>', 'input format (default: from the file name)')
    .option(
      '--map <param=column,...>',
      'parameters whose column has another name, e.g. "email=Email Address,name=Full Name"',
    )
    .option('--ignore <columns>', 'comma-separated columns to leave out', listArg)
    .option('--id <batchId>', 'batch id (letters, digits, _ and -; default: generated)')
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
    .option('--overwrite', 'replace an existing output file')
    .option('--detach', 'print the batch id and return at once')
    .option('--no-estimate', 'skip the GET /usage credit check')
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
          ...(o.id ? { batchId: o.id } : {}),
          ...(o.window ? { window: o.window } : {}),
          ...(o.keys ? { keyIds: o.keys } : {}),
          ...(o.maxRowBytes ? { maxRowBytes: o.maxRowBytes } : {}),
          ...(o.webhooks
            ? { webhooks: true, webhookFallbackPollMs: config.PCDS_WEBHOOK_FALLBACK_POLL_MS }
            : {}),
          ...(o.overwrite ? { overwrite: true } : {}),
        };
        let prepared: PreparedBatch;
        try {
          prepared = await prepareBatch(req);
        } catch (err) {
          if (err instanceof BatchSetupError) throw new UsageError(err.message);
          throw err;
        }
        if (o.estimate) process.stderr.write(`${await usageNote(config, prepared)}\n`);
        const { client, close } = await connectTemporal(config);
        try {
          let handle: BatchHandle;
          try {
            handle = await startBatchWorkflow(client, config.PCDS_TASK_QUEUE, prepared);
          } catch (err) {
            if (err instanceof BatchSetupError) throw new UsageError(err.message);
            throw err;
          }
          const { batchId } = prepared.input;
          process.stdout.write(`batch ${batchId}\n`);
          process.stderr.write(
            `${prepared.inspection.total} rows of ${prepared.input.source.path} -> ${prepared.input.output}\n` +
              `Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, handle.workflowId)}\n` +
              `rows:   ${webUiRowsLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, batchId)}\n`,
          );
          if (o.detach) return;
          const summary = await watchBatch(handle);
          if (summary) process.stderr.write(`${summaryText(summary)}\n`);
        } finally {
          await close();
        }
      }),
    );

  cmd
    .command('status <id>')
    .description('Progress of a batch (or its summary once it ended)')
    .option('--json', 'print the progress as JSON')
    .action(
      action(async (id: string, o: { json?: boolean }) =>
        withBatch(id, async (handle, config) => {
          const desc = await handle.describe();
          if (desc.status.name !== 'RUNNING' && desc.status.name !== 'CONTINUED_AS_NEW') {
            if (desc.status.name === 'COMPLETED') {
              const summary = await handle.result();
              if (o.json) printJson(summary);
              else process.stdout.write(`${summaryText(summary)}\n`);
              return;
            }
            throw new UsageError(`batch ${id} is ${desc.status.name.toLowerCase()}`);
          }
          const p = await queryProgress(handle);
          if (o.json) return printJson(p);
          process.stdout.write(`batch ${id} ${progressLine(p)}\n`);
          for (const n of poolNotes(p)) process.stdout.write(`  ${n}\n`);
          process.stdout.write(
            `  Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, handle.workflowId)}\n`,
          );
        }),
      ),
    );

  cmd
    .command('watch <id>')
    .description('Live progress bar of a batch until it ends (Ctrl-C detaches)')
    .action(
      action(async (id: string) =>
        withBatch(id, async (handle) => {
          const summary = await watchBatch(handle);
          if (summary) process.stderr.write(`${summaryText(summary)}\n`);
        }),
      ),
    );

  cmd
    .command('pause <id>')
    .description('Stop starting rows; rows in flight finish and are written')
    .option('--reason <text>', 'shown in the progress (no personal data)')
    .action(
      action(async (id: string, o: { reason?: string }) =>
        withBatch(id, async (handle) => {
          await handle.signal(pauseBatchSignal, o.reason ? { reason: o.reason } : {});
          process.stdout.write(`pause sent to batch ${id}\n`);
        }),
      ),
    );

  cmd
    .command('resume <id>')
    .description("Start rows again (re-reads the worker's keys and closes their credit breakers)")
    .action(
      action(async (id: string) =>
        withBatch(id, async (handle) => {
          await handle.signal(resumeBatchSignal);
          process.stdout.write(`resume sent to batch ${id}\n`);
        }),
      ),
    );

  cmd
    .command('window <id> <width>')
    .description(`Set how many rows are in flight at once (1-${MAX_WINDOW})`)
    .action(
      action(async (id: string, width: string) => {
        const n = intArg('window', 1, MAX_WINDOW)(width);
        await withBatch(id, async (handle) => {
          await handle.signal(setBatchWindowSignal, n);
          process.stdout.write(`window of batch ${id} set to ${n}\n`);
        });
      }),
    );

  cmd
    .command('cancel <id>')
    .description(
      'Cancel a batch: rows in flight are cancelled, what finished is written with a summary',
    )
    .action(
      action(async (id: string) =>
        withBatch(id, async (handle) => {
          await handle.cancel();
          process.stdout.write(`cancel sent to batch ${id}\n`);
        }),
      ),
    );
  return cmd;
}
