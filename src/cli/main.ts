// The `pcds` command: a registry of subcommands, one register function per file, each loaded only
// when its command runs.
import { Command } from 'commander';
import { reportError } from './output.js';
import { unknownCommand } from './unknown-command.js';

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

type Register = (program: Command) => unknown;

/**
 * Each command's module, in the order help lists them. Only the named command's module is
 * loaded (help, or a name that is none of these, loads them all): `pcds usage` starts without
 * loading the batch, MCP or dev-stack code, which would take most of its start-up time.
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  dev: async () => (await import('./dev.js')).registerDevCommand,
  doctor: async () => (await import('./doctor.js')).registerDoctorCommand,
  call: async () => (await import('./call.js')).registerCallCommand,
  worker: async () => (await import('./worker.js')).registerWorkerCommand,
  usage: async () => (await import('./usage.js')).registerUsageCommand,
  emulator: async () => (await import('./emulator.js')).registerEmulatorCommand,
  webhooks: async () => (await import('./webhooks.js')).registerWebhooksCommand,
  'codec-server': async () => (await import('./codec-server.js')).registerCodecServerCommand,
  batch: async () => (await import('./batch/index.js')).registerBatchCommand,
  cache: async () => (await import('./cache.js')).registerCacheCommand,
  erase: async () => (await import('./erase.js')).registerEraseCommand,
  search: async () => (await import('./search.js')).registerSearchCommand,
  demo: async () => (await import('./demo.js')).registerDemoCommand,
  throttle: async () => (await import('./throttle.js')).registerThrottleCommand,
  mcp: async () => (await import('./mcp.js')).registerMcpCommand,
  'mcp-login': async () => (await import('./mcp-login.js')).registerMcpLoginCommand,
};

// No option of `pcds` itself takes a value: the first word that is not an option names the command.
const named = process.argv.slice(2).find((arg) => !arg.startsWith('-'));
const loaders =
  named !== undefined && Object.hasOwn(COMMANDS, named)
    ? [COMMANDS[named]]
    : Object.values(COMMANDS);
for (const register of await Promise.all(loaders.map((load) => load()))) register(program);

const unknown = unknownCommand(program, process.argv.slice(2));
if (unknown) {
  // Commander reads --help before it looks for the command: `pcds doctr --help` would show the
  // help of `pcds` and exit 0, as if the command existed.
  process.stderr.write(`error: unknown command '${unknown.word}'\n\n`);
  unknown.parent.outputHelp({ error: true });
  process.exit(2);
}

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.exitCode = reportError(err);
}
