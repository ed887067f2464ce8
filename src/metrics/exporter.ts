// The worker's Prometheus endpoint: the Temporal SDK's own exporter (one HTTP server in the
// SDK's core, GET /metrics) serves the SDK's runtime metrics and, through the runtime's metric
// meter, the project's. Installed once per process, before any connection to Temporal.
import { Runtime } from '@temporalio/worker';
import type { Config } from '../config.js';
import { ConfigError } from '../config-error.js';
import { METRIC_DEFS } from './catalogue.js';
import { useMetricMeter } from './instruments.js';

/** Histogram buckets of the project's histograms, by name (the SDK keeps its own defaults). */
const bucketOverrides = (): Record<string, number[]> =>
  Object.fromEntries(
    METRIC_DEFS.filter((d) => d.buckets).map((d) => [d.name, [...(d.buckets ?? [])]]),
  );

/**
 * Installs the SDK runtime with its Prometheus exporter on PCDS_METRICS_HOST:PCDS_METRICS_PORT
 * and sends the project's metrics to it. Returns the scrape URL, or undefined when
 * PCDS_METRICS_PORT is unset (no metrics server). Call before anything connects to Temporal.
 */
export function installMetricsExporter(
  config: Pick<Config, 'PCDS_METRICS_PORT' | 'PCDS_METRICS_HOST'>,
): string | undefined {
  const port = config.PCDS_METRICS_PORT;
  if (port === undefined) return undefined;
  const host = config.PCDS_METRICS_HOST.includes(':')
    ? `[${config.PCDS_METRICS_HOST}]`
    : config.PCDS_METRICS_HOST;
  const bindAddress = `${host}:${port}`;
  try {
    Runtime.install({
      telemetryOptions: {
        metrics: {
          prometheus: {
            bindAddress,
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
    // The port is taken, or the SDK's runtime was made before (by a connection or a worker).
    throw new ConfigError(
      `PCDS_METRICS_PORT: cannot serve metrics on ${bindAddress}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  useMetricMeter(Runtime.instance().metricMeter);
  const url = `http://${host}:${port}/metrics`;
  process.stderr.write(`metrics served on ${url}\n`);
  return url;
}
