// `pcds usage [--month m] [--year y] [--key-id id]`: the account's credit usage (synchronous, free).
import type { Command } from 'commander';
import { loadConfig } from '../config.js';
import { createServiceClients } from '../http/service-clients.js';
import { action, printJson } from './output.js';
import { intArg } from './args.js';

export function registerUsageCommand(program: Command): Command {
  return program
    .command('usage')
    .description('show credit usage of the account for a month (GET /usage; free)')
    .option('--month <m>', 'month 1-12 (default: current)', intArg('month', 1, 12))
    .option('--year <y>', 'year 2020-2030 (default: current)', intArg('year', 2020, 2030))
    .option('--key-id <id>', 'configured key to use (default: the first)')
    .action(
      action(async (opts: { month?: number; year?: number; keyId?: string }) => {
        const clients = createServiceClients(loadConfig());
        try {
          const query = {
            ...(opts.month ? { month: opts.month } : {}),
            ...(opts.year ? { year: opts.year } : {}),
          };
          printJson(await clients.get(opts.keyId).usage(query));
        } finally {
          await clients.close();
        }
      }),
    );
}
