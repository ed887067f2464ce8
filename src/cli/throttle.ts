// `pcds throttle status [--key id] [--json]` and `pcds throttle resume <keyId>`: the shared
// throttle's state per key, and closing a key's credit breaker once credits were added.
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { loadConfig, type Config } from '../config.js';
import {
  readEachThrottleStatus,
  resumeCredits,
  UnknownThrottleError,
} from '../client/throttle-operator.js';
import { formatThrottleStatus } from '../throttle/status-text.js';
import { action, CliError, printJson } from './output.js';
import { connectTemporal, warnWithoutWorker } from './temporal-connection.js';

async function withTemporal<T>(fn: (client: Client, config: Config) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const { client, close } = await connectTemporal(config);
  try {
    return await fn(client, config);
  } catch (err) {
    if (err instanceof UnknownThrottleError) throw new CliError(err.message);
    throw err;
  } finally {
    await close();
  }
}

export function registerThrottleCommand(program: Command): Command {
  const throttle = program
    .command('throttle')
    .description('the shared rate throttle of each key: state, credit breaker');
  throttle
    .command('status')
    .description(
      'permits used per window, callers waiting, closures, learned limits, credit breaker, recent 429s',
    )
    .option('--key <id>', 'only this key id (default: every key with a running throttle)')
    .option('--json', 'print the state as JSON')
    .action(
      action(async (opts: { key?: string; json?: boolean }) => {
        await withTemporal(async (client, config) => {
          // Each key's state is a query the worker answers (bounded): say first why none will.
          await warnWithoutWorker(
            client,
            config.PCDS_TASK_QUEUE,
            "a key's state is read from its throttle, which only a worker answers",
          );
          const readings = await readEachThrottleStatus(client, opts.key ? [opts.key] : undefined);
          if (opts.json) return printJson(readings);
          if (readings.length === 0) {
            process.stdout.write(
              'no throttle is running yet (each key starts its own with its first request)\n',
            );
            return;
          }
          if (opts.key && readings[0]?.error) throw new CliError(readings[0].error);
          const blocks = readings.map((r) =>
            r.status ? formatThrottleStatus(r.status) : `key ${r.keyId}\n  ${r.error}`,
          );
          process.stdout.write(blocks.join('\n\n') + '\n');
        });
      }),
    );
  throttle
    .command('resume')
    .description(
      "close a key's credit breaker after a 402 (once credits were added): submits go again",
    )
    .argument('<keyId>', 'the key id (as configured; never the key itself)')
    .action(
      action(async (keyId: string) => {
        await withTemporal(async (client) => {
          const { wasOpen } = await resumeCredits(client, keyId, 'pcds throttle resume');
          process.stdout.write(
            wasOpen
              ? `credit breaker of key ${keyId} closed: submits resume\n`
              : `credit breaker of key ${keyId} was not open\n`,
          );
        });
      }),
    );
  return throttle;
}
