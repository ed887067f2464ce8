// The HTTP receiver for callback deliveries: checks the URL's token before reading anything else,
// reads the body within a deadline and signals the waiting call workflow, a bounded number of
// times per call and only with its own job. A compact batch's row has no workflow: its delivery
// is kept (sealed) in the store, where the row's activity reads it. The receiver keeps no state
// that matters; a restart loses nothing, since a call whose delivery is missed falls back to polling.
import type { AddressInfo } from 'node:net';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { callStateQuery, webhookDeliveredSignal, type WebhookDelivery } from '../calls/signals.js';
import { createBoundedServer, listenerLimits } from '../http/listener-limits.js';
import { rowOfWorkflowId } from '../temporal/workflow-ids.js';
import type { BatchStore } from '../store/batch-store.js';
import { CallDeliveries } from './call-deliveries.js';
import { readDelivery } from './delivery.js';
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

/** What the receiver did with deliveries since it started, for operators and tests. */
export interface ReceiverStats {
  signalled: number;
  /** Kept in the store for a compact row's activity. */
  stored: number;
  duplicates: number;
  /** Token valid but the call is finished or unknown: acknowledged without effect. */
  noWorkflow: number;
  refused: number;
  malformed: number;
  /** Named a request_id other than the call's: dropped before any signal. */
  foreign: number;
  /** Beyond the call's bound of signals (a flood): dropped. */
  overBound: number;
  /** Temporal (or the store) could not take the delivery; answered 503 so the service retries. */
  failed: number;
}

/** How one delivery ended: the counter of ReceiverStats it adds to. */
export type DeliveryOutcome = keyof ReceiverStats;

export interface WebhookReceiver {
  /** Local address the receiver listens on (not the public URL). */
  url: string;
  stats(): ReceiverStats;
  stop(): Promise<void>;
}

