// Shared setup of the batch benchmarks: a fresh dev server, the emulator with limits off (and
// latency off, or its own scaled by a time scale), and a production worker (throttle off) here.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Connection, type Client } from '@temporalio/client';
import { randomBytes } from 'node:crypto';
import { temporalClient } from '../src/temporal/data-converter.js';
import { loadConfig, type Config } from '../src/config.js';
import { startEmulator, type RunningEmulator } from '../src/emulator/index.js';
import { startDevServer, type DevServer } from '../src/temporal/index.js';
import { createWorker, type PcdsWorker } from '../src/worker.js';
import { lazyBatchStore, openStoreFromSettings, type LazyBatchStore } from '../src/store/index.js';

/** A fresh embedded store for one bench run, shared by its worker and its launches. */
export function benchStore(config: Config): LazyBatchStore {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-bench-store-'));
  return lazyBatchStore(() =>
    openStoreFromSettings({ ...config, PCDS_STORE_URL: `sqlite:${join(dir, 'store.sqlite')}` }),
  );
}

export interface BenchEnv {
  server: DevServer;
  emulator: RunningEmulator;
  config: Config;
  client: Client;
  /** The connection `client` uses, for clients of other kinds (the typed client). */
  connection: Connection;
  nativeConnection: NativeConnection;
  worker: PcdsWorker;
  store: LazyBatchStore;
  stop(): Promise<void>;
}

export interface BenchEnvOptions {
  /**
   * Every duration scaled by this factor: the emulator's job latency (its default, about 1.5 s)
   * and windows, the poll interval, the max wait and the throttle's windows. Absent: jobs finish
   * at once and the worker keeps its defaults.
   */
  timeScale?: number;
  /** People in the emulator's dataset (5,000 by default): a large input of distinct people. */
  people?: number;
  /** How long the emulator keeps a finished job (a short one keeps its own memory flat). */
  jobRetentionMs?: number;
  /** The result cache off in the worker (PCDS_CACHE=off). */
  noCache?: boolean;
}

/** The poll interval and max wait of a bench at a time scale (so many times faster than the service). */
export const scaledWaits = (timeScale: number) => ({
  pollIntervalMs: Math.max(1, Math.round(1_000 / timeScale)),
  maxWaitMs: Math.round((30 * 60_000) / timeScale),
});

export async function startBenchEnv(opts: BenchEnvOptions = {}): Promise<BenchEnv> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await startDevServer({ headless: true, logLevel: 'error' });
  const scale = opts.timeScale;
  const emulator = await startEmulator({
    port: 0,
    ...(scale === undefined ? { latency: { queuedMs: 0, processingMs: 0 } } : { timeScale: scale }),
    ...(opts.people ? { dataset: { people: opts.people, companies: 600 } } : {}),
    limits: { enabled: false },
    ...(opts.jobRetentionMs !== undefined ? { jobRetentionMs: opts.jobRetentionMs } : {}),
    devKey: { key: 'pcds_bench_key', secret: 'pcds_bench_secret', credits: null },
  });
  const waits = scale === undefined ? undefined : scaledWaits(scale);
  const config = loadConfig({
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEY: emulator.devKey.key,
    PCDS_API_SECRET: emulator.devKey.secret,
    PCDS_THROTTLE: 'off',
    ...(waits
      ? {
          PCDS_THROTTLE_TIME_SCALE: String(scale),
          PCDS_POLL_INTERVAL_MS: String(waits.pollIntervalMs),
          PCDS_MAX_WAIT_MS: String(waits.maxWaitMs),
        }
      : {}),
    PCDS_TEMPORAL_ADDRESS: server.address,
    PCDS_TASK_QUEUE: 'bench-batch',
    PCDS_HTTP_CONNECTIONS: '64',
    // Encrypted like production: the codec's cost is part of the figures.
    PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    // The store keys its lookups with it, and is not opened without it.
    PCDS_ID_SECRET: randomBytes(32).toString('hex'),
    ...(opts.noCache ? { PCDS_CACHE: 'off' } : {}),
    // The worker's heap bound as set where the bench runs (0: V8's own, for a baseline).
    ...(process.env.PCDS_WORKER_HEAP_GROWTH !== undefined
      ? { PCDS_WORKER_HEAP_GROWTH: process.env.PCDS_WORKER_HEAP_GROWTH }
      : {}),
  });
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  const store = benchStore(config);
  const worker = await createWorker({
    config,
    store,
    connection: nativeConnection,
    workerOptions: {
      maxConcurrentWorkflowTaskExecutions: 100,
      maxConcurrentActivityTaskExecutions: 200,
    },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: server.address });
  const client = temporalClient(connection, config);
  return {
    server,
    emulator,
    config,
    client,
    connection,
    nativeConnection,
    worker,
    store,
    async stop() {
      worker.shutdown();
      await running;
      await store.close();
      await connection.close();
      await nativeConnection.close();
      await emulator.stop();
      await server.stop();
    },
  };
}
