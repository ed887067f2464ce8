// `pcds worker`: run a worker against PCDS_TEMPORAL_ADDRESS until Ctrl-C.
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { runWorkerMain } from '../worker.js';
import { writeWorkflowBundle } from '../worker/bundle.js';
import { action } from './output.js';
import { asCliConnectionError } from './temporal-connection.js';

export function registerWorkerCommand(program: Command): Command {
  return program
    .command('worker')
    .description('run a worker (registers the search attributes, stops on Ctrl-C)')
    .option(
      '--write-bundle <file>',
      'write the workflows, bundled, to <file> and exit (PCDS_WORKFLOW_BUNDLE=<file> makes workers load it instead of bundling at start)',
    )
    .addHelpText(
      'after',
      "\nMetrics: with PCDS_METRICS_PORT set, the worker serves Prometheus metrics (the Temporal SDK's\n" +
        'and the pcds_ ones) at http://<PCDS_METRICS_HOST, default 127.0.0.1>:<port>/metrics.\n' +
        'Unset: no metrics server. A Grafana dashboard is in deploy/grafana/.',
    )
    .action(
      action(async (opts: { writeBundle?: string }) => {
        const config = loadConfig();
        if (opts.writeBundle !== undefined) {
          await writeWorkflowBundle(opts.writeBundle, config.PCDS_ENCRYPTION !== 'off');
          process.stderr.write(
            `workflows bundled into ${opts.writeBundle}: set PCDS_WORKFLOW_BUNDLE to it for workers of this release\n`,
          );
          return;
        }
        try {
          await runWorkerMain(config);
        } catch (err) {
          // The core's connection error reads "tonic::transport::Error(...)": name the fix instead.
          if (
            err instanceof Error &&
            (err.name === 'TemporalConnectionError' ||
              (err.name === 'TransportError' && /connect/i.test(err.message)))
          )
            throw asCliConnectionError(err, config);
          throw err;
        }
      }),
    );
}