/** Where one delivery goes: a workflow's signal, or the store for a compact row. */
type DeliveryTarget =
  | { kind: 'workflow' }
  | { kind: 'compact'; store: BatchStore; batchId: string; row: number; requestId?: string }
  /** The id has a row's shape and the store could not say whether it is a compact row. */
  | { kind: 'store_unreachable' };

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
  const timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
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
  const log = options.log ?? pinoLog(app);
  const calls = new CallDeliveries();
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

  /** The call's own request_id (undefined while it has none or did not answer in time); gone: no such call. */
  const callRequestId = async (
    workflowId: string,
  ): Promise<{ gone: true } | { gone: false; requestId: string | undefined }> => {
    try {
      const state = await client.withDeadline(Date.now() + timeouts.queryMs, () =>
        client.workflow.getHandle(workflowId).query(callStateQuery),
      );
      return { gone: false, requestId: state.requestId };
    } catch (err) {
      return err instanceof WorkflowNotFoundError
        ? { gone: true }
        : { gone: false, requestId: undefined };
    }
  };

  /**
   * Where a delivery goes. Only a compact row has an entry in the store's submit journal (made
   * before its POST, so before any delivery): an id of a row's shape with an entry is a compact
   * row, any other id a workflow. The journal also gives the row's request_id once accepted.
   */
  const targetOf = async (workflowId: string): Promise<DeliveryTarget> => {
    const row = options.store ? rowOfWorkflowId(workflowId) : undefined;
    if (!options.store || !row) return { kind: 'workflow' };
    try {
      const store = await options.store.get();
      const entry = await store.rowEntry(row.batchId, row.row);
      if (!entry) return { kind: 'workflow' };
      return {
        kind: 'compact',
        store,
        ...row,
        ...(entry.state === 'accepted' && entry.requestId ? { requestId: entry.requestId } : {}),
      };
    } catch {
      return { kind: 'store_unreachable' };
    }
  };

  /** Answered when nothing could take a delivery now: the service tries it again. */
  const unavailable = (reply: FastifyReply) =>
    reply.code(503).header('Retry-After', '5').send({ error: 'temporarily_unavailable' });

  // Bodies are parsed by the route itself, whatever their content type: the default JSON
  // parser's errors quote the body, which may hold PII.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  // The token is checked as soon as the request line is routed, before the body is read: a
  // sender without a valid URL gets a 404 and holds no buffer, whatever it announced.
  const checkToken = async (
    request: FastifyRequest<{ Params: HookParams }>,
    reply: FastifyReply,
  ) => {
    const { secretId, workflowId, token } = request.params;
    if (!verifyCallbackToken(secretId, workflowId, token, settings)) {
      tally('refused');
      // The same answer as for any unknown path: a guess learns nothing.
      return notFound(reply);
    }
  };

  const handleDelivery = async (
    request: FastifyRequest<{ Params: HookParams }>,
    reply: FastifyReply,
  ) => {
    const { workflowId } = request.params;
    const reading = readDelivery(typeof request.body === 'string' ? request.body : '');
    if (!reading.ok) {
      tally('malformed');
      log.warn({ workflowId, reason: reading.reason }, 'webhook delivery refused: malformed body');
      return reply.code(400).send({ error: 'malformed_delivery', reason: reading.reason });
    }
    const { requestId } = reading;
    const target = await targetOf(workflowId);
    const finishedCall = () => {
      // The call already finished (e.g. by its fallback poll) or never existed here.
      tally('noWorkflow');
      calls.signalled(workflowId, requestId);
      log.info(
        { workflowId, requestId },
        'webhook delivery for a finished or unknown call: acknowledged',
      );
      return reply.code(200).send({ received: true });
    };
    const notForwarded = (err: unknown, to: 'Temporal' | 'the store') => {
      calls.release(workflowId);
      tally('failed');
      log.warn(
        { workflowId, requestId, error: err instanceof Error ? err.name : 'unknown' },
        `webhook delivery not forwarded: ${to} did not take it`,
      );
      return unavailable(reply);
    };
    // No workflow by that id: a finished call, unless the store (down) may hold a compact row.
    const noSuchWorkflow = () => {
      if (target.kind === 'store_unreachable')
        return notForwarded(new Error('store unreachable'), 'the store');
      calls.release(workflowId);
      return finishedCall();
    };
    // Deliveries dropped here are acknowledged: a retry would change nothing.
    let admission = calls.admit(workflowId, requestId);
    if (admission === 'check') {
      if (target.kind === 'compact') {
        admission = calls.afterCheck(workflowId, requestId, target.requestId);
      } else {
        const own = await callRequestId(workflowId);
        if (own.gone) return noSuchWorkflow();
        admission = calls.afterCheck(workflowId, requestId, own.requestId);
      }
    }
    if (admission === 'duplicate') {
      tally('duplicates');
      return reply.code(200).send({ received: true, duplicate: true });
    }
    if (admission === 'foreign' || admission === 'over_bound') {
      if (admission === 'foreign') tally('foreign');
      else tally('overBound');
      log.warn({ workflowId, reason: admission }, 'webhook delivery dropped');
      return reply.code(200).send({ received: true });
    }
    if (target.kind === 'compact') {
      let kept;
      try {
        kept = await target.store.recordDelivery(
          target.batchId,
          target.row,
          requestId,
          reading.body,
        );
      } catch (err) {
        return notForwarded(err, 'the store');
      }
      if (kept === 'finished') {
        calls.release(workflowId);
        return finishedCall();
      }
      calls.signalled(workflowId, requestId);
      if (kept === 'duplicate') {
        tally('duplicates');
        return reply.code(200).send({ received: true, duplicate: true });
      }
      if (kept === 'over_bound') {
        tally('overBound');
        log.warn({ workflowId, reason: kept }, 'webhook delivery dropped');
      } else tally('stored');
      return reply.code(200).send({ received: true });
    }
    const delivery: WebhookDelivery = { ...(requestId ? { requestId } : {}), body: reading.body };
    try {
      await client.workflow.getHandle(workflowId).signal(webhookDeliveredSignal, delivery);
      tally('signalled');
      calls.signalled(workflowId, requestId);
      return reply.code(200).send({ received: true });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) return notForwarded(err, 'Temporal');
      return noSuchWorkflow();
    }
  };

  app.setNotFoundHandler((_request, reply) => notFound(reply));
  const route = `${CALLBACK_PATH_PREFIX}/:secretId/:workflowId/:token`;
  app.post(route, { onRequest: checkToken }, handleDelivery);
  // Behind a proxy that keeps the public URL's path prefix, answer there too.
  const prefix = new URL(settings.publicUrl).pathname.replace(/\/+$/, '');
  if (prefix) app.post(`${prefix}${route}`, { onRequest: checkToken }, handleDelivery);
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
