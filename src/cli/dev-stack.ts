// The local stack in one process: Temporal dev server (state in <PCDS_DATA_DIR>/temporal.db, Web
// UI on), the emulator with its development key, and a worker. `pcds dev` and the demo use it.
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { connectTemporalClient } from '../temporal/connection.js';
import { ensureDevEncryptionKey, ensureDevIdSecret } from '../codec/dev-key.js';
import { openStoreFromSettings } from '../store/index.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import {
  startEmulator,
  type EmulatorOptionsInput,
  type RunningEmulator,
} from '../emulator/index.js';
import { temporalClient } from '../temporal/data-converter.js';
import { startDevServer, type DevServer } from '../temporal/index.js';
import { startReceiverFromConfig } from '../webhooks/from-config.js';
import { startCodecServerFromConfig } from './codec-server.js';
import { createWorker, type PcdsWorker } from '../worker.js';
import { checkPortsFree } from './ports.js';

/** Leaving the real service's pace: only ever against the stack's own emulator. */
export interface DevPace {
  /** How many times faster than the real service (1: its pace). Default 1. */
  timeScale?: number;
  /** false: no rate limits in the emulator and no throttle in the workers. Default true. */
  limits?: boolean;
}

export interface DevStackOptions {
  /** Default: PCDS_DATA_DIR (.data). */
  dataDir?: string;
  temporalPort?: number;
  uiPort?: number;
  emulatorPort?: number;
  /** Port of the codec server the Web UI decodes payloads with; default 8789 (0: a free port). */
  codecPort?: number;
  /** Port of the webhook receiver; default PCDS_WEBHOOK_PORT (8788). */
  webhookPort?: number;
  emulator?: EmulatorOptionsInput;
  pace?: DevPace;
  /** false: no worker in the stack (run `pcds worker` processes beside it with `workerEnv`). */
  worker?: boolean;
  /** Base environment; default process.env. The stack's own addresses and dev key override it. */
  env?: NodeJS.ProcessEnv;
}

export interface DevStack {
  temporal: DevServer;
  emulator: RunningEmulator;
  /** The worker's configuration (emulator URL, dev key, Temporal address). */
  config: Config;
  /** Absent with `worker: false`. */
  worker: PcdsWorker | undefined;
  /** Lines a shell needs to use the stack: PCDS_BASE_URL, PCDS_API_KEY, ... */
  env: Record<string, string>;
  /** What a separate `pcds worker` needs on top of `env`: the task queue and the webhook settings. */
  workerEnv: Record<string, string>;
  uiUrl: string | undefined;
  /** The codec server the Web UI is pointed at (none with PCDS_ENCRYPTION=off). */
  codecServer: { url: string; token: string } | undefined;
  stop(): Promise<void>;
}

/**
 * Payloads are encrypted here as in production, with a key made once for this data folder (a key
 * given in the environment wins, so a shell can share its own). Workflow ids made from
 * idempotency keys are keyed HMACs: a secret made once, like the key, shared by the shell's
 * commands through the lines printed.
 */
function devSecretsEnv(baseEnv: NodeJS.ProcessEnv, dataDir: string) {
  const encryptionEnv: Record<string, string> =
    baseEnv.PCDS_ENCRYPTION_KEY ||
    baseEnv.PCDS_ENCRYPTION_KEY_FILE ||
    baseEnv.PCDS_ENCRYPTION === 'off'
      ? {}
      : { PCDS_ENCRYPTION_KEY_FILE: ensureDevEncryptionKey(dataDir) };
  const idSecretEnv: Record<string, string> =
    baseEnv.PCDS_ID_SECRET || baseEnv.PCDS_ID_SECRET_FILE
      ? {}
      : { PCDS_ID_SECRET_FILE: ensureDevIdSecret(dataDir) };
  return { encryptionEnv, idSecretEnv };
}

/**
 * The codec server the Web UI decodes through, on loopback; the browser reaches it with the
 * token in the endpoint's path (the dev UI has no user token to send). None with encryption off.
 */
