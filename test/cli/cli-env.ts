// What the CLI tests share: the real `pcds` command run as a child process with a controlled
// environment, and an emulator plus an in-process worker for it to talk to.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig } from '../../src/config.js';
import {
  startEmulator,
  type EmulatorOptionsInput,
  type RunningEmulator,
} from '../../src/emulator/index.js';
import { projectRoot } from '../../src/temporal/cli-binary.js';
import { createWorker } from '../../src/worker.js';
import {
  installQuietRuntime,
  DEFAULT_WORKFLOWS_PATH,
  connectClient,
  temporalAddress,
  testNamespace,
  uniqueTaskQueue,
  workflowBundle,
  workflowBundleEnv,
  testEncryptionEnv,
} from '../harness/temporal.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const PCDS_BIN = join(projectRoot(), 'bin', 'pcds.mjs');

/**
 * The environment of a child: PATH and HOME from ours, nothing else of ours (a developer's own
 * PCDS_ variables must not leak in), the run's workflow bundle for a worker it may start, then `env`.
 */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NO_COLOR: '1',
    ...workflowBundleEnv(env),
    ...env,
  };
}

/** Starts `pcds <args>` without waiting for it. */
export function spawnCli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [PCDS_BIN, ...args], {
    cwd: projectRoot(),
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs `pcds <args>` to its end; every result is also kept in `log` for hygiene checks. */
export async function runCli(
  args: string[],
  env: Record<string, string>,
  log?: CliResult[],
  /** A command still running this long is killed, and the run fails saying so. */
  opts: { timeoutMs?: number } = {},
): Promise<CliResult> {
  const child = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  let timer: NodeJS.Timeout | undefined;
  const result = await new Promise<CliResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    if (opts.timeoutMs !== undefined)
      timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(
          new Error(
            `pcds ${args.join(' ')} was still running after ${opts.timeoutMs} ms; its stderr:\n${stderr}`,
          ),
        );
      }, opts.timeoutMs);
  }).finally(() => clearTimeout(timer));
  log?.push(result);
  return result;
}

/** `promise`, or an error naming `what` once it has taken `ms`: a hang says where it is. */
export function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** A stack frame line, which an expected error must never print. */
export const STACK_FRAME = /^\s+at .+[:(]/m;

export const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), `pcds-cli-${prefix}-`));

export interface CliEnv {
  emulator: RunningEmulator;
  taskQueue: string;
  /** PCDS_ variables for the child: the emulator, its dev key, the test server, the task queue. */
  env: Record<string, string>;
  client: Client;
  stop(): Promise<void>;
}

/**
 * A `pcds` child's settings on the emulator's dev key, the test server and `taskQueue`: shared
 * throttle off, short polls, a store of its own.
 */
export function cliEnvOf(emulator: RunningEmulator, taskQueue: string): Record<string, string> {
  return {
    PCDS_BASE_URL: emulator.url,
    PCDS_API_KEY: emulator.devKey.key,
    PCDS_API_SECRET: emulator.devKey.secret,
    PCDS_TEMPORAL_ADDRESS: temporalAddress(),
    PCDS_TEMPORAL_NAMESPACE: testNamespace(),
    PCDS_TASK_QUEUE: taskQueue,
    PCDS_THROTTLE: 'off',
    PCDS_POLL_INTERVAL_MS: '100',
    PCDS_HTTP_TIMEOUT_MS: '5000',
    // A store of its own: files running at once would otherwise queue on one SQLite file's lock.
    PCDS_STORE_URL: `sqlite:${join(tempDir('store'), 'store.sqlite')}`,
    ...testEncryptionEnv(),
  };
}

/** The project's own worker (createWorker) on `env`'s settings, in this process, running. */
export async function startProjectWorker(
  env: Record<string, string>,
  taskQueue: string,
): Promise<{ stop(): Promise<void> }> {
  const worker = await createWorker({
    config: loadConfig(env),
    taskQueue,
    workerOptions: {
      workflowBundle: await workflowBundle(DEFAULT_WORKFLOWS_PATH),
      // Worker.create in 0.2 s instead of 2-3 s on two cores; see test/harness.
      debugMode: true,
      shutdownGraceTime: '1s',
    },
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
    },
  };
}

/**
 * An emulator with short latencies and no rate limits, and a worker (the project's own
 * createWorker, shared throttle off) polling a fresh task queue on the test server.
 */
export async function startCliEnv(emulatorOptions: EmulatorOptionsInput = {}): Promise<CliEnv> {
  installQuietRuntime();
  const emulator = await startEmulator({
    port: 0,
    latency: { queuedMs: 20, processingMs: 60 },
    limits: { enabled: false },
    ...emulatorOptions,
  });
  const taskQueue = uniqueTaskQueue('cli');
  const env = cliEnvOf(emulator, taskQueue);
  let connection: Connection | undefined;
  try {
    const connected = await connectClient();
    connection = connected.connection;
    const worker = await startProjectWorker(env, taskQueue);
    return {
      emulator,
      taskQueue,
      env,
      client: connected.client,
      async stop() {
        await worker.stop();
        await connected.connection.close();
        await emulator.stop();
      },
    };
  } catch (err) {
    await connection?.close();
    await emulator.stop();
    throw err;
  }
}

/**
 * What a CLI test file shares: one environment (emulator, worker, test server) started before its
 * tests and stopped after them, and `pcds`, which runs the command in it and keeps every result in
 * `outputs` for hygiene checks. Read `cli` inside tests, not at load time.
 */
export function sharedCliEnv(): {
  readonly cli: CliEnv;
  readonly outputs: CliResult[];
  pcds(...args: string[]): Promise<CliResult>;
} {
  let cli: CliEnv | undefined;
  const outputs: CliResult[] = [];
  beforeAll(async () => {
    cli = await startCliEnv();
  });
  afterAll(async () => {
    await cli?.stop();
  });
  const current = (): CliEnv => {
    if (!cli) throw new Error('the CLI environment starts before the tests');
    return cli;
  };
  return {
    get cli() {
      return current();
    },
    outputs,
    pcds: (...args: string[]) => runCli(args, current().env, outputs),
  };
}
