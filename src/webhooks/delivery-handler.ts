// What the receiver does with one callback delivery whose URL token was already checked: read the
// body, find where it goes, admit it (once per job, only the call's own job, within the call's
// bound), then keep it in the store for a compact row or signal the call workflow. Each delivery
// ends in one outcome, counted; a failure to forward answers 503 so the service tries again.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { webhookDeliveredSignal, type WebhookDelivery } from '../calls/signals.js';
import type { BatchStore } from '../store/batch-store.js';
import type { CallDeliveries } from './call-deliveries.js';
import { readDelivery } from './delivery.js';
import { callRequestId, deliveryTarget, type DeliveryTarget } from './delivery-routing.js';

/** pino-compatible; only ids and fixed reasons are ever passed to it, never a body or a token. */
export interface ReceiverLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

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

/** The path parameters of a callback URL. */
export interface HookParams {
  secretId: string;
  workflowId: string;
  token: string;
}

/** What handling a delivery needs of the receiver. */
export interface DeliveryContext {
  client: Client;
  store?: { get(): Promise<BatchStore> };
  /** How long to wait for a call's state before signalling without it. */
  queryMs: number;
  calls: CallDeliveries;
  log: ReceiverLog;
  tally(outcome: DeliveryOutcome): void;
}

/** One delivery under way: its ids, its reply, and the answers that end it. */
interface Delivery {
  workflowId: string;
  requestId: string | undefined;
  reply: FastifyReply;
}

/** Answered when nothing could take a delivery now: the service tries it again. */
const unavailable = (reply: FastifyReply) =>
  reply.code(503).header('Retry-After', '5').send({ error: 'temporarily_unavailable' });

/** The call already finished (e.g. by its fallback poll) or never existed here. */
function finishedCall(ctx: DeliveryContext, { workflowId, requestId, reply }: Delivery) {
  ctx.tally('noWorkflow');
  ctx.calls.signalled(workflowId, requestId);
  ctx.log.info(
    { workflowId, requestId },
    'webhook delivery for a finished or unknown call: acknowledged',
  );
  return reply.code(200).send({ received: true });
}

function notForwarded(
  ctx: DeliveryContext,
  { workflowId, requestId, reply }: Delivery,
  err: unknown,
  to: 'Temporal' | 'the store',
) {
  ctx.calls.release(workflowId);
  ctx.tally('failed');
  ctx.log.warn(
    { workflowId, requestId, error: err instanceof Error ? err.name : 'unknown' },
    `webhook delivery not forwarded: ${to} did not take it`,
  );
  return unavailable(reply);
}

/** No workflow by that id: a finished call, unless the store (down) may hold a compact row. */
function noSuchWorkflow(ctx: DeliveryContext, delivery: Delivery, target: DeliveryTarget) {
  if (target.kind === 'store_unreachable')
    return notForwarded(ctx, delivery, new Error('store unreachable'), 'the store');
  ctx.calls.release(delivery.workflowId);
  return finishedCall(ctx, delivery);
}

/** A compact row's delivery, kept in the store where the row's activity reads it. */
async function keepForRow(
  ctx: DeliveryContext,
  delivery: Delivery,
  target: Extract<DeliveryTarget, { kind: 'compact' }>,
  body: WebhookDelivery['body'],
) {
  const { workflowId, requestId, reply } = delivery;
  let kept;
  try {
    kept = await target.store.recordDelivery(target.batchId, target.row, requestId, body);
  } catch (err) {
    return notForwarded(ctx, delivery, err, 'the store');
  }
  if (kept === 'finished') {
    ctx.calls.release(workflowId);
    return finishedCall(ctx, delivery);
  }
  ctx.calls.signalled(workflowId, requestId);
  if (kept === 'duplicate') {
    ctx.tally('duplicates');
    return reply.code(200).send({ received: true, duplicate: true });
  }
  if (kept === 'over_bound') {
    ctx.tally('overBound');
    ctx.log.warn({ workflowId, reason: kept }, 'webhook delivery dropped');
  } else ctx.tally('stored');
  return reply.code(200).send({ received: true });
}

/** A call's delivery, signalled to its workflow. */
async function signalCall(
  ctx: DeliveryContext,
  delivery: Delivery,
  target: DeliveryTarget,
  body: WebhookDelivery['body'],
) {
  const { workflowId, requestId, reply } = delivery;
  const signal: WebhookDelivery = { ...(requestId ? { requestId } : {}), body };
  try {
    await ctx.client.workflow.getHandle(workflowId).signal(webhookDeliveredSignal, signal);
    ctx.tally('signalled');
    ctx.calls.signalled(workflowId, requestId);
    return reply.code(200).send({ received: true });
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError))
      return notForwarded(ctx, delivery, err, 'Temporal');
    return noSuchWorkflow(ctx, delivery, target);
  }
}

/** The route handler of a callback URL (its token checked before the body was read). */
export const deliveryHandler =
  (ctx: DeliveryContext) =>
  async (request: FastifyRequest<{ Params: HookParams }>, reply: FastifyReply) => {
    const { workflowId } = request.params;
    const reading = readDelivery(typeof request.body === 'string' ? request.body : '');
    if (!reading.ok) {
      ctx.tally('malformed');
      ctx.log.warn(
        { workflowId, reason: reading.reason },
        'webhook delivery refused: malformed body',
      );
      return reply.code(400).send({ error: 'malformed_delivery', reason: reading.reason });
    }
    const { requestId } = reading;
    const delivery: Delivery = { workflowId, requestId, reply };
    const target = await deliveryTarget(ctx.store, workflowId);
    // Deliveries dropped here are acknowledged: a retry would change nothing.
    let admission = ctx.calls.admit(workflowId, requestId);
    if (admission === 'check') {
      if (target.kind === 'compact') {
        admission = ctx.calls.afterCheck(workflowId, requestId, target.requestId);
      } else {
        const own = await callRequestId(ctx.client, workflowId, ctx.queryMs);
        if (own.gone) return noSuchWorkflow(ctx, delivery, target);
        admission = ctx.calls.afterCheck(workflowId, requestId, own.requestId);
      }
    }
    if (admission === 'duplicate') {
      ctx.tally('duplicates');
      return reply.code(200).send({ received: true, duplicate: true });
    }
    if (admission === 'foreign' || admission === 'over_bound') {
      if (admission === 'foreign') ctx.tally('foreign');
      else ctx.tally('overBound');
      ctx.log.warn({ workflowId, reason: admission }, 'webhook delivery dropped');
      return reply.code(200).send({ received: true });
    }
    if (target.kind === 'compact') return keepForRow(ctx, delivery, target, reading.body);
    return signalCall(ctx, delivery, target, reading.body);
  };
