// `pcds batch export|rows`: a batch's results, running or ended: an ordered copy of its output
// (CSV, JSONL or Parquet; from the store, or from the files of a batch started before it), and
// each stored row's outcome, code and reason (never its values).
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import type { NoLineLabel } from '../../batch/flatten.js';
import { failedRowOfLine } from '../../batch/failed-rows.js';
import type { BatchSummary, ExportReport, ResultLine } from '../../batch/types.js';
import { exportBatchOutput } from '../../batch-io/export.js';
import { InputError } from '../../batch-io/row-reader.js';
import { batchFiles, batchStatus, type BatchHandle } from '../../client/batch-launch.js';
import { loadConfig } from '../../config.js';
import { batchResults, exportBatchFromStore, type StoreExportFormat } from '../../store/export.js';
import type { BatchStore } from '../../store/index.js';
import { outputsOf, summaryPathOf, writeBatchOutputs } from '../../store/outputs.js';
import { CSV_RAW_CELLS_HELP, intArg, TENANT_HELP, tenantArg } from '../args.js';
import { action, CliError, printJson, UsageError } from '../output.js';
import { batchIdOf, withBatch, withStore } from './connect.js';
import { exportText } from './text.js';

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

/** An export never replaces a file that holds something, unless --overwrite. */
async function refuseExisting(target: string, o: ExportFlags): Promise<void> {
  const existing = await stat(target).catch(() => undefined);
  if (existing && existing.size > 0 && !o.overwrite) {
    throw new UsageError(
      `the file ${o.output} exists and is not empty: choose another --output or pass --overwrite`,
    );
  }
}

/**
 * A stored batch is exported from the store, running or ended, with or without a worker: a copy
 * (what was written), or its own output written whole (its summary). Undefined when the store
 * has no such batch.
 */
async function exportFromStore(
  store: BatchStore,
  handle: BatchHandle,
  id: string,
  target: string,
  format: StoreExportFormat,
  o: ExportFlags,
): Promise<{ own: BatchSummary } | { report: ExportReport; running: boolean } | undefined> {
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
  await refuseExisting(target, o);
  const noLine = await noLineOf(handle);
  const report = await exportBatchFromStore(store, {
    batchId: id,
    format,
    target,
    noLine,
    ...(o.csvRawCells ? { rawCells: true } : {}),
  });
  return { report, running: noLine === 'pending' };
}

/** A batch started before the store: its copy made from the output file its workers wrote. */
async function exportFromFiles(
  handle: BatchHandle,
  id: string,
  target: string,
  format: StoreExportFormat,
  o: ExportFlags,
): Promise<{ report: ExportReport; running: boolean }> {
  if (format === 'parquet')
    throw new UsageError(
      `batch ${id} was started before the store: its export is a CSV or a JSONL`,
    );
  await refuseExisting(target, o);
  const files = await batchFiles(handle);
  if (target === files.output || target === files.source.path) {
    throw new UsageError(
      `--output must not be the batch's ${target === files.output ? 'own output' : 'input'} (${target})`,
    );
  }
  try {
    const report = await exportBatchOutput({
      source: files.source,
      lines: files.output,
      target,
      format,
      sorted: o.sorted === true,
      noLine: files.noLine,
      ...(o.csvRawCells ? { rawCells: true } : {}),
    });
    return { report, running: files.running };
  } catch (err) {
    if (err instanceof InputError) throw new CliError(err.message);
    throw err;
  }
}

/** What an export wrote: its first line on stdout, its notes on stderr (or all of it as JSON). */
function printExport(
  { report, running }: { report: ExportReport; running: boolean },
  json: boolean | undefined,
): void {
  if (json) return printJson(report);
  const [first, ...notes] = exportText(report, running);
  process.stdout.write(`${first}\n`);
  for (const n of notes) process.stderr.write(`${n}\n`);
}

/** `pcds batch export <id>`: an ordered copy of a batch's output, or its own output written whole. */
export function registerExportCommand(cmd: Command): void {
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
          const fromStore = await withStore(config, (store) =>
            exportFromStore(store, handle, id, target, format, o),
          );
          if (fromStore && 'own' in fromStore) {
            const s = fromStore.own;
            if (o.json) return printJson(s);
            process.stdout.write(
              `wrote the batch's own output, whole: ${s.csvOutput ? `${s.csvOutput} and ` : ''}${s.output} (${s.total} rows; summary: ${summaryPathOf(s.csvOutput ?? s.output)})\n`,
            );
            return;
          }
          printExport(fromStore ?? (await exportFromFiles(handle, id, target, format, o)), o.json);
        });
      }),
    );
}

/** `pcds batch rows <id>`: a stored batch's rows and how each ended. */
export function registerRowsCommand(cmd: Command): void {
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
}