async function startDevCodec(codecConfig: Config, port: number, uiPort: number) {
  const token = randomBytes(24).toString('base64url');
  if (codecConfig.PCDS_ENCRYPTION === 'off') return undefined;
  const server = await startCodecServerFromConfig(codecConfig, {
    port,
    host: '127.0.0.1',
    token,
    allowedOrigin: [`http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`],
  });
  return { server, token };
}

/** The receiver's settings: it listens on loopback; its secret lives only in this process. */
function devWebhookEnv(webhookPort: number | undefined) {
  return {
    PCDS_WEBHOOK_HOST: '127.0.0.1',
    PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
    PCDS_WEBHOOK_RECEIVER: 'in-worker',
    PCDS_WEBHOOK_SECRET: randomBytes(24).toString('base64url'),
    PCDS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1',
    ...(webhookPort !== undefined ? { PCDS_WEBHOOK_PORT: String(webhookPort) } : {}),
  };
}

/** The environment the stack's receiver and worker are configured from: the shell's, made local. */
function stackEnvOf(
  baseEnv: NodeJS.ProcessEnv,
  dataDir: string,
  timeScale: number,
  env: Record<string, string>,
  webhookEnv: Record<string, string>,
): NodeJS.ProcessEnv {
  return {
    ...baseEnv,
    PCDS_API_KEYS: undefined,
    // The stack's dev server is plain: a shell's settings for a secured Temporal stay out.
    PCDS_TEMPORAL_TLS: undefined,
    PCDS_TEMPORAL_TLS_CERT: undefined,
    PCDS_TEMPORAL_TLS_KEY: undefined,
    PCDS_TEMPORAL_TLS_CA: undefined,
    PCDS_TEMPORAL_TLS_SERVER_NAME: undefined,
    PCDS_TEMPORAL_API_KEY: undefined,
    // At another pace the throttle's windows follow PCDS_TIME_SCALE, not a shell's leftover.
    ...(timeScale !== 1 ? { PCDS_THROTTLE_TIME_SCALE: undefined } : {}),
    PCDS_DATA_DIR: dataDir,
    ...env,
    ...webhookEnv,
  };
}

/** The webhook receiver, on its own connection to the stack's dev server; its stops pushed. */
async function startStackReceiver(
  address: string,
  stackEnv: NodeJS.ProcessEnv,
  stops: (() => Promise<void>)[],
) {
  // The stack's own dev server: plain, on loopback, whatever the shell's PCDS_TEMPORAL_TLS_* say.
  const receiverConnection = await connectTemporalClient({ address });
  stops.push(() => receiverConnection.close());
  const receiverConfig = loadConfig(stackEnv);
  const receiver = await startReceiverFromConfig({
    config: receiverConfig,
    client: temporalClient(receiverConnection, receiverConfig),
  });
  stops.push(() => receiver.stop());
  return receiver;
}

/** The stack's worker, running until the stack stops. */
async function startStackWorker(
  config: Config,
  stops: (() => Promise<void>)[],
): Promise<PcdsWorker> {
  const started = await createWorker({ config });
  const running = started.run();
  stops.push(async () => {
    started.shutdown();
    await running;
  });
  return started;
}

