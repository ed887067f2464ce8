// The local stack in one process: Temporal dev server (state in <PCDS_DATA_DIR>/temporal.db, Web
// UI on), the emulator with its development key, and a worker. `pcds dev` and the demo use it.
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureDevEncryptionKey, ensureDevIdSecret } from '../codec/dev-key.js';
import { loadConfig, type Config } from '../config.js';
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
  /** Base environment; default process.env. The stack's own addresses and dev key override it. */
  env?: NodeJS.ProcessEnv;
}

export interface DevStack {
  temporal: DevServer;
  emulator: RunningEmulator;
  /** The worker's configuration (emulator URL, dev key, Temporal address). */
  config: Config;
  worker: PcdsWorker;
  /** Lines a shell needs to use the stack: PCDS_BASE_URL, PCDS_API_KEY, ... */
  env: Record<string, string>;
  uiUrl: string | undefined;
  /** The codec server the Web UI is pointed at (none with PCDS_ENCRYPTION=off). */
  codecServer: { url: string; token: string } | undefined;
  stop(): Promise<void>;
}

export async function startDevStack(options: DevStackOptions = {}): Promise<DevStack> {
  const baseEnv = options.env ?? process.env;
  const dataDir = resolve(options.dataDir ?? baseEnv.PCDS_DATA_DIR ?? '.data');
  const stops: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  };
  try {
    // Payloads are encrypted here as in production, with a key made once for this data folder
    // (a key given in the environment wins, so a shell can share its own).
    const encryptionEnv: Record<string, string> =
      baseEnv.PCDS_ENCRYPTION_KEY ||
      baseEnv.PCDS_ENCRYPTION_KEY_FILE ||
      baseEnv.PCDS_ENCRYPTION === 'off'
        ? {}
        : { PCDS_ENCRYPTION_KEY_FILE: ensureDevEncryptionKey(dataDir) };
    // Workflow ids made from idempotency keys are keyed HMACs: a secret made once, like the key,
    // shared by the shell's commands through the lines printed.
    const idSecretEnv: Record<string, string> =
      baseEnv.PCDS_ID_SECRET || baseEnv.PCDS_ID_SECRET_FILE
        ? {}
        : { PCDS_ID_SECRET_FILE: ensureDevIdSecret(dataDir) };
    const uiPort = options.uiPort ?? 8233;
    // The Web UI decodes through a codec server on loopback; the browser reaches it with the
    // token in the endpoint's path (the dev UI has no user token to send).
    const codecConfig = loadConfig({ ...baseEnv, ...encryptionEnv });
    const codecToken = randomBytes(24).toString('base64url');
    const codec =
      codecConfig.PCDS_ENCRYPTION === 'off'
        ? undefined
        : await startCodecServerFromConfig(codecConfig, {
            port: options.codecPort ?? 8789,
            host: '127.0.0.1',
            token: codecToken,
            allowedOrigin: [`http://127.0.0.1:${uiPort}`, `http://localhost:${uiPort}`],
          });
    if (codec) stops.push(() => codec.stop());
    const temporal = await startDevServer({
      dbFile: join(dataDir, 'temporal.db'),
      port: options.temporalPort ?? 7233,
      uiPort,
      logLevel: 'warn',
      ...(codec ? { uiCodecEndpoint: `${codec.url}/${codecToken}` } : {}),
    });
    stops.push(() => temporal.stop());
    const emulator = await startEmulator({
      port: options.emulatorPort ?? 8787,
      // Webhook mode works locally: the emulator delivers to the receiver on loopback.
      allowLoopbackCallbacks: true,
      ...options.emulator,
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
    };
    // The receiver listens on loopback; its secret lives only in this process.
    const webhookEnv = {
      PCDS_WEBHOOK_HOST: '127.0.0.1',
      PCDS_WEBHOOK_ALLOW_LOOPBACK: 'true',
      PCDS_WEBHOOK_RECEIVER: 'in-worker',
      PCDS_WEBHOOK_SECRET: randomBytes(24).toString('base64url'),
      PCDS_WEBHOOK_PUBLIC_URL: 'http://127.0.0.1',
      ...(options.webhookPort !== undefined
        ? { PCDS_WEBHOOK_PORT: String(options.webhookPort) }
        : {}),
    };
    const stackEnv = {
      ...baseEnv,
      PCDS_API_KEYS: undefined,
      PCDS_DATA_DIR: dataDir,
      ...env,
      ...webhookEnv,
    };
    const receiverConnection = await Connection.connect({ address: temporal.address });
    stops.push(() => receiverConnection.close());
    const receiverConfig = loadConfig(stackEnv);
    const receiver = await startReceiverFromConfig({
      config: receiverConfig,
      client: temporalClient(receiverConnection, receiverConfig),
    });
    stops.push(() => receiver.stop());
    // A key pool from the shell would point at the real service: the stack uses the dev key.
    const config = loadConfig({ ...stackEnv, PCDS_WEBHOOK_PUBLIC_URL: receiver.url });
    const worker = await createWorker({ config });
    const running = worker.run();
    stops.push(async () => {
      worker.shutdown();
      await running;
    });
    return {
      temporal,
      emulator,
      config,
      worker,
      env,
      uiUrl: temporal.uiUrl,
      codecServer: codec ? { url: codec.url, token: codecToken } : undefined,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
