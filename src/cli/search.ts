// `pcds search export`: every result of one person search, up to a maximum, into a JSONL file
// (one line `{row, result}` per person), read from stored pages by GET.
import { Command } from 'commander';
import { webUiLink } from '../client/batch-launch.js';
import { MAX_EXPORT_RESULTS, validatedParams } from '../client.js';
import { loadConfig } from '../config.js';
import { connectPcdsClient, requireWorker, warnWithoutWorker } from './temporal-connection.js';
import { describeWaits } from '../client/wait-reasons.js';
import { reportWaits } from './wait-reports.js';
import { action, UsageError } from './output.js';
import { intArg, TENANT_HELP, tenantArg } from './args.js';

interface ExportFlags {
  query?: string;
  json?: string;
  max: number;
  tenant?: string;
  output: string;
  pageSize: number;
  key?: string;
  id?: string;
  overwrite?: boolean;
  detach?: boolean;
}

export function registerSearchCommand(program: Command): Command {
  const cmd = program.command('search').description('person search beyond one page');
  cmd
    .command('export')
    .description('Page through the results of one person search into a JSONL file')
    .option('-q, --query <text>', 'natural-language query')
    .option(
      '--json <object>',
      'further person_search parameters as a JSON object (filters, type, ...)',
    )
    .requiredOption(
      '--max <n>',
      'most results to export (the service pages up to offset 999)',
      intArg('--max', 1, MAX_EXPORT_RESULTS),
    )
    .requiredOption(
      '-o, --output <file>',
      'JSONL file (name ending in .jsonl): one line per result',
    )
    .option('--page-size <n>', 'results per page (1-100)', intArg('--page-size', 1, 100), 100)
    .option('--key <id>', 'key id to use (default: the first configured key)')
    .option('--id <exportId>', 'id of the export (letters, digits, _ and -; default: generated)')
    .option('--tenant <id>', TENANT_HELP, tenantArg)
    .option('--overwrite', 'replace an existing output file')
    .option('--detach', 'print the export id and return at once')
    .action(
      action(async (o: ExportFlags) => {
        let extra: Record<string, unknown> = {};
        if (o.json) {
          try {
            const v = JSON.parse(o.json) as unknown;
            if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error();
            extra = v as Record<string, unknown>;
          } catch {
            throw new UsageError('--json must be a JSON object');
          }
        }
        const params = { ...extra, ...(o.query ? { query: o.query } : {}) };
        // Bad parameters are reported before anything connects (exit 2, like any usage error).
        validatedParams('person_search', params);
        const config = loadConfig();
        const connected = await connectPcdsClient(config);
        const client = o.tenant ? connected.withTenant(o.tenant) : connected;
        try {
          // Waiting for the export with no worker would only hang: refused before anything starts.
          if (!o.detach)
            await requireWorker(
              client.temporal,
              config.PCDS_TASK_QUEUE,
              'nothing was started; with --detach the export is started and runs once a worker polls',
            );
          else
            await warnWithoutWorker(
              client.temporal,
              config.PCDS_TASK_QUEUE,
              'the export is started and runs when one does',
            );
          const handle = await client.startSearchExport(params, {
            maxResults: o.max,
            output: o.output,
            pageSize: o.pageSize,
            ...(o.key ? { keyId: o.key } : {}),
            ...(o.id ? { exportId: o.id } : {}),
            ...(o.overwrite ? { overwrite: true } : {}),
          });
          process.stdout.write(`export ${handle.exportId}\n`);
          process.stderr.write(
            `Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, handle.workflowId)}\n`,
          );
          if (o.detach) return;
          // A worker gone, a key's window full: said while the export waits, never silent.
          const s = await reportWaits(handle.result(), async () => {
            const w = await describeWaits(client.temporal, handle.workflowId);
            return { reasons: w.reasons };
          });
          process.stderr.write(
            `exported ${s.rows} rows in ${s.pages} pages to ${s.output} (stopped: ${s.stoppedBy.replace(/_/g, ' ')}; last status ${s.lastStatus})\n`,
          );
        } finally {
          await connected.close();
        }
      }),
    );
  return cmd;
}
