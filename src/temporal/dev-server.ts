// Starts and stops a local `temporal server start-dev` for tests, demos and the `pcds dev`
// stack, with the project's search attributes and a readiness check on the real gRPC API.
import { spawn, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Connection } from '@temporalio/client';
import { connectTemporalClient } from './connection.js';
import { findOrInstallTemporalCli, projectRoot } from './cli-binary.js';
import { searchAttributeCliArgs } from './search-attributes.js';

export interface DevServerOptions {
  /** Frontend gRPC port. Default: a free port. */
  port?: number;
  /** Web UI port. Default: a free port (ignored when headless). */
  uiPort?: number;
  headless?: boolean;
  /** SQLite file that keeps state across restarts. Default: in memory. */
  dbFile?: string;
  namespace?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Server output goes here. Default: `<dbFile>.log`, or `.data/temporal/dev-server-<port>.log`. */
  logFile?: string;
  /** The temporal binary. Default: findOrInstallTemporalCli(). */
  cliPath?: string;
  /** Extra or overriding dynamic config (key -> JSON value). */
  dynamicConfig?: Record<string, unknown>;
  /**
   * The Web UI's remote codec endpoint. It may hold a token, so it never goes on the server's
   * command line (which every local user can read in `ps`): the CLI reads it from a private
   * environment file, removed once the server is up.
   */
  uiCodecEndpoint?: string;
  /** How long to wait for the frontend to answer. Default 60 s. */
  startTimeoutMs?: number;
}

export interface DevServer {
  /** host:port of the frontend, for Connection/NativeConnection. */
  address: string;
  /** Web UI address, or undefined when headless. */
  uiUrl: string | undefined;
  namespace: string;
  logFile: string;
  pid: number;
  /** SIGTERM, then SIGKILL after 5 s. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Dynamic config we add to the CLI's own dev defaults. Each key was checked against
 * go.temporal.io/server v1.32 common/dynamicconfig/constants.go. Update and update-with-start
 * need nothing: both are on by default in 1.32.
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, unknown>> = {
  // One partition per task queue: with a single worker on a one-shard server, four partitions
  // only add forwarding hops between partitions and a poller waiting on an empty one.
  'matching.numTaskqueueReadPartitions': 1,
  'matching.numTaskqueueWritePartitions': 1,
  // Progress bars, tests and the UI count and list by search attribute; the CLI's 100/s
  // visibility limit is reachable when several of them poll at once.
  'frontend.namespaceRPS.visibility': 1000,
  // Task queue fairness: worker slots are shared between the fairness keys the work carries (a
  // batch's rows, a tenant's calls) by their weights, as the shared throttle shares permits.
  // Priority keys (interactive calls first) need nothing.
  'matching.enableFairness': true,
  // A compact batch's rows end while its workflow task runs (two events each), and more than 100
  // buffered events make the server fail that task and hand the workflow to a worker that
  // replays its whole history (deploy/temporal/dynamicconfig.yaml says more).
  'history.maximumBufferedEventsBatch': 2500,
};

const STOP_GRACE_MS = 5_000;

/** Starts with free ports; another process taking one of them first is retried with new ones. */
export async function startDevServer(opts: DevServerOptions = {}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServerOnce(opts);
    } catch (err) {
      // The CLI also picks its HTTP API port itself: between a pick and its bind, a port can go.
      const raced = /address already in use/.test(err instanceof Error ? err.message : '');
      if (!raced || attempt >= 3 || (opts.port !== undefined && opts.uiPort !== undefined))
        throw err;
    }
  }
}

