// `pcds worker`: run a worker against PCDS_TEMPORAL_ADDRESS until Ctrl-C.
import type { Command } from 'commander';
import { runWorkerMain } from '../worker';
import { action } from './output';

export function registerWorkerCommand(program: Command): Command {
  return program
    .command('worker')
    .description('run a worker (registers the search attributes, stops on Ctrl-C)')
    .action(action(() => runWorkerMain()));
}
