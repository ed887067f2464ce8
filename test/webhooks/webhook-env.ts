// What a webhook-mode test needs: the emulator delivering to loopback, a receiver on 127.0.0.1,
// worker activities that put a callback URL on each submit, and a typed client.
import { createActivities } from '../../src/activities/index.js';
import { createPcdsClient, type PcdsClient } from '../../src/client.js';
import type { EmulatorOptionsInput } from '../../src/emulator/index.js';
import { unthrottled } from '../../src/throttle/permits.js';
import type { LazyBatchStore } from '../../src/store/index.js';
import { callbackUrlsFor } from '../../src/webhooks/callback-urls.js';
import {
  startWebhookReceiver,
  type ReceiverLog,
  type WebhookReceiver,
} from '../../src/webhooks/receiver.js';
import type { WebhookSettings } from '../../src/webhooks/settings.js';
import { connectClient, withWorker } from '../harness/temporal.js';
import { startCallEnv, type CallEnv } from '../calls/call-env.js';

export interface WebhookEnv extends CallEnv {
  settings: WebhookSettings;
  /** Set by withWebhookWorker for the duration of its callback. */
  receiver?: WebhookReceiver;
  log: ReceiverLog & { lines: string[] };
}

export function capturingLog(): ReceiverLog & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (fields, message) => lines.push(JSON.stringify({ ...fields, message })),
    warn: (fields, message) => lines.push(JSON.stringify({ ...fields, message })),
  };
}

export async function startWebhookEnv(
  emulatorOptions: EmulatorOptionsInput = {},
): Promise<WebhookEnv> {
  const env = await startCallEnv({ allowLoopbackCallbacks: true, ...emulatorOptions });
  const settings: WebhookSettings = {
    // Replaced by the receiver's address once it listens.
    publicUrl: 'http://127.0.0.1',
    current: { id: 'k1', secret: 'webhook-test-secret-0123456789' },
    previous: [],
    allowLoopback: true,
    fallbackPollMs: 60_000,
  };
  return { ...env, settings, log: capturingLog() };
}

export interface WebhookWorkerContext {
  client: PcdsClient;
  receiver: WebhookReceiver;
  /** Starts the receiver again on the same port (after receiver.stop()). */
  restartReceiver(): Promise<WebhookReceiver>;
  taskQueue: string;
}

/**
 * Runs `fn` with a receiver, a worker whose submits carry callback URLs to it, and a client
 * whose calls poll only every `fallbackPollMs` while they wait for deliveries. With `store`, the
 * receiver keeps compact rows' deliveries there, and the worker's activities read it (looking
 * for a delivery every `deliveryCheckMs`).
 */
export async function withWebhookWorker<T>(
  env: WebhookEnv,
  opts: {
    fallbackPollMs: number;
    store?: LazyBatchStore;
    deliveryCheckMs?: number;
    /** A task queue of the caller's (another worker's, say); default a new one. */
    taskQueue?: string;
  },
  fn: (ctx: WebhookWorkerContext) => Promise<T>,
): Promise<T> {
  const { client: temporal, connection: receiverConnection } = await connectClient();
  const kept = opts.store ? { store: opts.store } : {};
  let receiver = await startWebhookReceiver({
    settings: env.settings,
    client: temporal,
    port: 0,
    host: '127.0.0.1',
    log: env.log,
    ...kept,
  });
  const port = Number(new URL(receiver.url).port);
  const settings: WebhookSettings = { ...env.settings, publicUrl: receiver.url };
  const activities = createActivities({
    config: opts.deliveryCheckMs
      ? { ...env.config, PCDS_WEBHOOK_DELIVERY_CHECK_MS: opts.deliveryCheckMs }
      : env.config,
    clients: env.clients,
    permits: unthrottled,
    callbackUrlFor: callbackUrlsFor(settings),
    ...kept,
  });
  try {
    const queue = opts.taskQueue ? { taskQueue: opts.taskQueue } : {};
    return await withWorker({ activities, ...queue }, async ({ taskQueue, namespace, address }) => {
      const { connection } = await connectClient({ address, namespace });
      const client = await createPcdsClient({
        connection,
        namespace,
        taskQueue,
        defaults: {
          // A delivery is the point: the calls skip the result cache.
          cache: false,
          pollIntervalMs: 100,
          maxWaitMs: 30_000,
          webhookFallbackPollMs: opts.fallbackPollMs,
        },
      });
      try {
        return await fn({
          client,
          receiver,
          taskQueue,
          async restartReceiver() {
            receiver = await startWebhookReceiver({
              settings: env.settings,
              client: temporal,
              port,
              host: '127.0.0.1',
              log: env.log,
              ...kept,
            });
            return receiver;
          },
        });
      } finally {
        await client.close();
        await connection.close();
      }
    });
  } finally {
    await receiver.stop().catch(() => undefined);
    await receiverConnection.close();
  }
}

export type { CallEnv };
