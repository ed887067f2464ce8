// The `pcds` command: a registry of subcommands, one register function per file.
import { Command } from 'commander';
import { registerBatchCommand } from './batch';
import { registerCallCommand } from './call';
import { registerDemoCommand } from './demo';
import { registerDevCommand } from './dev';
import { registerEmulatorCommand } from './emulator';
import { reportError } from './output';
import { registerSearchCommand } from './search';
import { registerUsageCommand } from './usage';
import { registerWebhooksCommand } from './webhooks';
import { registerWorkerCommand } from './worker';

const program = new Command('pcds')
  .description('Durable orchestration on Temporal for the Person and Company Data Service')
  .showHelpAfterError()
  .configureOutput({ outputError: (str, write) => write(str) });

registerDevCommand(program);
registerCallCommand(program);
registerWorkerCommand(program);
registerUsageCommand(program);
registerEmulatorCommand(program);
registerWebhooksCommand(program);
registerBatchCommand(program);
registerSearchCommand(program);
registerDemoCommand(program);

// Commander's own usage errors exit 1 by default; bad usage is 2 here.
program.exitOverride((err) => {
  if (
    err.code === 'commander.helpDisplayed' ||
    err.code === 'commander.version' ||
    err.code === 'commander.help'
  )
    process.exit(0);
  process.exit(2);
});

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.exitCode = reportError(err);
}
