// The `pcds` command: a registry of subcommands, one register function per file.
import { Command } from 'commander';
import { registerBatchCommand } from './batch.js';
import { registerCacheCommand } from './cache.js';
import { registerCallCommand } from './call.js';
import { registerCodecServerCommand } from './codec-server.js';
import { registerDemoCommand } from './demo.js';
import { registerDevCommand } from './dev.js';
import { registerEmulatorCommand } from './emulator.js';
import { registerMcpCommand } from './mcp.js';
import { registerMcpLoginCommand } from './mcp-login.js';
import { reportError } from './output.js';
import { registerSearchCommand } from './search.js';
import { registerThrottleCommand } from './throttle.js';
import { registerUsageCommand } from './usage.js';
import { registerWebhooksCommand } from './webhooks.js';
import { registerWorkerCommand } from './worker.js';

// A reader that stops early (`pcds batch status <id> | head -1`) closes the pipe: the rest of the
// output has nowhere to go, so the command ends quietly, as Unix tools do, instead of crashing.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

const program = new Command('pcds')
  .description('Durable orchestration on Temporal for the Person and Company Data Service')
  .showHelpAfterError()
  .configureOutput({ outputError: (str, write) => write(str) });

// Commander's own usage errors exit 1 by default; bad usage is 2 here. Set before the
// subcommands are added: they copy the setting when created, not when parsed.
program.exitOverride((err) => {
  // Help and version asked for exit 0; help shown because a subcommand is missing is bad usage.
  process.exit(err.exitCode === 0 ? 0 : 2);
});

registerDevCommand(program);
registerCallCommand(program);
registerWorkerCommand(program);
registerUsageCommand(program);
registerEmulatorCommand(program);
registerWebhooksCommand(program);
registerCodecServerCommand(program);
registerBatchCommand(program);
registerCacheCommand(program);
registerSearchCommand(program);
registerDemoCommand(program);
registerThrottleCommand(program);
registerMcpCommand(program);
registerMcpLoginCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.exitCode = reportError(err);
}
