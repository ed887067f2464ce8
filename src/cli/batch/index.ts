// `pcds batch`: bulk jobs from CSV or JSONL files. Wires its subcommands, one file per group, in
// the order help lists them.
import type { Command } from 'commander';
import {
  registerCancelCommand,
  registerPauseCommand,
  registerResumeCommand,
  registerWindowCommand,
} from './control.js';
import { registerBatchListCommand } from './list.js';
import { registerExportCommand, registerRowsCommand } from './results.js';
import { registerStartCommand } from './start.js';
import { registerStatusCommand } from './status.js';
import { registerWatchCommand } from './watch.js';

export function registerBatchCommand(program: Command): Command {
  const cmd = program
    .command('batch')
    .description('bulk jobs: run an endpoint over every row of a CSV or JSONL file');
  registerBatchListCommand(cmd);
  registerStartCommand(cmd);
  registerStatusCommand(cmd);
  registerWatchCommand(cmd);
  registerPauseCommand(cmd);
  registerResumeCommand(cmd);
  registerWindowCommand(cmd);
  registerExportCommand(cmd);
  registerRowsCommand(cmd);
  registerCancelCommand(cmd);
  return cmd;
}
