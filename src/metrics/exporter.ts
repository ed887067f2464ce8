// The worker's Prometheus endpoint: the Temporal SDK's own exporter (one HTTP server in the
// SDK's core, on a loopback port of its own) renders the SDK's runtime metrics and, through the
// runtime's metric meter, the project's; the listener of metrics/endpoint.ts serves them with the
// project's bounds. Installed once per process, before any connection to Temporal.
import { Runtime } from '@temporalio/worker';
import { configuredListenerLimits, type Config } from '../config.js';
import { ConfigError } from '../config-error.js';
import { freePort } from '../temporal/dev-server.js';
import { startMetricsEndpoint } from './endpoint.js';
import { METRIC_DEFS } from './catalogue.js';
import { useMetricMeter } from './instruments.js';

/** Histogram buckets of the project's histograms, by name (the SDK keeps its own defaults). */
const bucketOverrides = (): Record<string, number[]> =>
  Object.fromEntries(
    METRIC_DEFS.filter((d) => d.buckets).map((d) => [d.name, [...(d.buckets ?? [])]]),
  );

/**
 * Installs the SDK runtime with its Prometheus exporter on a loopback port of its own, sends the
 * project's metrics to it, and serves them on PCDS_METRICS_HOST:PCDS_METRICS_PORT through a
 * listener that keeps the project's bounds (metrics/endpoint.ts). Returns the scrape URL, or
 * undefined when PCDS_METRICS_PORT is unset (no metrics server). Call before anything connects
 * to Temporal.
 */
export async function installMetricsExporter(
  config: Pick<Config, 'PCDS_METRICS_PORT' | 'PCDS_METRICS_HOST'> &
    Parameters<typeof configuredListenerLimits>[0],
): Promise<string | undefined> {
  const port = config.PCDS_METRICS_PORT;
  if (port === undefined) return undefined;
  const host = config.PCDS_METRICS_HOST.includes(':')
    ? `[${config.PCDS_METRICS_HOST}]`
    : config.PCDS_METRICS_HOST;
  const bindAddress = `${host}:${port}`;
  const refused = (err: unknown) =>
    new ConfigError(
      `PCDS_METRICS_PORT: cannot serve metrics on ${bindAddress}: ${err instanceof Error ? err.message : String(err)}`,
    );
  // A free loopback port for the core's own exporter: only the listener below reaches it.
  const corePort = await freePort();
  try {
    Runtime.install({
      telemetryOptions: {
        metrics: {
          prometheus: {
            bindAddress: `127.0.0.1:${corePort}`,
            // Prometheus conventions: counters end in _total, units in names, seconds.
            countersTotalSuffix: true,
            unitSuffix: true,
            useSecondsForDurations: true,
            histogramBucketOverrides: bucketOverrides(),
          },
        },
      },
    });
  } catch (err) {
    // The SDK's runtime was made before (by a connection or a worker), or its port was taken.
    throw refused(err);
  }
  useMetricMeter(Runtime.instance().metricMeter);
  const endpoint = await startMetricsEndpoint({
    host: config.PCDS_METRICS_HOST,
    port,
    upstream: `http://127.0.0.1:${corePort}/metrics`,
    limits: configuredListenerLimits(config),
  }).catch((err: unknown) => {
    throw refused(err);
  });
  process.stderr.write(`metrics served on ${endpoint.url}\n`);
  return endpoint.url;
}
