// `pcds batch status <id>`: a batch's progress (why it waits, what it gets of its keys), its
// summary once it ended, or its failed rows; what it last published when no worker answers.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import { failedRowOfLine, failedRowText, type FailedRowReason } from '../../batch/failed-rows.js';
import { batchStatus, webUiLink } from '../../client/batch-launch.js';
import { readEachThrottleStatus } from '../../client/throttle-operator.js';
import { waitLines } from '../../client/wait-reasons.js';
import { paceNote } from '../../config.js';
import type { BatchStore } from '../../store/index.js';
import { batchResults } from '../../store/export.js';
import { batchShareNotes } from '../../throttle/status-text.js';
import { TENANT_HELP, tenantArg } from '../args.js';
import { action, CliError, printJson, UsageError } from '../output.js';
import { withBatch, withStore } from './connect.js';
import {
  failedRowsText,
  poolNotes,
  progressLine,
  publishedText,
  requestsText,
  summaryText,
} from './text.js';

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

/** Lists a stored batch's failed rows (number, code, reason); false when the store has no such batch. */
async function printFailedRows(store: BatchStore, id: string, json?: boolean): Promise<boolean> {
  if (!(await store.record(id))) return false;
  for await (const line of batchResults(store, id, { outcome: 'failed' })) {
    const f = failedRowOfLine(line);
    if (f) process.stdout.write(json ? `${JSON.stringify(f)}\n` : `${failedRowText(f)}\n`);
  }
  return true;
}

/** `pcds batch status <id>`: progress, summary or failed rows, as text or JSON. */
export function registerStatusCommand(cmd: Command): void {
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
}
