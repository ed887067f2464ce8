// What the throttle's integration tests share: the emulator with small, time-scaled limits, the
// matching worker configuration, and counters read from the emulator.
import { createPcdsClient, type PcdsClient, type PcdsClientOptions } from '../../src/client.js';
import { loadConfig, type Config } from '../../src/config.js';
import { sampleRows, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import type { Client } from '@temporalio/client';
import { createActivities } from '../../src/activities/index.js';
import { createServiceClients } from '../../src/http/service-clients.js';
import { permitGateFromConfig } from '../../src/worker/permit-gate.js';
import {
  connectClient,
  testEncryptionEnv,
  testNamespace,
  withWorker,
} from '../harness/temporal.js';

/** 20 times faster: a "minute" of 3 s and an "hour" of 180 s. */
export const TIME_SCALE = 20;
export const MINUTE_MS = 60_000 / TIME_SCALE;

export async function startLimitedEmulator(
  limits: { perMinute: number; perHour: number },
  timeScale = TIME_SCALE,
): Promise<RunningEmulator> {
  return startEmulator({
    port: 0,
    timeScale,
    // Jobs of about 1 s (scaled): a few polls each.
    latency: { queuedMs: 2_000, processingMs: 18_000 },
    limits: { enabled: true, ...limits },
  });
}

/**
 * Worker settings (as environment variables) for the emulator's dev key with the shared throttle
 * on. The key gets a label of its own (`keyId`), so each test has its own throttle workflow on
 * the shared dev server.
 */
export function throttledEnv(
  emulator: RunningEmulator,
  limits: { perMinute: number; perHour: number },
  keyId: string,
  timeScale = TIME_SCALE,
): Record<string, string> {
  return {
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEYS: JSON.stringify([{ ...emulator.devKey, id: keyId }]),
    PCDS_HTTP_TIMEOUT_MS: '5000',
    PCDS_THROTTLE: 'on',
    PCDS_THROTTLE_TIME_SCALE: String(timeScale),
    PCDS_RATE_PER_MINUTE: String(limits.perMinute),
    PCDS_RATE_PER_HOUR: String(limits.perHour),
    ...testEncryptionEnv(),
  };
}

export function throttledConfig(
  emulator: RunningEmulator,
  limits: { perMinute: number; perHour: number },
  keyId: string,
  timeScale = TIME_SCALE,
): Config {
  return loadConfig(throttledEnv(emulator, limits, keyId, timeScale));
}

/** Every request the emulator counted for the key, 429s included. */
export function requestsSeen(emulator: RunningEmulator, keyId: string): number {
  return Object.values(emulator.stats(keyId).requests).reduce((a, b) => a + b, 0);
}

export async function pcdsClient(
  taskQueue: string,
  defaults: PcdsClientOptions['defaults'] = {
    pollIntervalMs: 400,
    maxWaitMs: 120_000,
  },
): Promise<{ client: PcdsClient; close(): Promise<void> }> {
  const { connection } = await connectClient();
  const client = await createPcdsClient({
    connection,
    taskQueue,
    namespace: testNamespace(),
    // These tests count what is sent: the calls skip the result cache.
    defaults: { cache: false, ...defaults },
  });
  return {
    client,
    async close() {
      await client.close();
      await connection.close();
    },
  };
}

export const emails = (n: number): string[] => sampleRows({ rows: n }).map((r) => r.email);

/**
 * Runs `fn` with a worker on `taskQueue` whose activities take their permits from the shared
 * throttle of `config`'s keys, as a production worker does; `fn` gets a Temporal client.
 */
export async function withThrottledWorker<T>(
  config: Config,
  taskQueue: string,
  fn: (temporal: Client) => Promise<T>,
): Promise<T> {
  const clients = createServiceClients(config);
  const { client: temporal, connection } = await connectClient();
  try {
    const permits = permitGateFromConfig(config, temporal.connection, taskQueue);
    const activities = createActivities({ config, clients, permits });
    return await withWorker({ taskQueue, activities }, () => fn(temporal));
  } finally {
    await clients.close();
    await connection.close();
  }
}
