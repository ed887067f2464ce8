// `pcds worker`: run a worker against PCDS_TEMPORAL_ADDRESS until Ctrl-C.
import type { Command } from 'commander';
import { loadConfig } from '../config';
import { runWorkerMain } from '../worker';
import { action, CliError } from './output';

export function registerWorkerCommand(program: Command): Command {
  return program
    .command('worker')
    .description('run a worker (registers the search attributes, stops on Ctrl-C)')
    .action(
      action(async () => {
        const config = loadConfig();
        try {
          await runWorkerMain(config);
        } catch (err) {
          // The core's connection error reads "tonic::transport::Error(...)": name the fix instead.
          if (err instanceof Error && err.name === 'TransportError' && /connect/i.test(err.message))
            throw new CliError(
              `cannot reach Temporal at ${config.PCDS_TEMPORAL_ADDRESS} (is \`pcds dev\` running? set PCDS_TEMPORAL_ADDRESS)`,
            );
          throw err;
        }
      }),
    );
}
