// How CLI commands reach Temporal: one connection per command, and one clear message (with the
// fix) when the server cannot be reached, instead of the core's transport error.
import { Client, Connection } from '@temporalio/client';
import type { Config } from '../config.js';
import { CliError } from './output.js';

export function temporalUnreachable(config: Config): CliError {
  return new CliError(
    `cannot reach Temporal at ${config.PCDS_TEMPORAL_ADDRESS} (is \`pcds dev\` running? set PCDS_TEMPORAL_ADDRESS)`,
  );
}

export async function connectTemporal(
  config: Config,
): Promise<{ client: Client; close: () => Promise<void> }> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ address: config.PCDS_TEMPORAL_ADDRESS });
  } catch {
    throw temporalUnreachable(config);
  }
  const client = new Client({ connection, namespace: config.PCDS_TEMPORAL_NAMESPACE });
  return { client, close: () => connection.close() };
}
