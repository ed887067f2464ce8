// The client's options from the same PCDS_ settings the workers read: the Temporal address,
// namespace, TLS and API key, the task queue, the call defaults, the payload key and id secret.
// The store is PCDS_STORE_URL's (createPcdsClient's default). A service that builds its client
// from here cannot drift from its workers by leaving a setting out.
import { loadConfig, type Config } from '../config.js';
import { dataConverterFromSettings } from '../temporal/data-converter.js';
import { temporalConnectionOptions } from '../temporal/connection.js';
import { idSecretFromSettings } from '../codec/idempotency.js';
import type { PcdsClientOptions } from '../client.js';

/** The options of a client configured like the workers (a bad setting throws, naming it). */
export function clientOptionsFromConfig(config: Config): PcdsClientOptions {
  const dataConverter = dataConverterFromSettings(config);
  // A bad id secret (short, unreadable file) is reported before any connection is tried.
  const idSecret = idSecretFromSettings(config);
  const { tls, apiKey } = temporalConnectionOptions(config);
  return {
    dataConverter,
    ...(idSecret ? { idSecret: idSecret.key.toString('utf8') } : {}),
    address: config.PCDS_TEMPORAL_ADDRESS,
    ...(tls !== undefined ? { tls } : {}),
    ...(apiKey !== undefined ? { apiKey } : {}),
    namespace: config.PCDS_TEMPORAL_NAMESPACE,
    taskQueue: config.PCDS_TASK_QUEUE,
    tenant: config.PCDS_TENANT,
    cacheScope: config.PCDS_CACHE_SCOPE,
    defaults: {
      pollIntervalMs: config.PCDS_POLL_INTERVAL_MS,
      maxWaitMs: config.PCDS_MAX_WAIT_MS,
      webhookFallbackPollMs: config.PCDS_WEBHOOK_FALLBACK_POLL_MS,
    },
  };
}

/** `createPcdsClient(clientOptionsFromEnv())`: a client on the workers' settings. */
export function clientOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): PcdsClientOptions {
  return clientOptionsFromConfig(loadConfig(env));
}