async function startDevServerOnce(opts: DevServerOptions): Promise<DevServer> {
  const namespace = opts.namespace ?? 'default';
  const headless = opts.headless ?? false;
  const cliPath = opts.cliPath ?? (await findOrInstallTemporalCli());
  const port = opts.port ?? (await freePort());
  const uiPort = headless ? undefined : (opts.uiPort ?? (await freePort()));
  const address = `127.0.0.1:${port}`;
  const dbFile = opts.dbFile === undefined ? undefined : resolve(opts.dbFile);
  const logFile = resolve(
    opts.logFile ??
      (dbFile
        ? `${dbFile}.log`
        : join(projectRoot(), '.data', 'temporal', `dev-server-${port}.log`)),
  );

  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port)];
  args.push('--log-level', opts.logLevel ?? 'warn');
  if (namespace !== 'default') args.push('--namespace', namespace);
  for (const sa of searchAttributeCliArgs()) args.push('--search-attribute', sa);
  if (dbFile) {
    // The data folder holds every workflow's history: its owner's only. The server makes its
    // database under umask 077 (below), and one left by an earlier run is made private here.
    mkdirSync(dirname(dbFile), { recursive: true, mode: 0o700 });
    for (const file of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`])
      if (existsSync(file)) chmodSync(file, 0o600);
    args.push('--db-filename', dbFile);
    // WAL without fsync per commit: the dev store is many times faster and a crash of this
    // machine, not of the server, is the only way to lose the last writes.
    args.push('--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=OFF');
  }
  if (uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(uiPort), '--ui-ip', '127.0.0.1');
  const envFile =
    uiPort !== undefined && opts.uiCodecEndpoint
      ? privateEnvFile({ 'ui-codec-endpoint': opts.uiCodecEndpoint })
      : undefined;
  if (envFile) args.push('--env-file', envFile.path, '--env', DEV_ENV_NAME);
  const dynamicConfig = { ...DEV_SERVER_DYNAMIC_CONFIG, ...opts.dynamicConfig };
  for (const [key, value] of Object.entries(dynamicConfig)) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }

  let child: ChildProcess;
  try {
    mkdirSync(dirname(logFile), { recursive: true, mode: 0o700 });
    // A persistent server appends, so earlier runs stay readable after a restart; an in-memory
    // one has no past worth keeping.
    const logFd = openSync(logFile, dbFile ? 'a' : 'w', 0o600);
    writeSync(logFd, `\n=== ${new Date().toISOString()} ${cliPath} ${args.join(' ')}\n`);
    try {
      // Under umask 077 the files the server makes (its database and WAL files) are 0600.
      child = spawn('/bin/sh', ['-c', 'umask 077 && exec "$0" "$@"', cliPath, ...args], {
        stdio: ['ignore', logFd, logFd],
      });
    } finally {
      closeSync(logFd); // the child holds its own copy
    }
  } catch (err) {
    envFile?.remove();
    throw err;
  }

  const exited = new Promise<string>((resolveExit) => {
    child.once('exit', (code, signal) => resolveExit(signal ?? `code ${code}`));
    child.once('error', (err) => resolveExit(err.message));
  });
  // A test runner that dies must not leave a server holding ports and memory.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };

  try {
    await waitUntilReady(address, namespace, opts.startTimeoutMs ?? 60_000, exited, logFile);
  } catch (err) {
    await stop();
    throw err;
  } finally {
    // The server read its settings as it started: the file has done its work.
    envFile?.remove();
  }
  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://127.0.0.1:${uiPort}`,
    namespace,
    logFile,
    pid: child.pid ?? -1,
    stop,
  };
}

/** The environment (of `temporal env`) the dev server's private settings are given under. */
const DEV_ENV_NAME = 'pcds-dev';

/**
 * Settings of the CLI's flags (by flag name) in an environment file of `temporal --env-file`, in
 * a folder of its own (0700), the file 0600: a flag value read from there is not on the command
 * line. Values are written as JSON strings, which YAML reads as they are.
 */
function privateEnvFile(flags: Record<string, string>): { path: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-temporal-env-'));
  const path = join(dir, 'env.yaml');
  const lines = Object.entries(flags).map(([k, v]) => `    ${k}: ${JSON.stringify(v)}`);
  writeFileSync(path, ['env:', `  ${DEV_ENV_NAME}:`, ...lines, ''].join('\n'), { mode: 0o600 });
  return { path, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Polls a real DescribeNamespace until it answers, the process dies, or time runs out. */
async function waitUntilReady(
  address: string,
  namespace: string,
  timeoutMs: number,
  exited: Promise<string>,
  logFile: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitReason: string | undefined;
  void exited.then((reason) => (exitReason = reason));
  let lastError = 'no attempt yet';
  while (Date.now() < deadline) {
    if (exitReason !== undefined) {
      // A port taken between its pick and the server's bind is said early in the log, before a
      // stack trace the last lines show: named here, so the start is tried again on new ports.
      const raced = /address already in use/.test(readLog(logFile) ?? '');
      throw new Error(
        `temporal dev server exited (${exitReason}) before it was ready` +
          (raced ? ': a port it was given is taken (address already in use)' : '') +
          `. Last log lines from ${logFile}:\n` +
          tail(logFile, 15),
      );
    }
    let connection: Connection | undefined;
    try {
      connection = await connectTemporalClient({
        address,
        connectTimeoutMs: 1_000,
        explain: false,
      });
      const answering = connection;
      // Bounded: whatever holds the port may take a connection and never answer.
      await answering.withDeadline(Date.now() + 2_000, () =>
        answering.workflowService.describeNamespace({ namespace }),
      );
      // Another server's answer, on a port ours could not take, is not ours.
      if (exitReason === undefined) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    } finally {
      await connection?.close();
    }
    await sleep(200);
  }
  throw new Error(
    `temporal dev server at ${address} did not answer within ${timeoutMs} ms (last error: ${lastError}). ` +
      `See ${logFile}.`,
  );
}

/** A port the OS considers free now; the server binds it moments later. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

function readLog(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function tail(file: string, lines: number): string {
  const log = readLog(file);
  return log === undefined
    ? '(log unreadable)'
    : log.trimEnd().split('\n').slice(-lines).join('\n');
}
