// How CLI commands reach Temporal: one connection per command (through the project's connection
// factory), one clear message naming the setting to fix when the server cannot be reached or
// refuses the client, and a word within seconds when no worker polls the queue.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { createPcdsClient, type PcdsClient } from '../client.js';
import { clientOptionsFromConfig } from '../client/options-from-env.js';
import type { Config } from '../config.js';
import {
  connectTemporalClient,
  temporalConnectionOptions,
  TemporalConnectionError,
} from '../temporal/connection.js';
import { dataConverterFromSettings, temporalClient } from '../temporal/data-converter.js';
import {
  checkWorkers,
  NoWorkerError,
  noWorkerWarning,
  type TaskQueueReader,
} from '../temporal/pollers.js';
import { CliError } from './output.js';

/** Temporal cannot be reached: a code of its own, so `pcds mcp` tools report it as such. */
export class TemporalUnreachableError extends CliError {
  override readonly code = 'temporal_unreachable';
}

export function temporalUnreachable(config: Config): CliError {
  return new TemporalUnreachableError(
    `cannot reach Temporal at ${config.PCDS_TEMPORAL_ADDRESS} (is \`pcds dev\` running? set PCDS_TEMPORAL_ADDRESS)`,
  );
}

/** A connection failure as the CLI reports it: the factory's message, which names the setting. */
export function asCliConnectionError(err: unknown, config: Config): unknown {
  if (err instanceof TemporalConnectionError) return new TemporalUnreachableError(err.message);
  // Configuration problems (an unreadable certificate file) keep their own message.
  if (err instanceof Error && err.name === 'ConfigError') return err;
  return temporalUnreachable(config);
}

export async function connectTemporal(
  config: Config,
): Promise<{ client: Client; close: () => Promise<void> }> {
  // A missing key is reported before any connection is tried.
  dataConverterFromSettings(config);
  let connection: Awaited<ReturnType<typeof connectTemporalClient>>;
  try {
    connection = await connectTemporalClient(temporalConnectionOptions(config));
  } catch (err) {
    throw asCliConnectionError(err, config);
  }
  const client = temporalClient(connection, config);
  return { client, close: () => connection.close() };
}

/** The typed client on the configured server, task queue and call defaults. */
export async function connectPcdsClient(config: Config): Promise<PcdsClient> {
  const options = clientOptionsFromConfig(config);
  try {
    return await createPcdsClient(options);
  } catch (err) {
    throw asCliConnectionError(err, config);
  }
}

/**
 * Warns on stderr when no worker polls the task queue (what was asked still happens: `then`
 * says when it takes effect). Returns whether the warning was printed.
 */
export async function warnWithoutWorker(
  client: TaskQueueReader,
  taskQueue: string,
  then: string,
): Promise<boolean> {
  const warning = noWorkerWarning(await checkWorkers(client, taskQueue), taskQueue);
  if (warning) process.stderr.write(`warning: ${warning}; ${then}\n`);
  return warning !== undefined;
}

/**
 * A worker just started takes a few seconds to poll (it bundles its workflows first): a command
 * run right after `pcds worker` waits this long for it before refusing.
 */
const WORKER_GRACE_MS = 8_000;

/** Refuses a command that would only wait for a worker when none polls the task queue. */
export async function requireWorker(
  client: TaskQueueReader,
  taskQueue: string,
  hint: string,
  graceMs = WORKER_GRACE_MS,
): Promise<void> {
  const until = Date.now() + graceMs;
  for (;;) {
    if ((await checkWorkers(client, taskQueue)).state !== 'none') return;
    if (Date.now() >= until) throw new NoWorkerError(taskQueue, hint);
    await sleep(1_000);
  }
}
