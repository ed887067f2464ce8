// The HTTP receiver for callback deliveries: checks the URL's token before reading anything else,
// reads the body within a deadline and signals the waiting call workflow, a bounded number of
// times per call and only with its own job. A compact batch's row has no workflow: its delivery
// is kept (sealed) in the store, where the row's activity reads it. The receiver keeps no state
// that matters; a restart loses nothing, since a call whose delivery is missed falls back to polling.
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { createBoundedServer, listenerLimits } from '../http/listener-limits.js';
import type { BatchStore } from '../store/batch-store.js';
import { CallDeliveries } from './call-deliveries.js';
import {
  deliveryHandler,
  type DeliveryOutcome,
  type HookParams,
  type ReceiverLog,
  type ReceiverStats,
} from './delivery-handler.js';
import type { WebhookSettings } from './settings.js';
import { CALLBACK_PATH_PREFIX, verifyCallbackToken } from './token.js';

export type { DeliveryOutcome, ReceiverLog, ReceiverStats } from './delivery-handler.js';

export interface WebhookReceiverOptions {
  settings: WebhookSettings;
  /** Temporal client used to signal the call workflows. */
  client: Client;
  /**
   * The store where compact rows read their deliveries (the worker's, opened on first use).
   * Without it, every delivery is signalled to a workflow.
   */
  store?: { get(): Promise<BatchStore> };
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** Default: Fastify's pino logger to stderr, warnings only (routine acknowledgements stay quiet). */
  log?: ReceiverLog;
  /**
   * Largest body accepted, in bytes: a delivery is a poll's envelope, whose result the workflow
   * takes up to PCDS_MAX_RESULT_BYTES. Default 1 MB + 64 KB.
   */
  bodyLimit?: number;
  /** Deadlines of a delivery; a sender too slow to meet them is cut off (408). */
  timeouts?: Partial<ReceiverTimeouts>;
  /** Connections open at once (PCDS_LISTEN_MAX_CONNECTIONS); one more is closed as it arrives. */
  maxConnections?: number;
  /** Told how each delivery ended: where the receiver is started, its metrics count them. */
  onDelivery?: (outcome: DeliveryOutcome) => void;
}

export interface ReceiverTimeouts {
  /** Headers complete within this. Default 5 s. */
  headersMs: number;
  /** The whole request, body included, within this. Default 15 s. */
  requestMs: number;
  /** A connection silent this long is closed. Default 15 s. */
  idleMs: number;
  /** How long the receiver waits for a call's state before it signals without it. Default 3 s. */
  queryMs: number;
}

const DEFAULT_TIMEOUTS: ReceiverTimeouts = {
  headersMs: 5_000,
  requestMs: 15_000,
  idleMs: 15_000,
  queryMs: 3_000,
};

/** The default body limit: the default PCDS_MAX_RESULT_BYTES and room for the envelope. */
export const DEFAULT_RECEIVER_BODY_LIMIT = 1024 * 1024 + 64 * 1024;

export interface WebhookReceiver {
  /** Local address the receiver listens on (not the public URL). */
  url: string;
  stats(): ReceiverStats;
  stop(): Promise<void>;
}

/** Request logs must never show the path: it holds the token. */
const redactedRequest = (req: FastifyRequest) => ({ method: req.method, url: '[redacted]' });

/** One fixed answer for unknown paths and refused tokens; it does not echo the path. */
function notFound(reply: FastifyReply): FastifyReply {
  return reply.code(404).send({ error: 'not_found' });
}

function pinoLog(app: FastifyInstance): ReceiverLog {
  return {
    info: (fields, message) => app.log.info(fields, message),
    warn: (fields, message) => app.log.warn(fields, message),
  };
}

/**
 * The Fastify app of the receiver, with no routes yet: Node's own deadlines on every connection
 * and bodies kept as raw text for the route to read.
 */
function receiverApp(options: WebhookReceiverOptions, timeouts: ReceiverTimeouts): FastifyInstance {
  const app = Fastify({
    logger: options.log ? false : { level: 'warn', serializers: { req: redactedRequest } },
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit ?? DEFAULT_RECEIVER_BODY_LIMIT,
    // Workflow ids can be long; the default limit of 100 characters would turn them into 404s.
    routerOptions: { maxParamLength: 1_000 },
    // Node's own deadlines (Fastify's defaults leave a slow sender holding a connection and its
    // buffer forever), checked every second rather than every 30.
    serverFactory: (handler) => {
      const server = createBoundedServer(
        listenerLimits({
          headersMs: timeouts.headersMs,
          requestMs: timeouts.requestMs,
          maxConnections: options.maxConnections,
        }),
        handler,
      );
      server.setTimeout(timeouts.idleMs);
      return server;
    },
  });
  // Bodies are parsed by the route itself, whatever their content type: the default JSON
  // parser's errors quote the body, which may hold PII.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  return app;
}

/**
 * The token is checked as soon as the request line is routed, before the body is read: a sender
 * without a valid URL gets a 404 and holds no buffer, whatever it announced.
 */
const tokenCheck =
  (settings: WebhookSettings, tally: (outcome: DeliveryOutcome) => void) =>
  async (request: FastifyRequest<{ Params: HookParams }>, reply: FastifyReply) => {
    const { secretId, workflowId, token } = request.params;
    if (!verifyCallbackToken(secretId, workflowId, token, settings)) {
      tally('refused');
      // The same answer as for any unknown path: a guess learns nothing.
      return notFound(reply);
    }
  };

/** Listens and gives the receiver's local URL (an IPv6 host in brackets). */
async function listenOn(app: FastifyInstance, port: number, host: string): Promise<string> {
  await app.listen({ port, host });
  const address = app.server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shown}:${address.port}`;
}

export async function startWebhookReceiver(
  options: WebhookReceiverOptions,
): Promise<WebhookReceiver> {
  const { settings, client } = options;
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const app = receiverApp(options, timeouts);
  const stats: ReceiverStats = {
    signalled: 0,
    stored: 0,
    duplicates: 0,
    noWorkflow: 0,
    refused: 0,
    malformed: 0,
    foreign: 0,
    overBound: 0,
    failed: 0,
  };
  const tally = (outcome: DeliveryOutcome) => {
    stats[outcome] += 1;
    options.onDelivery?.(outcome);
  };
  const handleDelivery = deliveryHandler({
    client,
    ...(options.store ? { store: options.store } : {}),
    queryMs: timeouts.queryMs,
    calls: new CallDeliveries(),
    log: options.log ?? pinoLog(app),
    tally,
  });
  const checkToken = tokenCheck(settings, tally);

  app.setNotFoundHandler((_request, reply) => notFound(reply));
  const route = `${CALLBACK_PATH_PREFIX}/:secretId/:workflowId/:token`;
  app.post(route, { onRequest: checkToken }, handleDelivery);
  // Behind a proxy that keeps the public URL's path prefix, answer there too.
  const prefix = new URL(settings.publicUrl).pathname.replace(/\/+$/, '');
  if (prefix) app.post(`${prefix}${route}`, { onRequest: checkToken }, handleDelivery);
  app.get('/healthz', async () => ({ ok: true }));

  const url = await listenOn(app, options.port, options.host ?? '0.0.0.0');
  return {
    url,
    stats: () => ({ ...stats }),
    stop: () => app.close(),
  };
}