/** Starts the stack, its parts in order; when one fails, those already started are stopped. */
export async function startDevStack(options: DevStackOptions = {}): Promise<DevStack> {
  const baseEnv = options.env ?? process.env;
  const dataDir = resolve(options.dataDir ?? baseEnv.PCDS_DATA_DIR ?? '.data');
  const timeScale = options.pace?.timeScale ?? 1;
  const limits = options.pace?.limits ?? true;
  // Set whatever the shell says: a banner's exports from an earlier run must not change the pace.
  const paceEnv = { PCDS_TIME_SCALE: String(timeScale), PCDS_THROTTLE: limits ? 'on' : 'off' };
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
  try {
    const { encryptionEnv, idSecretEnv } = devSecretsEnv(baseEnv, dataDir);
    const uiPort = options.uiPort ?? 8233;
    // The shell's own pace settings would be checked against its base URL, which the stack replaces.
    const codecConfig = loadConfig({ ...baseEnv, ...encryptionEnv, PCDS_TIME_SCALE: undefined });
    await checkPortsFree({
      temporal: options.temporalPort ?? 7233,
      ui: uiPort,
      emulator: options.emulatorPort ?? 8787,
      ...(codecConfig.PCDS_ENCRYPTION === 'off' ? {} : { codec: options.codecPort ?? 8789 }),
      webhook: options.webhookPort ?? codecConfig.PCDS_WEBHOOK_PORT,
    });
    const codec = await startDevCodec(codecConfig, options.codecPort ?? 8789, uiPort);
    if (codec) stops.push(() => codec.server.stop());
    const temporal = await startDevServer({
      dbFile: join(dataDir, 'temporal.db'),
      port: options.temporalPort ?? 7233,
      uiPort,
      logLevel: 'warn',
      ...(codec ? { uiCodecEndpoint: `${codec.server.url}/${codec.token}` } : {}),
    });
    stops.push(() => temporal.stop());
    const emulator = await startEmulator({
      port: options.emulatorPort ?? 8787,
      // Webhook mode works locally: the emulator delivers to the receiver on loopback.
      allowLoopbackCallbacks: true,
      timeScale,
      ...options.emulator,
      limits: {
        ...options.emulator?.limits,
        enabled: limits && options.emulator?.limits?.enabled !== false,
      },
    });
    stops.push(() => emulator.stop());
    const env: Record<string, string> = {
      ...encryptionEnv,
      ...idSecretEnv,
      PCDS_BASE_URL: emulator.url,
      PCDS_API_KEY: emulator.devKey.key,
      PCDS_API_SECRET: emulator.devKey.secret,
      PCDS_TEMPORAL_ADDRESS: temporal.address,
      PCDS_TEMPORAL_NAMESPACE: temporal.namespace,
      ...(temporal.uiUrl ? { PCDS_TEMPORAL_UI_URL: temporal.uiUrl } : {}),
      // Batch rows and results: the shell's store, or the embedded file in the data folder.
      PCDS_STORE_URL: baseEnv.PCDS_STORE_URL || `sqlite:${join(dataDir, 'store.sqlite')}`,
      ...paceEnv,
    };
    const webhookEnv = devWebhookEnv(options.webhookPort);
    const stackEnv = stackEnvOf(baseEnv, dataDir, timeScale, env, webhookEnv);
    const receiver = await startStackReceiver(temporal.address, stackEnv, stops);
    // A key pool from the shell would point at the real service: the stack uses the dev key.
    const config = loadConfig({ ...stackEnv, PCDS_WEBHOOK_PUBLIC_URL: receiver.url });
    // The store is opened (and its migrations run) now: a bad PCDS_STORE_URL stops the stack here.
    await (await openStoreFromSettings(config)).close();
    // Another pace or no limits only make sense against this emulator, never a real service.
    if (
      (timeScale !== 1 || !limits) &&
      new URL(config.PCDS_BASE_URL).origin !== new URL(emulator.url).origin
    )
      throw new ConfigError(
        '--time-scale and --no-limits are only for the bundled emulator: the worker would call another service',
      );
    const workerEnv: Record<string, string> = {
      PCDS_TASK_QUEUE: config.PCDS_TASK_QUEUE,
      PCDS_WEBHOOK_PUBLIC_URL: receiver.url,
      PCDS_WEBHOOK_SECRET: webhookEnv.PCDS_WEBHOOK_SECRET,
      PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
      // The stack's receiver takes the deliveries: workers beside it run none of their own.
      PCDS_WEBHOOK_RECEIVER: 'standalone',
    };
    const worker = options.worker !== false ? await startStackWorker(config, stops) : undefined;
    return {
      temporal,
      emulator,
      config,
      worker,
      env,
      workerEnv,
      uiUrl: temporal.uiUrl,
      codecServer: codec ? { url: codec.server.url, token: codec.token } : undefined,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
