// The HTTP receiver for callback deliveries: checks the URL's token, reads the body and signals
// the waiting call workflow. It keeps no state that matters; a restart loses nothing, since a
// call whose delivery is missed falls back to polling.
import type { AddressInfo } from 'node:net';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { webhookDeliveredSignal, type WebhookDelivery } from '../workflows/signals.js';
import { readDelivery } from './delivery.js';
import { RecentDeliveries } from './recent-deliveries.js';
import type { WebhookSettings } from './settings.js';
import { CALLBACK_PATH_PREFIX, verifyCallbackToken } from './token.js';

/** pino-compatible; only ids and fixed reasons are ever passed to it, never a body or a token. */
export interface ReceiverLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface WebhookReceiverOptions {
  settings: WebhookSettings;
  /** Temporal client used to signal the call workflows. */
  client: Client;
  /** 0 picks a free port. */
  port: number;
  host?: string;
  /** Default: Fastify's pino logger to stderr, warnings only (routine acknowledgements stay quiet). */
  log?: ReceiverLog;
  /** Largest body accepted, in bytes; a signal carries at most 2 MB. Default 1.5 MB. */
  bodyLimit?: number;
}

/** What the receiver did with deliveries since it started, for operators and tests. */
export interface ReceiverStats {
  signalled: number;
  duplicates: number;
  /** Token valid but the call is finished or unknown: acknowledged without effect. */
  noWorkflow: number;
  refused: number;
  malformed: number;
  /** Temporal could not take the signal; answered 503 so the service retries. */
  failed: number;
}

export interface WebhookReceiver {
  /** Local address the receiver listens on (not the public URL). */
  url: string;
  stats(): ReceiverStats;
  stop(): Promise<void>;
}

interface HookParams {
  secretId: string;
  workflowId: string;
  token: string;
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

export async function startWebhookReceiver(
  options: WebhookReceiverOptions,
): Promise<WebhookReceiver> {
  const { settings, client } = options;
  const app = Fastify({
    logger: options.log ? false : { level: 'warn', serializers: { req: redactedRequest } },
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit ?? 1_500_000,
    // Workflow ids can be long; the default limit of 100 characters would turn them into 404s.
    routerOptions: { maxParamLength: 1_000 },
  });
  const log = options.log ?? pinoLog(app);
  const recent = new RecentDeliveries();
  const stats: ReceiverStats = {
    signalled: 0,
    duplicates: 0,
    noWorkflow: 0,
    refused: 0,
    malformed: 0,
    failed: 0,
  };

  // Bodies are parsed by the route itself, whatever their content type: the default JSON
  // parser's errors quote the body, which may hold PII.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const handleDelivery = async (
    request: FastifyRequest<{ Params: HookParams }>,
    reply: FastifyReply,
  ) => {
    const { secretId, workflowId, token } = request.params;
    if (!verifyCallbackToken(secretId, workflowId, token, settings)) {
      stats.refused += 1;
      // The same answer as for any unknown path: a guess learns nothing.
      return notFound(reply);
    }
    const reading = readDelivery(typeof request.body === 'string' ? request.body : '');
    if (!reading.ok) {
      stats.malformed += 1;
      log.warn({ workflowId, reason: reading.reason }, 'webhook delivery refused: malformed body');
      return reply.code(400).send({ error: 'malformed_delivery', reason: reading.reason });
    }
    const { requestId } = reading;
    const dedupeKey = requestId ?? '';
    if (recent.has(workflowId, dedupeKey)) {
      stats.duplicates += 1;
      return reply.code(200).send({ received: true, duplicate: true });
    }
    const delivery: WebhookDelivery = { ...(requestId ? { requestId } : {}), body: reading.body };
    try {
      await client.workflow.getHandle(workflowId).signal(webhookDeliveredSignal, delivery);
      stats.signalled += 1;
      recent.add(workflowId, dedupeKey);
      return reply.code(200).send({ received: true });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        // The call already finished (e.g. by its fallback poll) or never existed here.
        stats.noWorkflow += 1;
        recent.add(workflowId, dedupeKey);
        log.info(
          { workflowId, requestId },
          'webhook delivery for a finished or unknown call: acknowledged',
        );
        return reply.code(200).send({ received: true });
      }
      stats.failed += 1;
      log.warn(
        { workflowId, requestId, error: err instanceof Error ? err.name : 'unknown' },
        'webhook delivery not forwarded: Temporal did not take the signal',
      );
      return reply.code(503).header('Retry-After', '5').send({ error: 'temporarily_unavailable' });
    }
  };

  app.setNotFoundHandler((_request, reply) => notFound(reply));
  const route = `${CALLBACK_PATH_PREFIX}/:secretId/:workflowId/:token`;
  app.post(route, handleDelivery);
  // Behind a proxy that keeps the public URL's path prefix, answer there too.
  const prefix = new URL(settings.publicUrl).pathname.replace(/\/+$/, '');
  if (prefix) app.post(`${prefix}${route}`, handleDelivery);
  app.get('/healthz', async () => ({ ok: true }));

  await app.listen({ port: options.port, host: options.host ?? '0.0.0.0' });
  const address = app.server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    stats: () => ({ ...stats }),
    stop: () => app.close(),
  };
}
