// `pcds usage [--month m] [--year y] [--key-id id]`: the account's credit usage (synchronous, free).
// Also the reader of GET /usage that the CLI's other commands and `pcds mcp` use: every read takes
// a permit from the key's shared throttle (which lives in Temporal), like a worker's requests.
import type { Connection, ConnectionLike } from '@temporalio/client';
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import { unthrottled, type PermitGate } from '../throttle/permits.js';
import { interactiveRequester, type Requester } from '../contract/index.js';
import { createServiceClients } from '../http/service-clients.js';
import { meteredServiceClient } from '../metrics/metered.js';
import type { UsageQuery } from '../http/service-client.js';
import { readUsage } from '../http/usage-read.js';
import { permitGateFromConfig } from '../worker/permit-gate.js';
import { action, printJson } from './output.js';
import { intArg } from './args.js';
import { connectTemporalClient, temporalConnectionOptions } from '../temporal/connection.js';
import { asCliConnectionError } from './temporal-connection.js';

/** How long a permit may take before the CLI says what it waits for (a worker must run). */
const SLOW_PERMIT_MS = 10_000;

export interface UsageReader {
  /**
   * One read; `requester` defaults to the operator's interactive work (a person waits on it).
   * `signal` gives up the wait for a permit (and the read).
   */
  read(
    query?: UsageQuery,
    keyId?: string,
    requester?: Requester,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export interface UsageReaderOptions {
  /** The Temporal connection of the throttle; default: one to PCDS_TEMPORAL_ADDRESS, made on first read. */
  connection?: () => Promise<ConnectionLike>;
  /** Told when a permit is slow to come (no worker polls the throttle's task queue, or a full window). */
  onSlowPermit?: (keyId: string) => void;
}

/**
 * GET /usage with the configured keys through the shared throttle (none with PCDS_THROTTLE=off).
 * Temporal is reached on the first read; an unreachable server is a clear error.
 */
export function createUsageReader(config: Config, options: UsageReaderOptions = {}): UsageReader {
  const services = createServiceClients(config, { wrap: meteredServiceClient });
  let owned: Connection | undefined;
  let gate: Promise<PermitGate> | undefined;
  const connect = async (): Promise<ConnectionLike> => {
    if (options.connection) return options.connection();
    try {
      owned = await connectTemporalClient(temporalConnectionOptions(config));
    } catch (err) {
      throw asCliConnectionError(err, config);
    }
    return owned;
  };
  const permits = (): Promise<PermitGate> => {
    if (config.PCDS_THROTTLE === 'off') return Promise.resolve(unthrottled);
    gate ??= connect()
      .then((connection) => permitGateFromConfig(config, connection, config.PCDS_TASK_QUEUE))
      .catch((err: unknown) => {
        gate = undefined;
        throw err;
      });
    return gate;
  };
  return {
    async read(query, keyId, requester = interactiveRequester(), signal) {
      const inner = await permits();
      const onSlow = options.onSlowPermit;
      const gated: PermitGate = !onSlow
        ? inner
        : {
            ...inner,
            async acquire(id, kind, acquireOptions) {
              const timer = setTimeout(() => onSlow(id), SLOW_PERMIT_MS);
              try {
                await inner.acquire(id, kind, acquireOptions);
              } finally {
                clearTimeout(timer);
              }
            },
          };
      return readUsage(services, gated, {
        requester,
        ...(signal ? { signal } : {}),
        ...(keyId ? { keyId } : {}),
        ...(query ? { query } : {}),
      });
    },
    async close() {
      await services.close();
      await owned?.close();
    },
  };
}

/** The CLI's note for a permit that keeps it waiting. */
export function slowPermitNote(config: Config): (keyId: string) => void {
  return (keyId) =>
    process.stderr.write(
      `waiting for a permit from the shared throttle of key ${keyId}: its window is full, or no worker polls task queue ${config.PCDS_TASK_QUEUE} (start one: pcds worker)\n`,
    );
}

export function registerUsageCommand(program: Command): Command {
  return program
    .command('usage')
    .description('show credit usage of the account for a month (GET /usage; free)')
    .option('--month <m>', 'month 1-12 (default: current)', intArg('month', 1, 12))
    .option('--year <y>', 'year 2020-2030 (default: current)', intArg('year', 2020, 2030))
    .option('--key-id <id>', 'configured key to use (default: the first)')
    .action(
      action(async (opts: { month?: number; year?: number; keyId?: string }) => {
        const config = loadConfig();
        const reader = createUsageReader(config, { onSlowPermit: slowPermitNote(config) });
        try {
          const query = {
            ...(opts.month ? { month: opts.month } : {}),
            ...(opts.year ? { year: opts.year } : {}),
          };
          printJson(await reader.read(query, opts.keyId));
        } finally {
          await reader.close();
        }
      }),
    );
}
