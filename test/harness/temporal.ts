// Helpers for integration tests: the shared dev server's address, unique task queues, and a
// worker that runs only for the duration of a callback.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Client, type Connection } from '@temporalio/client';
import type { DataConverter, Payload } from '@temporalio/common';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  Worker,
  type WorkerOptions,
  type WorkflowBundleOption,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { inject } from 'vitest';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import {
  connectTemporalClient,
  connectTemporalNative,
  type TemporalConnectionOptions,
} from '../../src/temporal/connection.js';
import { dataConverterFromEnv, FAILURE_CONVERTER_PATH } from '../../src/temporal/data-converter.js';
import { SHARED_WORKFLOW_MODULES } from '../../src/worker/bundle.js';

/** host:port of the dev server started by the global setup. */
export function temporalAddress(): string {
  return inject('temporalAddress');
}

export function testNamespace(): string {
  return inject('temporalNamespace');
}

/** The settings that reach a secured shared server (`npm run test:cluster` runs it on mutual TLS). */
const TEMPORAL_TLS_SETTINGS = [
  'PCDS_TEMPORAL_TLS',
  'PCDS_TEMPORAL_TLS_CERT',
  'PCDS_TEMPORAL_TLS_KEY',
  'PCDS_TEMPORAL_TLS_CA',
  'PCDS_TEMPORAL_TLS_SERVER_NAME',
  'PCDS_TEMPORAL_API_KEY',
] as const;

/** The shared server's PCDS_TEMPORAL_TLS_* settings, as the run's environment gives them. */
export function temporalTlsEnv(): Record<string, string> {
  return Object.fromEntries(
    TEMPORAL_TLS_SETTINGS.flatMap((name) => {
      const value = process.env[name];
      return value ? [[name, value]] : [];
    }),
  );
}

/** The shared server's address, namespace and TLS settings, for a `pcds` process a test spawns. */
export function testTemporalEnv(): Record<string, string> {
  return {
    PCDS_TEMPORAL_ADDRESS: temporalAddress(),
    PCDS_TEMPORAL_NAMESPACE: testNamespace(),
    ...temporalTlsEnv(),
  };
}

/**
 * How to connect to `address`: with the run's TLS settings when it is the shared server, plain
 * when it is a dev server a test started for itself.
 */
export function connectionOptionsFor(address: string): TemporalConnectionOptions {
  if (address !== temporalAddress()) return { address };
  const tls = temporalTlsEnv();
  return {
    address,
    ...(tls.PCDS_TEMPORAL_API_KEY ? { apiKey: tls.PCDS_TEMPORAL_API_KEY } : {}),
    ...(tls.PCDS_TEMPORAL_TLS_CERT || tls.PCDS_TEMPORAL_TLS_CA || tls.PCDS_TEMPORAL_TLS === 'true'
      ? {
          tls: {
            ...(tls.PCDS_TEMPORAL_TLS_CERT ? { cert: tls.PCDS_TEMPORAL_TLS_CERT } : {}),
            ...(tls.PCDS_TEMPORAL_TLS_KEY ? { key: tls.PCDS_TEMPORAL_TLS_KEY } : {}),
            ...(tls.PCDS_TEMPORAL_TLS_CA ? { ca: tls.PCDS_TEMPORAL_TLS_CA } : {}),
            ...(tls.PCDS_TEMPORAL_TLS_SERVER_NAME
              ? { serverName: tls.PCDS_TEMPORAL_TLS_SERVER_NAME }
              : {}),
          },
        }
      : {}),
  };
}

/**
 * The run's encryption setting and id secret, for configurations a test builds from scratch (they
 * leave the process environment out on purpose): tests run encrypted, as production does.
 */
export function testEncryptionEnv(): { PCDS_ENCRYPTION_KEY: string; PCDS_ID_SECRET: string } {
  return { PCDS_ENCRYPTION_KEY: inject('encryptionKey'), PCDS_ID_SECRET: inject('idSecret') };
}

/** The data converter of the run's clients and workers (the same one production builds). */
export function testDataConverter() {
  return dataConverterFromEnv(testEncryptionEnv());
}

let taskQueueCounter = 0;

/** A task queue no other test (or earlier run against the same server) uses. */
export function uniqueTaskQueue(prefix = 'test'): string {
  taskQueueCounter += 1;
  return `${prefix}-${process.pid}-${taskQueueCounter}-${randomBytes(3).toString('hex')}`;
}

/** The project's workflows, which production workers load. */
export const DEFAULT_WORKFLOWS_PATH = resolve(projectRoot(), 'src/workflows/index.ts');

const bundles = new Map<string, Promise<WorkflowBundleOption>>();

/** How the tests bundle a workflows file: as production's worker does, with its failure converter. */
export function bundleWorkflows(workflowsPath: string): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: resolve(workflowsPath),
    preloadModules: [...SHARED_WORKFLOW_MODULES],
    // Failures raised in workflow code carry their messages encoded, as production's do.
    failureConverterPath: FAILURE_CONVERTER_PATH,
    logger: new DefaultLogger('WARN'),
  });
}

/**
 * A workflows file's bundle. The project's own workflows come from the file the global setup
 * bundled once for the whole run; any other file (or a run without that setup) is bundled once
 * per test file (bundling takes about 2 s).
 */
export function workflowBundle(workflowsPath: string): Promise<WorkflowBundleOption> {
  const key = resolve(workflowsPath);
  let bundle = bundles.get(key);
  if (!bundle) {
    const prebuilt = key === DEFAULT_WORKFLOWS_PATH ? inject('workflowBundlePath') : undefined;
    // A failure stays cached too: the sources will not change during the run, and webpack's
    // error report is printed once instead of once per test.
    bundle = prebuilt ? Promise.resolve({ codePath: prebuilt }) : bundleWorkflows(key);
    bundles.set(key, bundle);
  }
  return bundle;
}

