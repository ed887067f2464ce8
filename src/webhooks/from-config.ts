// Starting the receiver from configuration, as the worker does and `pcds webhooks` does alone.
import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import { callbackUrlsFor } from './callback-urls';
import { startWebhookReceiver, type ReceiverLog, type WebhookReceiver } from './receiver';
import { webhookSettings } from './settings';

export interface ConfiguredReceiverOptions {
  config: Config;
  client: Client;
  /** Default PCDS_WEBHOOK_PORT. */
  port?: number;
  /** Default PCDS_WEBHOOK_HOST. */
  host?: string;
  log?: ReceiverLog;
}

export async function startReceiverFromConfig(
  opts: ConfiguredReceiverOptions,
): Promise<WebhookReceiver & { publicUrl: string }> {
  const settings = webhookSettings(opts.config);
  // Refuse to start behind a public URL the service would refuse: no delivery could ever arrive.
  callbackUrlsFor(settings);
  const receiver = await startWebhookReceiver({
    settings,
    client: opts.client,
    port: opts.port ?? opts.config.PCDS_WEBHOOK_PORT,
    host: opts.host ?? opts.config.PCDS_WEBHOOK_HOST,
    ...(opts.log ? { log: opts.log } : {}),
  });
  return { ...receiver, publicUrl: settings.publicUrl };
}
