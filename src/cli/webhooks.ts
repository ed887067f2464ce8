// `pcds webhooks`: runs the webhook receiver on its own (for deployments where workers are not
// reachable from the internet), until SIGINT or SIGTERM.
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../config.js';
import { lazyBatchStore, openStoreFromSettings, storeSealerFromSettings } from '../store/index.js';
import { installMetricsExporter } from '../metrics/exporter.js';
import { recordWebhookDelivery } from '../metrics/instruments.js';
import { PortInUseError } from './ports.js';
import { connectTemporal } from './temporal-connection.js';
import { receiverSettingsFromConfig, startReceiverFromConfig } from '../webhooks/from-config.js';

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new InvalidArgumentError('a port is an integer from 0 to 65535');
  }
  return port;
}

export async function runWebhooksReceiver(opts: { port?: number; host?: string }): Promise<void> {
  const config = loadConfig();
  // Configuration problems are reported before any connection is tried.
  receiverSettingsFromConfig(config);
  storeSealerFromSettings(config);
  // Its delivery counters, when PCDS_METRICS_PORT is set (before the Temporal connection).
  await installMetricsExporter(config);
  const { client, close } = await connectTemporal(config);
  // Compact rows have no workflow to signal: their deliveries go to the workers' store, opened on
  // the first such delivery.
  const store = lazyBatchStore(() => openStoreFromSettings(config));
  try {
    const receiver = await startReceiverFromConfig({
      config,
      client,
      store,
      onDelivery: recordWebhookDelivery,
      ...opts,
    }).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      const port = opts.port ?? config.PCDS_WEBHOOK_PORT;
      throw new PortInUseError(
        `port ${port} (webhook receiver) is in use: pick another with --port or PCDS_WEBHOOK_PORT`,
      );
    });
    process.stderr.write(
      `webhook receiver listening on ${receiver.url}, for deliveries at ${receiver.publicUrl}/hooks/… ` +
        `(Temporal ${config.PCDS_TEMPORAL_ADDRESS}, namespace ${config.PCDS_TEMPORAL_NAMESPACE})\n`,
    );
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await receiver.stop();
    const s = receiver.stats();
    process.stderr.write(
      `webhook receiver stopped: ${s.signalled} forwarded, ${s.stored} kept for compact rows, ${s.duplicates} duplicates, ` +
        `${s.noWorkflow} for finished calls, ${s.refused} refused, ${s.malformed} malformed, ` +
        `${s.foreign} for another job, ${s.overBound} over a call's bound\n`,
    );
  } finally {
    await store.close();
    await close();
  }
}

export function registerWebhooksCommand(program: Command): void {
  program
    .command('webhooks')
    .description(
      'run the webhook receiver alone: deliveries at PCDS_WEBHOOK_PUBLIC_URL signal the waiting calls ' +
        '(a compact batch row: kept for it in the store, PCDS_STORE_URL) ' +
        '(needs PCDS_WEBHOOK_PUBLIC_URL and PCDS_WEBHOOK_SECRET; set PCDS_WEBHOOK_RECEIVER=standalone on the workers)',
    )
    .option('--port <port>', 'port to listen on (default PCDS_WEBHOOK_PORT, 8788)', parsePort)
    .option('--host <address>', 'address to listen on (default PCDS_WEBHOOK_HOST, 0.0.0.0)')
    .action(async (opts: { port?: number; host?: string }) => {
      await runWebhooksReceiver(opts);
    });
}
