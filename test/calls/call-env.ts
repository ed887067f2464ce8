// The parts a call test needs: the emulator (fast time scale), an optional fault proxy in front
// of it, worker configuration with a pool of keys that fail in known ways, and a typed client.
import { createActivities } from '../../src/activities/index.js';
import { expect } from 'vitest';
import {
  createPcdsClient,
  PcdsCallError,
  type CallCacheOption,
  type PcdsClient,
} from '../../src/client.js';
import { loadConfig, type Config } from '../../src/config.js';
import {
  startEmulator,
  type EmulatorOptionsInput,
  type RunningEmulator,
} from '../../src/emulator/index.js';
import { createServiceClients, type ServiceClients } from '../../src/http/service-clients.js';
import { unthrottled, type PermitGate } from '../../src/throttle/permits.js';
import { connectClient, testEncryptionEnv, withWorker } from '../harness/temporal.js';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';

/** Keys of the test pool: `dev` works; the others fail with one error class each. */
export const TEST_KEYS = {
  wrongSecret: { id: 'wrong-secret', key: 'pcds_test_wrong_secret', secret: 'not-the-secret' },
  searchOnly: {
    id: 'search-only',
    key: 'pcds_test_search_only',
    secret: 'pcds_test_search_only_secret',
  },
  broke: { id: 'broke', key: 'pcds_test_broke', secret: 'pcds_test_broke_secret' },
};

export interface CallEnv {
  emulator: RunningEmulator;
  proxy: FaultProxy;
  config: Config;
  clients: ServiceClients;
  stop(): Promise<void>;
}

export async function startCallEnv(emulatorOptions: EmulatorOptionsInput = {}): Promise<CallEnv> {
  const emulator = await startEmulator({
    port: 0,
    timeScale: 20,
    limits: { enabled: false },
    keys: [
      // Registered with another secret than the one the worker sends: 401.
      { id: TEST_KEYS.wrongSecret.id, key: TEST_KEYS.wrongSecret.key, secret: 'the-real-secret' },
      { ...TEST_KEYS.searchOnly, products: ['search'] },
      { ...TEST_KEYS.broke, credits: 0 },
    ],
    ...emulatorOptions,
  });
  const proxy = await startFaultProxy(emulator.url);
  const config = envConfig(emulator, proxy.url);
  const clients = createServiceClients(config);
  return {
    emulator,
    proxy,
    config,
    clients,
    async stop() {
      await clients.close();
      await proxy.stop();
      await emulator.stop();
    },
  };
}

/** Worker configuration pointing at `baseUrl` with the emulator's dev key and the test keys. */
export function envConfig(
  emulator: RunningEmulator,
  baseUrl: string,
  extra: Record<string, string> = {},
): Config {
  return loadConfig({
    PCDS_BASE_URL: baseUrl,
    PCDS_API_KEYS: JSON.stringify([emulator.devKey, ...Object.values(TEST_KEYS)]),
    PCDS_HTTP_TIMEOUT_MS: '3000',
    PCDS_THROTTLE: 'off',
    ...testEncryptionEnv(),
    ...extra,
  });
}

/**
 * Runs `fn` with a worker on a fresh task queue and a PcdsClient on it. Its calls skip the result
 * cache unless `cache` says otherwise: these tests count what is sent.
 */
export async function withCallWorker<T>(
  env: CallEnv,
  fn: (client: PcdsClient, taskQueue: string) => Promise<T>,
  permits: PermitGate = unthrottled,
  cache: CallCacheOption = false,
): Promise<T> {
  const activities = createActivities({
    config: env.config,
    clients: env.clients,
    permits,
  });
  return withWorker({ activities }, async ({ taskQueue, namespace, address }) => {
    const { connection } = await connectClient({ address, namespace });
    const client = await createPcdsClient({
      connection,
      namespace,
      taskQueue,
      defaults: { pollIntervalMs: 100, maxWaitMs: 30_000, cache },
    });
    try {
      return await fn(client, taskQueue);
    } finally {
      await client.close();
      await connection.close();
    }
  });
}

/** The history as text, with every payload's bytes decoded (they hold the JSON inputs and results). */
export function historyText(history: unknown): string {
  // Protobuf messages turn bytes into base64 strings in their toJSON: decode every `data` field.
  return JSON.stringify(history, (key, v: unknown) =>
    key === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v,
  );
}

/** The PcdsCallError a call ends with (the test fails if it succeeds or fails otherwise). */
export async function callFailureOf(p: Promise<unknown>): Promise<PcdsCallError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PcdsCallError);
  return err as PcdsCallError;
}
