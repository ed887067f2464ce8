// Starts a worker: the project's workflows and activities on one task queue, with the service
// clients (and their secrets) built here from configuration and nowhere else.
// Run directly (`node --import tsx src/worker.ts`, or `pcds worker`) it registers the search
// attributes, polls until SIGINT/SIGTERM and shuts down cleanly.
import { fileURLToPath } from 'node:url';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from './activities/index.js';
import {
  lazyBatchStore,
  openStoreFromSettings,
  startCacheSweep,
  storeSealerFromSettings,
  type LazyBatchStore,
} from './store/index.js';
import { loadConfig, type Config } from './config.js';
import { createServiceClients } from './http/service-clients.js';
import type { PermitGate } from './throttle/permits.js';
import { startCreditSampler } from './metrics/credits.js';
import { installMetricsExporter } from './metrics/exporter.js';
import { metricsRecorded, recordWebhookDelivery } from './metrics/instruments.js';
import { meteredPermitGate, meteredServiceClient } from './metrics/metered.js';
import { permitGateFromConfig } from './worker/permit-gate.js';
import { newWorkerIdentity, startSelfReports } from './worker/self-report.js';
import { boundHeapGrowth } from './worker/heap.js';
import { SHARED_WORKFLOW_MODULES, WORKFLOWS_PATH, workflowBundleFile } from './worker/bundle.js';
import {
  connectTemporalNative,
  temporalConnectionOptions,
  type TemporalTlsOptions,
} from './temporal/connection.js';
import { dataConverterFromSettings, temporalClient } from './temporal/data-converter.js';
import { registerSearchAttributes } from './temporal/search-attributes.js';
import { callbackUrlsFromConfig } from './webhooks/callback-urls.js';
import { startReceiverFromConfig } from './webhooks/from-config.js';
import { webhooksConfigured } from './webhooks/settings.js';

export { loadConfig, ConfigError, type Config } from './config.js';
export { installMetricsExporter } from './metrics/exporter.js';
/** The workflows module, and the modules its workflows share (see worker/bundle.ts). */
export { SHARED_WORKFLOW_MODULES, WORKFLOWS_PATH } from './worker/bundle.js';

export interface CreateWorkerOptions {
  config: Config;
  /**
   * Default: a connection to config.PCDS_TEMPORAL_ADDRESS with its PCDS_TEMPORAL_TLS_* and
   * PCDS_TEMPORAL_API_KEY settings (or `tls` and `apiKey` below), closed with the worker.
   */
  connection?: NativeConnection;
  /** Overrides the configuration's TLS settings (see createPcdsClient's `tls`). */
  tls?: boolean | TemporalTlsOptions;
  /** Overrides PCDS_TEMPORAL_API_KEY. */
  apiKey?: string;
  /** Default: config.PCDS_TASK_QUEUE. */
  taskQueue?: string;
  /** Default: the shared throttle (worker/permit-gate.ts), or none when PCDS_THROTTLE=off. */
  permits?: PermitGate;
  /** The webhook receiver's URL for a workflow. Default: from PCDS_WEBHOOK_* when set; else webhook mode is refused. */
  callbackUrlFor?: (workflowId: string) => string;
  /** Where stored batches and the result cache keep their data. Default: PCDS_STORE_URL, opened on first use. */
  store?: LazyBatchStore;
  /** When run() first sweeps expired cache entries (then hourly). Default CACHE_SWEEP_FIRST_MS. */
  cacheSweepFirstAfterMs?: number;
  /** Anything else Worker.create accepts (a prebuilt workflowBundle, concurrency limits, ...). */
  workerOptions?: Partial<WorkerOptions>;
}

export interface PcdsWorker {
  worker: Worker;
  taskQueue: string;
  /** Runs until shutdown() (or a signal handler calls it), then closes the HTTP pool and owned connection. */
  run(): Promise<void>;
  shutdown(): void;
}

