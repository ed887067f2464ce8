// `pcds search export`: every result of one person search, up to a maximum, into a JSONL file
// (one line `{row, result}` per person), read from stored pages by GET.
import { resolve } from 'node:path';
import { stat } from 'node:fs/promises';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { Command } from 'commander';
import { newBatchId, webUiLink } from '../batch/launch.js';
import { BATCH_ID_PATTERN } from '../batch/types.js';
import { formatProblems, getEndpoint, validateInput } from '../contract/index.js';
import { loadConfig } from '../config.js';
import { PcdsBatchId, PcdsEndpoint } from '../temporal/search-attributes.js';
import type { searchExport } from '../workflows/search-export.js';
import { connectTemporal } from './temporal-connection.js';
import { action, UsageError } from './output.js';
import { intArg } from './args.js';

interface ExportFlags {
  query?: string;
  json?: string;
  max: number;
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
      intArg('--max', 1, 1099),
    )
    .requiredOption('-o, --output <file>', 'JSONL file: one line per result')
    .option('--page-size <n>', 'results per page (1-100)', intArg('--page-size', 1, 100), 100)
    .option('--key <id>', 'key id to use (default: the first configured key)')
    .option('--id <exportId>', 'id of the export (letters, digits, _ and -; default: generated)')
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
        const checked = validateInput(getEndpoint('person_search'), params);
        if (!checked.ok) throw new UsageError(`person_search: ${formatProblems(checked.problems)}`);
        const exportId = o.id ?? `s${newBatchId().slice(1)}`;
        if (!BATCH_ID_PATTERN.test(exportId))
          throw new UsageError('--id: 1 to 64 letters, digits, _ or -');
        const output = resolve(o.output);
        const existing = await stat(output).catch(() => undefined);
        if (existing && existing.size > 0 && !o.overwrite) {
          throw new UsageError(
            `the output file ${o.output} exists and is not empty: choose another --output or pass --overwrite`,
          );
        }
        const config = loadConfig();
        const { client, close } = await connectTemporal(config);
        try {
          const workflowId = `search-export-${exportId}`;
          const handle = await client.workflow.start<typeof searchExport>('searchExport', {
            taskQueue: config.PCDS_TASK_QUEUE,
            workflowId,
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
            args: [
              {
                params: checked.value,
                maxResults: o.max,
                output,
                pageSize: o.pageSize,
                exportId,
                ...(o.key ? { keyId: o.key } : {}),
              },
            ],
            typedSearchAttributes: [
              { key: PcdsBatchId, value: exportId },
              { key: PcdsEndpoint, value: 'person_search' },
            ],
            staticSummary: `person search export of up to ${o.max} rows`,
          });
          process.stdout.write(`export ${exportId}\n`);
          process.stderr.write(
            `Web UI: ${webUiLink(config.PCDS_TEMPORAL_UI_URL, config.PCDS_TEMPORAL_NAMESPACE, workflowId)}\n`,
          );
          if (o.detach) return;
          const s = await handle.result();
          process.stderr.write(
            `exported ${s.rows} rows in ${s.pages} pages to ${s.output} (stopped: ${s.stoppedBy.replace(/_/g, ' ')}; last status ${s.lastStatus})\n`,
          );
        } finally {
          await close();
        }
      }),
    );
  return cmd;
}
