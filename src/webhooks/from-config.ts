// Starting the receiver from configuration, as the worker does and `pcds webhooks` does alone.
import type { Client } from '@temporalio/client';
import { configuredListenerLimits, type Config } from '../config.js';
import { callbackUrlsFor } from './callback-urls.js';
import type { RowDeliveryStore } from './delivery-routing.js';
import {
  startWebhookReceiver,
  type DeliveryOutcome,
  type ReceiverLog,
  type WebhookReceiver,
} from './receiver.js';
import { webhookSettings, type WebhookSettings } from './settings.js';

export interface ConfiguredReceiverOptions {
  config: Config;
  client: Client;
  /** Default PCDS_WEBHOOK_PORT. */
  port?: number;
  /** Default PCDS_WEBHOOK_HOST. */
  host?: string;
  log?: ReceiverLog;
  /** Told how each delivery ended (the worker and `pcds webhooks` pass their metrics' recorder). */
  onDelivery?: (outcome: DeliveryOutcome) => void;
  /** Where compact rows read their deliveries: the store the workers use (PCDS_STORE_URL). */
  store?: { get(): Promise<RowDeliveryStore> };
}

/**
 * The receiver's settings, refused (with the reason) when incomplete or when the service would
 * refuse the public URL: no delivery could ever arrive. Check this before connecting anywhere.
 */
export function receiverSettingsFromConfig(config: Config): WebhookSettings {
  const settings = webhookSettings(config);
  callbackUrlsFor(settings);
  return settings;
}

export async function startReceiverFromConfig(
  opts: ConfiguredReceiverOptions,
): Promise<WebhookReceiver & { publicUrl: string }> {
  const settings = receiverSettingsFromConfig(opts.config);
  // The bounds PCDS_LISTEN_* set (only those set: the receiver's own deadlines are its defaults).
  const { maxConnections, ...deadlines } = configuredListenerLimits(opts.config);
  const receiver = await startWebhookReceiver({
    settings,
    client: opts.client,
    port: opts.port ?? opts.config.PCDS_WEBHOOK_PORT,
    host: opts.host ?? opts.config.PCDS_WEBHOOK_HOST,
    // A delivery carries a result the workflow takes up to PCDS_MAX_RESULT_BYTES, in an envelope.
    bodyLimit: opts.config.PCDS_MAX_RESULT_BYTES + 64 * 1024,
    timeouts: deadlines,
    ...(maxConnections !== undefined ? { maxConnections } : {}),
    ...(opts.log ? { log: opts.log } : {}),
    ...(opts.onDelivery ? { onDelivery: opts.onDelivery } : {}),
    ...(opts.store ? { store: opts.store } : {}),
  });
  return { ...receiver, publicUrl: settings.publicUrl };
}