/** The workflows: a bundle given, else PCDS_WORKFLOW_BUNDLE's file, else bundled at start. */
function workflowCode(
  config: Config,
  dataConverter: DataConverter,
  workerOptions: Partial<WorkerOptions> | undefined,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'bundlerOptions'> {
  if (workerOptions?.workflowBundle || workerOptions?.workflowsPath) return {};
  return config.PCDS_WORKFLOW_BUNDLE
    ? { workflowBundle: workflowBundleFile(config.PCDS_WORKFLOW_BUNDLE, dataConverter) }
    : {
        workflowsPath: WORKFLOWS_PATH,
        bundlerOptions: { preloadModules: [...SHARED_WORKFLOW_MODULES] },
      };
}

export async function createWorker(opts: CreateWorkerOptions): Promise<PcdsWorker> {
  const { config } = opts;
  // Before the workflow threads start, so their heaps follow it too.
  boundHeapGrowth(config.PCDS_WORKER_HEAP_GROWTH);
  const taskQueue = opts.taskQueue ?? config.PCDS_TASK_QUEUE;
  // Refused at start without a key (unless PCDS_ENCRYPTION=off): person data never goes out in clear.
  const dataConverter = dataConverterFromSettings(config);
  // Checked at start too: a bundle from another release is refused before anything connects.
  const code = workflowCode(config, dataConverter, opts.workerOptions);
  // Refused at start without the id secret (the store's lookups are keyed HMACs, never plain
  // hashes), though the store itself opens on first use.
  if (!opts.store) storeSealerFromSettings(config);
  // Checked at start: a public URL the service would refuse stops the worker with the reason.
  const urlFor = opts.callbackUrlFor ?? callbackUrlsFromConfig(config);
  const ownsConnection = !opts.connection;
  const connection =
    opts.connection ??
    (await connectTemporalNative({
      ...temporalConnectionOptions(config),
      ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
      ...(opts.apiKey !== undefined ? { apiKey: opts.apiKey } : {}),
    }));
  const clients = createServiceClients(config, { wrap: meteredServiceClient });
  const permits = meteredPermitGate(
    opts.permits ?? permitGateFromConfig(config, connection, taskQueue),
    Object.keys(config.scheduling.tenants),
  );
  const store = opts.store ?? lazyBatchStore(() => openStoreFromSettings(config));
  // Told to the activities, which stop reporting to workflows that no worker may be left to run.
  const shuttingDown = new AbortController();
  const activities = createActivities({
    config,
    clients,
    permits,
    store,
    workerShutdown: shuttingDown.signal,
    ...(urlFor ? { callbackUrlFor: urlFor } : {}),
  });
  // Known here: the worker reports itself into its store under the identity it polls with.
  const identity = opts.workerOptions?.identity ?? newWorkerIdentity();
  let worker: Worker;
  try {
    worker = await Worker.create({
      connection,
      namespace: config.PCDS_TEMPORAL_NAMESPACE,
      taskQueue,
      identity,
      activities,
      dataConverter,
      ...code,
      ...opts.workerOptions,
    });
  } catch (err) {
    await clients.close();
    await store.close();
    if (ownsConnection) await connection.close();
    throw err;
  }
  return {
    worker,
    taskQueue,
    async run() {
      // With metrics served, the credit gauges follow GET /usage of the keys in use.
      const sampler = !metricsRecorded()
        ? undefined
        : startCreditSampler({
            clients,
            permits,
            intervalMs: config.PCDS_METRICS_USAGE_INTERVAL_MS,
            onError: (keyId, err) =>
              process.stderr.write(
                `metrics: GET /usage of key ${keyId} failed (${err instanceof Error ? err.name : 'error'}); trying again later\n`,
              ),
          });
      // Cached results past their time to live go a few minutes after start, then hourly.
      const sweep = startCacheSweep(() => store.cache(), {
        ...(opts.cacheSweepFirstAfterMs !== undefined
          ? { firstAfterMs: opts.cacheSweepFirstAfterMs }
          : {}),
      });
      // Who it is, in its store: `pcds doctor` finds it there and compares settings.
      const reports = startSelfReports(config, store, { identity, taskQueue });
      try {
        await worker.run();
      } finally {
        await reports.stop();
        await sweep.stop();
        await sampler?.stop();
        await clients.close();
        await store.close();
        if (ownsConnection) await connection.close();
      }
    },
    shutdown() {
      shuttingDown.abort();
      if (worker.getState() === 'RUNNING') worker.shutdown();
    },
  };
}

/** `pcds worker`: register search attributes, run until a signal. */
export async function runWorkerMain(config: Config = loadConfig()): Promise<void> {
  // Refusals before anything connects: no key, or a workflow bundle this worker cannot load.
  workflowCode(config, dataConverterFromSettings(config), undefined);
  storeSealerFromSettings(config);
  // Before the first connection: the SDK's runtime is made once, with its exporter.
  await installMetricsExporter(config);
  const connection = await connectTemporalNative(temporalConnectionOptions(config));
  await registerSearchAttributes(connection, config.PCDS_TEMPORAL_NAMESPACE);
  // One store for the activities and the receiver, which keeps compact rows' deliveries in it.
  const store = lazyBatchStore(() => openStoreFromSettings(config));
  const pcds = await createWorker({ config, connection, store });
  const receiverClient =
    webhooksConfigured(config) && config.PCDS_WEBHOOK_RECEIVER === 'in-worker'
      ? temporalClient(connection, config)
      : undefined;
  const receiver = receiverClient
    ? await startReceiverFromConfig({
        config,
        client: receiverClient,
        store,
        onDelivery: recordWebhookDelivery,
      })
    : undefined;
  if (receiver)
    process.stderr.write(
      `webhook receiver listening on ${receiver.url} for ${receiver.publicUrl}/hooks/…\n`,
    );
  const stop = () => pcds.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stderr.write(
    `worker polling task queue ${pcds.taskQueue} on ${config.PCDS_TEMPORAL_ADDRESS} (namespace ${config.PCDS_TEMPORAL_NAMESPACE}; workflows ${config.PCDS_WORKFLOW_BUNDLE ? `from ${config.PCDS_WORKFLOW_BUNDLE}` : 'bundled at start'})\n`,
  );
  try {
    await pcds.run();
  } finally {
    await receiver?.stop();
    await connection.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  runWorkerMain().catch((err: unknown) => {
    process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