/**
 * PCDS_WORKFLOW_BUNDLE for a child process with environment `env`: the run's bundle, so the child's
 * worker loads it instead of bundling at start (about 3 s of CPU each, some fifty times a run). A
 * child with encryption off, which the bundle's encoded failures do not fit, bundles its own.
 */
export function workflowBundleEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const path = inject('workflowBundlePath');
  return path && env.PCDS_ENCRYPTION !== 'off' ? { PCDS_WORKFLOW_BUNDLE: path } : {};
}

let runtimeInstalled = false;

/** Keeps the SDK's INFO lines (worker state changes) out of test output. */
/** The Temporal runtime logs at WARN in tests (once per process). */
export function installQuietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Already installed in this process (another helper or the test itself did it): keep it.
  }
}

/** A client on the shared server (with the run's data converter unless told); close its connection when done. */
export async function connectClient(
  opts: { address?: string; namespace?: string; dataConverter?: DataConverter } = {},
): Promise<{ client: Client; connection: Connection }> {
  const connection = await connectTemporalClient(
    connectionOptionsFor(opts.address ?? temporalAddress()),
  );
  const client = new Client({
    connection,
    namespace: opts.namespace ?? testNamespace(),
    dataConverter: opts.dataConverter ?? testDataConverter(),
  });
  return { client, connection };
}

export interface WithWorkerOptions {
  /** Default: a fresh uniqueTaskQueue('test'). */
  taskQueue?: string;
  /** Default: src/workflows/index.ts. */
  workflowsPath?: string;
  activities?: object;
  /** Default: the shared dev server. */
  address?: string;
  namespace?: string;
  /** Anything else Worker.create accepts (e.g. maxConcurrentActivityTaskExecutions). */
  workerOptions?: Partial<WorkerOptions>;
}

export interface WorkerContext {
  client: Client;
  taskQueue: string;
  namespace: string;
  address: string;
  worker: Worker;
}

/**
 * Runs `fn` while a worker polls a task queue, then shuts the worker down (also when `fn`
 * throws). `fn` gets a client on the same server and namespace.
 */
export async function withWorker<T>(
  opts: WithWorkerOptions,
  fn: (ctx: WorkerContext) => Promise<T>,
): Promise<T> {
  installQuietRuntime();
  const address = opts.address ?? temporalAddress();
  const namespace = opts.namespace ?? testNamespace();
  const taskQueue = opts.taskQueue ?? uniqueTaskQueue('test');
  const bundle = await workflowBundle(opts.workflowsPath ?? DEFAULT_WORKFLOWS_PATH);
  const nativeConnection = await connectTemporalNative(connectionOptionsFor(address));
  try {
    const worker = await Worker.create({
      connection: nativeConnection,
      namespace,
      taskQueue,
      workflowBundle: bundle,
      activities: opts.activities,
      dataConverter: testDataConverter(),
      // Workflows run in this thread rather than a pool of worker threads: Worker.create takes
      // ~0.2 s instead of 2-3 s on two cores. The cost is no deadlock detection, so a workflow
      // stuck in a synchronous loop hangs its test instead of failing it.
      debugMode: true,
      // A test that leaves an activity running must not hang the file at shutdown.
      shutdownGraceTime: '1s',
      shutdownForceTime: '10s',
      ...opts.workerOptions,
    });
    const { client, connection } = await connectClient({ address, namespace });
    let done: { value: T } | undefined;
    try {
      return await worker.runUntil(async () => {
        const value = await fn({ client, taskQueue, namespace, address, worker });
        done = { value };
        return value;
      });
    } catch (err) {
      // After the test's work has finished, finalizing the worker's shutdown can find the SDK's
      // core still holding it for a moment (a call to the server in flight) and throw "Worker
      // still in use": a race of the SDK's shutdown, seen after server restarts and under load.
      // The test's own result stands; any other error, or this one before it finished, fails it.
      if (done && isShutdownRace(err)) return done.value;
      throw err;
    } finally {
      await connection.close();
    }
  } finally {
    await nativeConnection.close().catch((err: unknown) => {
      if (!isShutdownRace(err)) throw err;
    });
  }
}

/** The SDK's "still in use" refusals at shutdown (see withWorker). */
function isShutdownRace(err: unknown): boolean {
  return (
    err instanceof Error &&
    err.name === 'IllegalStateError' &&
    /still in use|hold a reference/.test(err.message)
  );
}

/**
 * A history with every encrypted payload opened by the run's codec, for tests that read values
 * in it (histories come back from the server as stored: encrypted).
 */
export async function decodedHistory<T extends object>(history: T): Promise<T> {
  const codecs = testDataConverter().payloadCodecs ?? [];
  const isPayload = (v: unknown): v is Payload =>
    !!v && typeof v === 'object' && 'metadata' in v && 'data' in v;
  const walk = async (value: unknown): Promise<unknown> => {
    if (isPayload(value)) {
      let [decoded] = [value];
      for (const codec of [...codecs].reverse()) [decoded] = await codec.decode([decoded]);
      return decoded;
    }
    if (Array.isArray(value)) return Promise.all(value.map(walk));
    if (value && typeof value === 'object' && !(value instanceof Uint8Array)) {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = await walk(v);
      return Object.assign(Object.create(Object.getPrototypeOf(value) as object) as object, out);
    }
    return value;
  };
  return (await walk(history)) as T;
}
