// Signals, queries and updates of the workflows, defined once so senders and handlers agree.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CallState } from './types';

/** A webhook delivery for the call's job, forwarded by the receiver after its token checked out. */
export interface WebhookDelivery {
  /**
   * The job the body names. Absent for a failure envelope, which carries no `data`: the URL's
   * token still ties it to this call, and the workflow confirms it with one poll.
   */
  requestId?: string;
  /** The delivered body as received (the poll's envelope); the workflow checks it against the contract. */
  body: unknown;
}

export const webhookDeliveredSignal = defineSignal<[WebhookDelivery]>('webhookDelivered');
export const callStateQuery = defineQuery<CallState>('callState');
