// Shared setup of the batch benchmarks: a fresh dev server, the emulator with latency and limits
// off, and a production worker (throttle off) in this process.
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
  nativeConnection: NativeConnection;
  worker: PcdsWorker;
  store: LazyBatchStore;
  stop(): Promise<void>;
}

export async function startBenchEnv(): Promise<BenchEnv> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const server = await startDevServer({ headless: true, logLevel: 'error' });
  const emulator = await startEmulator({
    port: 0,
    latency: { queuedMs: 0, processingMs: 0 },
    limits: { enabled: false },
    devKey: { key: 'pcds_bench_key', secret: 'pcds_bench_secret', credits: null },
  });
  const config = loadConfig({
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEY: emulator.devKey.key,
    PCDS_API_SECRET: emulator.devKey.secret,
    PCDS_THROTTLE: 'off',
    PCDS_TEMPORAL_ADDRESS: server.address,
    PCDS_TASK_QUEUE: 'bench-batch',
    PCDS_HTTP_CONNECTIONS: '64',
    // Encrypted like production: the codec's cost is part of the figures.
    PCDS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
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
