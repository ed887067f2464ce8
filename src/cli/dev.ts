// `pcds dev`: the local stack (Temporal with its Web UI, the emulator, a worker) until Ctrl-C.
import type { Command } from 'commander';
import { action } from './output.js';
import { loadConfig, MAX_TIME_SCALE, paceNote } from '../config.js';
import { pcdsCommand } from './pcds-command.js';
import { installMetricsExporter } from '../metrics/exporter.js';
import { startDevStack } from './dev-stack.js';
import { checkPortsFree } from './ports.js';
import { portArg, timeScaleArg } from './args.js';

interface DevFlags {
  dataDir?: string;
  temporalPort: number;
  uiPort: number;
  emulatorPort: number;
  codecPort: number;
  webhookPort?: number;
  metricsPort?: number;
  timeScale: number;
  limits: boolean;
  worker: boolean;
}

/** The banner's line on the pace: the real service's, or how far from it this stack runs. */
export function paceLine(config: Parameters<typeof paceNote>[0]): string {
  const note = paceNote(config);
  if (!note) return "the real service's (its limits and latencies)";
  const minuteMs = 60_000 / config.PCDS_TIME_SCALE;
  const minute =
    config.PCDS_TIME_SCALE === 1
      ? ''
      : `a minute lasts ${minuteMs >= 1000 ? `${+(minuteMs / 1000).toFixed(1)} s` : `${Math.round(minuteMs)} ms`}; `;
  return `${note}: ${minute}rates, waits and ETAs here say nothing about production`;
}

export function registerDevCommand(program: Command): Command {
  return program
    .command('dev')
    .description('start Temporal (with Web UI), the emulator and a worker; Ctrl-C stops them')
    .option('--data-dir <dir>', 'where Temporal keeps its state (default: PCDS_DATA_DIR or .data)')
    .option('--temporal-port <port>', 'Temporal frontend (gRPC) port', portArg, 7233)
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
    .option(
      '--metrics-port <port>',
      "the worker's Prometheus port (default PCDS_METRICS_PORT; none)",
      portArg,
    )
    .option(
      '--time-scale <x>',
      `run the emulator, the throttle and every wait X times faster than the real service (1-${MAX_TIME_SCALE}; 60: a minute lasts a second). Not the real pace: the banner and ETAs say so`,
      timeScaleArg('--time-scale'),
      1,
    )
    .option('--no-limits', "no rate limits: the emulator's off and the workers' throttle off")
    .option(
      '--no-worker',
      'start no worker: run `pcds worker` processes beside the stack with the settings it prints',
    )
    .action(
      action(async (opts: DevFlags) => {
        // The worker's metrics, when asked for (before any Temporal connection). The stack uses
        // its own dev key, so the shell's keys are not read here either.
        const metricsConfig = loadConfig({
          ...process.env,
          PCDS_API_KEYS: undefined,
          PCDS_API_KEY: undefined,
          PCDS_API_SECRET: undefined,
          PCDS_TIME_SCALE: undefined,
          ...(opts.metricsPort !== undefined
            ? { PCDS_METRICS_PORT: String(opts.metricsPort) }
            : {}),
        });
        await checkPortsFree(
          { metrics: metricsConfig.PCDS_METRICS_PORT },
          metricsConfig.PCDS_METRICS_HOST,
        );
        await installMetricsExporter(metricsConfig);
        process.stderr.write(
          `starting Temporal, the emulator${opts.worker ? ' and a worker' : ' (no worker)'}...\n`,
        );
        const stack = await startDevStack({
          ...(opts.dataDir ? { dataDir: opts.dataDir } : {}),
          temporalPort: opts.temporalPort,
          uiPort: opts.uiPort,
          emulatorPort: opts.emulatorPort,
          codecPort: opts.codecPort,
          ...(opts.webhookPort !== undefined ? { webhookPort: opts.webhookPort } : {}),
          pace: { timeScale: opts.timeScale, limits: opts.limits },
          worker: opts.worker,
        });
        const exports = (env: Record<string, string>) =>
          Object.entries(env).map(([k, v]) => `export ${k}=${v}`);
        // `npx pcds` resolves only in the project's folder: the other shell gets a command that
        // runs from anywhere.
        const pcds = pcdsCommand();
        const workerLines = opts.worker
          ? ''
          : `\nNo worker runs in this stack. Start pcds worker beside it (as many as you like; stop and replace them\n` +
            `at will) in shells with the lines above and:\n${exports(stack.workerEnv).join('\n')}\nthen: ${pcds} worker\n`;
        process.stdout.write(
          `Temporal Web UI: ${stack.uiUrl ?? '(headless)'}\nEmulator:        ${stack.emulator.url}\n` +
            (stack.codecServer
              ? `Codec server:    ${stack.codecServer.url} (the Web UI decodes payloads through it)\n`
              : '') +
            `Pace:            ${paceLine(stack.config)}\n` +
            `Worker:          ${stack.worker ? `in this process, task queue ${stack.worker.taskQueue}` : 'none (--no-worker)'}\n` +
            `Payloads are encrypted with the key in ${stack.env.PCDS_ENCRYPTION_KEY_FILE ?? 'your PCDS_ENCRYPTION settings'}\n\n` +
            `In another shell:\n${exports(stack.env).join('\n')}\n${workerLines}\nthen e.g.: ${pcds} call person_enrichment --email someone@example.com\n` +
            `Ctrl-C stops everything (workflows are kept in ${stack.config.PCDS_DATA_DIR}/temporal.db).\n`,
        );
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        process.stderr.write('stopping...\n');
        await stack.stop();
      }),
    );
}
