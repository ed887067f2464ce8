// `pcds worker`: run a worker against PCDS_TEMPORAL_ADDRESS until Ctrl-C.
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { runWorkerMain } from '../worker.js';
import { action } from './output.js';
import { asCliConnectionError } from './temporal-connection.js';

export function registerWorkerCommand(program: Command): Command {
  return program
    .command('worker')
    .description('run a worker (registers the search attributes, stops on Ctrl-C)')
    .addHelpText(
      'after',
      "\nMetrics: with PCDS_METRICS_PORT set, the worker serves Prometheus metrics (the Temporal SDK's\n" +
        'and the pcds_ ones) at http://<PCDS_METRICS_HOST, default 127.0.0.1>:<port>/metrics.\n' +
        'Unset: no metrics server. A Grafana dashboard is in deploy/grafana/.',
    )
    .action(
      action(async () => {
        const config = loadConfig();
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
