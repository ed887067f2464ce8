// `pcds emulator`: run the local emulator of the data service, and `pcds emulator sample`: write
// a CSV of enrichment inputs drawn from its seeded dataset.
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  loadEmulatorOptionsFile,
  parseEmulatorOptions,
  startEmulator,
  writeSampleCsv,
  type EmulatorOptionsInput,
  type RunningEmulator,
} from '../emulator/index.js';
import { MAX_TIME_SCALE, timeScaleEnv } from '../contract/time-scale.js';
import { intArg, numArg, timeScaleArg } from './args.js';

export interface EmulatorFlags {
  port?: number;
  host?: string;
  config?: string;
  timeScale?: number;
  limits?: boolean;
  seed?: number;
  queuedMs?: number;
  processingMs?: number;
  allowLoopbackCallbacks?: boolean;
  adminToken?: string;
}

/** Options from a --config file, overridden by the flags given on the command line. */
export async function emulatorOptionsFromFlags(
  flags: EmulatorFlags,
): Promise<EmulatorOptionsInput> {
  const base: Record<string, any> = flags.config
    ? { ...(await loadEmulatorOptionsFile(flags.config)) }
    : {};
  if (flags.port !== undefined) base.port = flags.port;
  if (flags.host !== undefined) base.host = flags.host;
  if (flags.seed !== undefined) base.seed = flags.seed;
  if (flags.timeScale !== undefined) base.timeScale = flags.timeScale;
  if (flags.limits === false) base.limits = { ...(base.limits ?? {}), enabled: false };
  if (flags.queuedMs !== undefined || flags.processingMs !== undefined) {
    base.latency = {
      ...(base.latency ?? {}),
      ...(flags.queuedMs !== undefined ? { queuedMs: flags.queuedMs } : {}),
      ...(flags.processingMs !== undefined ? { processingMs: flags.processingMs } : {}),
    };
  }
  if (flags.allowLoopbackCallbacks) base.allowLoopbackCallbacks = true;
  if (flags.adminToken !== undefined) base.adminToken = flags.adminToken;
  // Validate now so a bad file or flag is reported before anything starts.
  parseEmulatorOptions(base);
  return base as EmulatorOptionsInput;
}

/** What a worker, the CLI or a service needs to use this emulator, at its pace and limits. */
export function emulatorEnv(em: RunningEmulator): Record<string, string> {
  return {
    PCDS_BASE_URL: em.url,
    PCDS_API_KEY: em.devKey.key,
    PCDS_API_SECRET: em.devKey.secret,
    ...timeScaleEnv(em.options.timeScale),
    // Without limits, no throttle stands before the requests; with them, it keeps to them.
    ...(em.options.limits.enabled
      ? em.options.limits.perMinute !== 100 || em.options.limits.perHour !== 1000
        ? {
            PCDS_RATE_PER_MINUTE: String(em.options.limits.perMinute),
            PCDS_RATE_PER_HOUR: String(em.options.limits.perHour),
          }
        : {}
      : { PCDS_THROTTLE: 'off' }),
  };
}

/** The lines printed at start: where it listens, the development credentials, what to export. */
export function startBanner(em: RunningEmulator): string {
  const { timeScale, limits } = em.options;
  const pace =
    timeScale === 1 ? "the real service's" : `${timeScale} times faster than the real service`;
  return [
    `pcds emulator listening on ${em.url}`,
    `  dev key id:   ${em.devKey.id}`,
    `  API key:      ${em.devKey.key}`,
    `  API secret:   ${em.devKey.secret}`,
    `  admin token:  ${em.adminToken}  (header X-Admin-Token for /v1/api-keys and /admin)`,
    `  pace:         ${pace}; limits ${limits.enabled ? `${limits.perMinute}/min, ${limits.perHour}/h` : 'off'}`,
    `  OpenAPI:      ${em.url}/openapi.json`,
    `Workers, the CLI and services that use it need:`,
    `  export ${Object.entries(emulatorEnv(em))
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  ].join('\n');
}

export function registerEmulatorCommand(program: Command): Command {
  const cmd = program
    .command('emulator')
    .description(
      'run a local emulator of the Person and Company Data Service (no internet, no credits)',
    )
    .option('-p, --port <n>', 'port to listen on (0: any free port)', intArg('--port', 0, 65535))
    .option('--host <address>', 'address to listen on (default 127.0.0.1)')
    .option('-c, --config <file>', 'JSON file of emulator options (flags override it)')
    .option(
      '--time-scale <x>',
      `run latencies and rate-limit windows X times faster than the real service (1-${MAX_TIME_SCALE}; 60: a minute lasts a second); workers need the same PCDS_TIME_SCALE, which the banner prints`,
      timeScaleArg('--time-scale'),
    )
    .option('--no-limits', 'turn the per-key rate limits off')
    .option('--seed <n>', 'seed of the synthetic dataset', intArg('--seed', 0, 2 ** 31 - 1))
    .option(
      '--queued-ms <n>',
      'milliseconds a job stays queued',
      intArg('--queued-ms', 0, 3_600_000),
    )
    .option(
      '--processing-ms <n>',
      'milliseconds a job stays processing',
      intArg('--processing-ms', 0, 3_600_000),
    )
    .option(
      '--allow-loopback-callbacks',
      'development switch: accept callback_url on localhost / 127.0.0.1',
    )
    .addOption(
      new Option(
        '--admin-token <token>',
        'admin token (default: a random one each start, printed here)',
      ).env('PCDS_EMULATOR_ADMIN_TOKEN'),
    )
    .action(async (flags: EmulatorFlags) => {
      const em = await startEmulator(await emulatorOptionsFromFlags(flags));
      process.stdout.write(startBanner(em) + '\n');
      const stop = async () => {
        await em.stop();
        process.exit(0);
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
    });

  cmd
    .command('sample')
    .description('Write a CSV of enrichment inputs drawn from the seeded dataset')
    .requiredOption('--rows <n>', 'number of rows', intArg('--rows', 1, 10_000_000))
    .requiredOption('-o, --output <file>', 'CSV file to write')
    .option(
      '--unknown-share <x>',
      'share of identities not in the dataset (empty, free results)',
      numArg('--unknown-share', 0, 1),
      0,
    )
    .option(
      '--bad-share <x>',
      'share of malformed rows (bad email, no identity)',
      numArg('--bad-share', 0, 1),
      0,
    )
    .option('--with-name', 'add a name column')
    .option('--with-phone', 'add a phone column')
    .option(
      '--seed <n>',
      'seed of the dataset (match the emulator)',
      intArg('--seed', 0, 2 ** 31 - 1),
      42,
    )
    .action(
      async (o: {
        rows: number;
        output: string;
        unknownShare: number;
        badShare: number;
        withName?: boolean;
        withPhone?: boolean;
        seed: number;
      }) => {
        if (o.unknownShare + o.badShare > 1)
          throw new InvalidArgumentError('--unknown-share plus --bad-share must be at most 1');
        await writeSampleCsv(o.output, {
          rows: o.rows,
          seed: o.seed,
          unknownShare: o.unknownShare,
          badShare: o.badShare,
          withName: o.withName === true,
          withPhone: o.withPhone === true,
        });
        process.stdout.write(`wrote ${o.rows} rows to ${o.output}\n`);
      },
    );
  return cmd;
}
