// How callers talk to a key's throttle workflow: its id, input, updates, signal and query,
// defined once so the permit gate, the operator commands and other workflows agree.
// Workflow code may import this module (it only defines messages).
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { PermitAsk, SchedulerPolicy, SchedulerSnapshot } from './scheduler.js';
import type {
  PermitAnswer,
  RateLimitEvent,
  ThrottleSettings,
  ThrottleSnapshot,
  ThrottleState,
  ThrottleTiming,
  WindowLimits,
} from './windows.js';

export const THROTTLE_WORKFLOW_TYPE = 'pcdsKeyThrottle';
/** Every type a key's throttle runs under: the current one, then release 0.1.x's. */
export const THROTTLE_WORKFLOW_TYPES = [THROTTLE_WORKFLOW_TYPE, 'throttle'] as const;

/** One throttle workflow per key id; the id reveals no secret (key ids are labels). */
export function throttleWorkflowId(keyId: string): string {
  return `throttle-${keyId}`;
}

export function keyIdOfThrottleWorkflow(workflowId: string): string | undefined {
  return workflowId.startsWith('throttle-') ? workflowId.slice('throttle-'.length) : undefined;
}

export interface ThrottleInput {
  keyId: string;
  settings: ThrottleSettings;
  /** Carried across continue-as-new. */
  state?: ThrottleState;
}

/**
 * A new reservation, or the confirmation of one made earlier for `confirmAt`:
 * - `leadMs`: how long the answer takes to reach the caller (its measured round trip); grants
 *   start that late;
 * - `move` (with confirmAt): the caller is past the reserved time; move it to a fresh slot;
 * - `followUps` (a new submit): the later requests (polls) its job needs held (default 1; 0 with
 *   a webhook);
 * - `requester`: who asks (absent from senders before requesters existed: the operator's
 *   interactive work);
 * - `credits` (a submit): what its job costs when found, for its tenant's daily budget.
 */
export type PermitRequest = PermitAsk;

/** The requests one worker process gathered for a key; answered in order. */
export interface PermitBatch {
  requests: PermitRequest[];
  /** The sender's configured limits: the throttle follows the latest (a learned limit stays lower). */
  limits?: WindowLimits;
  /**
   * The sender's window lengths and what derives from them (its time scale): the throttle follows
   * the latest, so a key's throttle started at one pace does not keep it when the workers change.
   */
  timing?: ThrottleTiming;
  /**
   * The sender's scheduling: first-come or fair, the interactive reserve, tenants' weights and
   * budgets (this key's part of each). The throttle follows the latest; absent from senders before
   * the scheduler existed (the throttle then keeps what it had, fair with a 10% reserve at first).
   */
  policy?: SchedulerPolicy;
}

export const MAX_PERMIT_BATCH = 500;

export const permitsUpdate = defineUpdate<PermitAnswer[], [PermitBatch]>('permits');
export const rateLimitedUpdate = defineUpdate<RateLimitEvent, [{ retryAfterMs?: number }]>(
  'rateLimited',
);
export const creditsExhaustedUpdate = defineUpdate<void, []>('creditsExhausted');
/** Closes the credit breaker; answers whether it was open. */
export const resetCreditsUpdate = defineUpdate<{ wasOpen: boolean }, [{ by?: string }]>(
  'resetCredits',
);
/** The same, for workflows (a batch resuming), which can signal but not update another workflow. */
export const resetCreditsSignal = defineSignal<[{ by?: string }]>('resetCredits');

export interface ThrottleStatus {
  keyId: string;
  settings: Pick<
    ThrottleSettings,
    'minuteMs' | 'hourMs' | 'marginMs' | 'horizonMs' | 'submitShare'
  >;
  snapshot: ThrottleSnapshot;
  /** Who asks and what they get: absent from throttles running code from before the scheduler. */
  scheduler?: SchedulerSnapshot;
}

/** The state as of `now` (the caller's clock; the workflow's last task time when omitted). */
export const throttleStateQuery = defineQuery<ThrottleStatus, [number?]>('throttleState');
