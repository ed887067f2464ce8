// `pcds dev`: the local stack (Temporal with its Web UI, the emulator, a worker) until Ctrl-C.
import type { Command } from 'commander';
import { action } from './output.js';
import { loadConfig } from '../config.js';
import { installMetricsExporter } from '../metrics/exporter.js';
import { startDevStack } from './dev-stack.js';
import { portArg } from './args.js';

export function registerDevCommand(program: Command): Command {
  return program
    .command('dev')
    .description('start Temporal (with Web UI), the emulator and a worker; Ctrl-C stops them')
    .option('--data-dir <dir>', 'where Temporal keeps its state (default: PCDS_DATA_DIR or .data)')
    .option('--temporal-port <port>', 'Temporal frontend port', portArg, 7233)
    .option('--ui-port <port>', 'Temporal Web UI port', portArg, 8233)
    .option('--emulator-port <port>', 'emulator port', portArg, 8787)
    .option(
      '--codec-port <port>',
      'port of the codec server the Web UI decodes payloads with',
      portArg,
      8789,
    )
    .action(
      action(
        async (opts: {
          dataDir?: string;
          temporalPort: number;
          uiPort: number;
          emulatorPort: number;
          codecPort: number;
        }) => {
          // The worker's metrics, when PCDS_METRICS_PORT is set (before any Temporal connection).
          // The stack uses its own dev key, so the shell's keys are not read here either.
          installMetricsExporter(
            loadConfig({
              ...process.env,
              PCDS_API_KEYS: undefined,
              PCDS_API_KEY: undefined,
              PCDS_API_SECRET: undefined,
            }),
          );
          process.stderr.write('starting Temporal, the emulator and a worker...\n');
          const stack = await startDevStack({
            ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
            temporalPort: opts.temporalPort,
            uiPort: opts.uiPort,
            emulatorPort: opts.emulatorPort,
            codecPort: opts.codecPort,
          });
          const lines = Object.entries(stack.env).map(([k, v]) => `export ${k}=${v}`);
          process.stdout.write(
            `Temporal Web UI: ${stack.uiUrl ?? '(headless)'}\nEmulator:        ${stack.emulator.url}\n` +
              (stack.codecServer
                ? `Codec server:    ${stack.codecServer.url} (the Web UI decodes payloads through it)\n`
                : '') +
              `Payloads are encrypted with the key in ${stack.env.PCDS_ENCRYPTION_KEY_FILE ?? 'your PCDS_ENCRYPTION settings'}\n\n` +
              `In another shell:\n${lines.join('\n')}\n\nthen e.g.: pcds call person_enrichment --email someone@example.com\n` +
              `Ctrl-C stops everything (workflows are kept in ${stack.config.PCDS_DATA_DIR}/temporal.db).\n`,
          );
          await new Promise<void>((resolve) => {
            process.once('SIGINT', resolve);
            process.once('SIGTERM', resolve);
          });
          process.stderr.write('stopping...\n');
          await stack.stop();
        },
      ),
    );
}
