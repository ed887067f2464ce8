// What the receiver lets through to each call: a delivery is signalled only while the call has a
// free slot (a small bound per call, so a leaked callback URL cannot flood its workflow), never
// twice, and never when it names a request_id other than the call's own once that is known.
// Losing this memory (a restart) is harmless: the workflow ignores deliveries it has acted on.

/** Signals one call can receive from this receiver: the delivery, and one retry or failure envelope. */
export const MAX_SIGNALS_PER_CALL = 2;
/** Look-ups of a call's own request_id before the receiver stops asking and relies on the bound. */
const MAX_CHECKS_PER_CALL = 4;

export type Admission =
  /** Already signalled: acknowledge, do nothing. */
  | 'duplicate'
  /** The call's slots are taken: acknowledge, do nothing. */
  | 'over_bound'
  /** Names another job than the call's: acknowledge, do nothing. */
  | 'foreign'
  /** A slot is reserved; learn the call's request_id first (then `afterCheck`). */
  | 'check'
  /** A slot is reserved: signal, then `signalled` or `release`. */
  | 'signal';

interface CallEntry {
  /** The call's own request_id, once known. */
  requestId?: string;
  signalled: Set<string>;
  /** Slots reserved: signals sent and in flight. */
  slots: number;
  checks: number;
}

export class CallDeliveries {
  private readonly calls = new Map<string, CallEntry>();

  constructor(
    private readonly capacity = 10_000,
    private readonly maxSignals = MAX_SIGNALS_PER_CALL,
  ) {}

  private entry(workflowId: string): CallEntry {
    let e = this.calls.get(workflowId);
    if (e) this.calls.delete(workflowId);
    else e = { signalled: new Set(), slots: 0, checks: 0 };
    // Re-inserting moves the call to the newest end of the Map's insertion order.
    this.calls.set(workflowId, e);
    if (this.calls.size > this.capacity) {
      const oldest = this.calls.keys().next().value;
      if (oldest !== undefined) this.calls.delete(oldest);
    }
    return e;
  }

  admit(workflowId: string, requestId: string | undefined): Admission {
    const e = this.entry(workflowId);
    if (e.signalled.has(requestId ?? '')) return 'duplicate';
    if (e.requestId !== undefined && requestId !== undefined && requestId !== e.requestId)
      return 'foreign';
    if (e.slots >= this.maxSignals) return 'over_bound';
    e.slots += 1;
    if (e.requestId !== undefined || e.checks >= MAX_CHECKS_PER_CALL) return 'signal';
    e.checks += 1;
    return 'check';
  }

  /** After a check: the call's request_id (if it has one yet) decides; a foreign delivery frees its slot. */
  afterCheck(
    workflowId: string,
    requestId: string | undefined,
    callRequestId: string | undefined,
  ): 'signal' | 'foreign' {
    const e = this.entry(workflowId);
    if (callRequestId !== undefined) e.requestId = callRequestId;
    if (e.requestId !== undefined && requestId !== undefined && requestId !== e.requestId) {
      e.slots -= 1;
      return 'foreign';
    }
    return 'signal';
  }

  signalled(workflowId: string, requestId: string | undefined): void {
    this.entry(workflowId).signalled.add(requestId ?? '');
  }

  /** The signal was not sent (Temporal refused it, or the call is gone): its slot is free again. */
  release(workflowId: string): void {
    const e = this.entry(workflowId);
    e.slots = Math.max(0, e.slots - 1);
  }

  get size(): number {
    return this.calls.size;
  }
}
