// `pcds demo`: the whole product in one command. Starts the local stack (Temporal with its Web
// UI, the emulator, a worker), runs a batch over examples/leads.csv with a live progress bar,
// prints the summary, then stops everything (or keeps it up, with the Web UI links, with --keep).
import { join, resolve } from 'node:path';
import { connectTemporalClient } from '../temporal/connection.js';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { Command } from 'commander';
import {
  BatchSetupError,
  prepareBatch,
  startBatchWorkflow,
  webUiLink,
  webUiRowsLink,
} from '../client/batch-launch.js';
import { projectRoot } from '../temporal/cli-binary.js';
import { temporalClient } from '../temporal/data-converter.js';
import { BatchStore, openStoreFromSettings } from '../store/index.js';
import { summaryText } from './batch/text.js';
import { watchStoredBatch } from './batch/watch.js';
import { startDevStack } from './dev-stack.js';
import { action, UsageError } from './output.js';
import { portArg } from './args.js';

interface DemoFlags {
  keep?: boolean;
  input: string;
  output: string;
  temporalPort: number;
  uiPort: number;
  emulatorPort: number;
  codecPort: number;
  webhookPort?: number;
}

export function registerDemoCommand(program: Command): Command {
  const root = projectRoot();
  return program
    .command('demo')
    .description(
      'start the local stack and enrich examples/leads.csv with a batch (--keep leaves the stack up)',
    )
    .option('--keep', 'keep Temporal, its Web UI, the emulator and the worker up until Ctrl-C')
    .option('--input <file>', 'CSV or JSONL of leads', join(root, 'examples', 'leads.csv'))
    .option('--output <file>', 'JSONL of results', resolve('out', 'demo-enriched.jsonl'))
    .option('--temporal-port <port>', 'Temporal frontend port', portArg, 7233)
    .option('--ui-port <port>', 'Temporal Web UI port', portArg, 8233)
    .option('--emulator-port <port>', 'emulator port', portArg, 8787)
    .option(
      '--codec-port <port>',
      'port of the codec server the Web UI decodes payloads with',
      portArg,
      8789,
    )
    .option(
      '--webhook-port <port>',
      'webhook receiver port (default PCDS_WEBHOOK_PORT, 8788)',
      portArg,
    )
    .action(
      action(async (o: DemoFlags) => {
        // Checked before anything starts: a missing file fails in a second, not after the stack.
        const prepared = await prepareBatch({
          input: o.input,
          output: o.output,
          overwrite: true,
          batchId: `demo-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}`,
          window: 10,
        }).catch((err: unknown) => {
          throw err instanceof BatchSetupError ? new UsageError(err.message) : err;
        });
        // The worker's INFO lines would scroll the progress bar away.
        Runtime.install({ logger: new DefaultLogger('WARN') });
        process.stderr.write('starting Temporal (with its Web UI), the emulator and a worker...\n');
        const stack = await startDevStack({
          temporalPort: o.temporalPort,
          uiPort: o.uiPort,
          emulatorPort: o.emulatorPort,
          codecPort: o.codecPort,
          ...(o.webhookPort !== undefined ? { webhookPort: o.webhookPort } : {}),
        });
        const connection = await connectTemporalClient({ address: stack.temporal.address });
        const opened = await openStoreFromSettings(stack.config);
        const store = new BatchStore(opened);
        try {
          const client = temporalClient(connection, stack.config);
          const uiUrl = stack.uiUrl ?? stack.config.PCDS_TEMPORAL_UI_URL;
          const ns = stack.temporal.namespace;
          // The demo reads its file here and hands the rows to the store the worker reads.
          const handle = await startBatchWorkflow(client, stack.config.PCDS_TASK_QUEUE, prepared, {
            store,
          });
          const { batchId } = prepared.input;
          process.stderr.write(
            `batch ${batchId}: ${prepared.inspection.total} rows of ${prepared.input.source.path}\n` +
              `Web UI (up while the demo runs): ${webUiLink(uiUrl, ns, handle.workflowId)}\n`,
          );
          const { output, csvOutput } = prepared.input;
          const summary = await watchStoredBatch(
            handle,
            store,
            { output, ...(csvOutput ? { csvOutput } : {}) },
            { onDetach: () => process.stderr.write('\nstopping the demo...\n') },
          );
          if (summary) {
            process.stdout.write(`${summaryText(summary)}\n`);
            // The Web UI stops with the stack: its links are only worth printing when it stays up.
            process.stdout.write(
              o.keep
                ? `\nThe batch in the Web UI: ${webUiLink(uiUrl, ns, handle.workflowId)}\n` +
                    `Its rows:               ${webUiRowsLink(uiUrl, ns, batchId)}\n`
                : `\nThe Web UI stops with the demo: run it with --keep to look at the batch there.\n`,
            );
          }
          if (o.keep && summary) {
            const lines = Object.entries(stack.env).map(([k, v]) => `export ${k}=${v}`);
            process.stdout.write(
              `\nThe stack stays up until Ctrl-C. In another shell:\n${lines.join('\n')}\n` +
                `then e.g.: pcds batch start --input examples/leads.csv --output out/enriched.jsonl\n`,
            );
            await new Promise<void>((resolve) => {
              process.once('SIGINT', resolve);
              process.once('SIGTERM', resolve);
            });
          }
        } finally {
          await opened.close();
          await connection.close();
          process.stderr.write('stopping Temporal, the emulator and the worker...\n');
          await stack.stop();
        }
      }),
    );
}
