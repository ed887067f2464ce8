// What a key's throttle keeps of who asked (the scheduler's state) and the policy it schedules
// by: plain data carried in the throttle's workflow state, shared by the windows (windows.ts),
// which carry it, and the scheduler (scheduler.ts), which reads and writes it.
import type { RequestClass } from '../contract/tenant.js';

/**
 * Why a permit is later than asked for: a full window, the key closed after a 429, other
 * requesters' fair shares going first, or the requester's tenant over its budget.
 */
export type WaitReason = 'closed' | 'minute_window' | 'hour_window' | 'fair_share' | 'budget';

/** A tenant's budgets (src/throttle/scheduler.ts). */
export type BudgetName = 'requests_per_hour' | 'credits_per_day';

/** `fair`: the fair scheduler (scheduler.ts); `first-come`: every request in arrival order, as before it. */
export const SCHEDULER_MODES = ['fair', 'first-come'] as const;
export type SchedulerMode = (typeof SCHEDULER_MODES)[number];

export interface TenantPolicy {
  /** The tenant's share weight among tenants whose batches wait (default 1). */
  weight?: number;
  /** Requests an hour on this key: its part of the tenant's pool-wide budget. */
  requestsPerHour?: number;
  /** Credits a day (24 hour windows) on this key: its part of the tenant's pool-wide budget. */
  creditsPerDay?: number;
}

/** How a key's throttle schedules: from the workers' configuration, carried in permit batches. */
export interface SchedulerPolicy {
  mode: SchedulerMode;
  /** Share of each window batch work leaves to interactive and background requests (0-0.5). */
  reserve: number;
  tenants: Record<string, TenantPolicy>;
  /** Budgets of every tenant `tenants` does not list, the operator's own excepted (this key's part). */
  unlisted?: Omit<TenantPolicy, 'weight'>;
  /**
   * The scheduler's rules, as the sending workers know them (absent: 1, the first release's, so a
   * recorded history replays as it ran). 2: the hour reserve follows what calls used in the last
   * hour up to half the hour (not only up to `reserve`), and a batch ahead of its share is held
   * back only for batches whose requests come back before its slot (a slot nobody else will ask
   * for is never left idle). 3: while other batches wait on the key too, batch work is paced over
   * the hour (its hour's limit spread evenly over spans of five minute windows) instead of spending
   * the hour at the minute window's pace in its first minutes and then waiting for it to slide: a
   * batch whose rows cannot keep up with the minute window's pace gets its share all the same.
   * 4: that pace allows a fifth more than the hour's even part, so a span that fell short is made
   * up in the spans after it (at the even part itself it was missed in every later hour too).
   * 5: a batch whose requests were told to come back later still counts as waiting (the others
   * are paced for it, and it is not idle when it comes back), for up to a pace span since it last
   * asked, though it has not asked within the active span.
   */
  revision?: number;
}

/** The rules the workers of this release send (see SchedulerPolicy.revision). */
export const SCHEDULER_REVISION = 5;
/** Revision 2: the most of each hour window the reserve grows to, following calls' demand. */
export const HOUR_RESERVE_MOST = 0.5;

export const DEFAULT_RESERVE = 0.1;
export const DEFAULT_POLICY: SchedulerPolicy = {
  mode: 'fair',
  reserve: DEFAULT_RESERVE,
  tenants: {},
};

export interface RequesterRecord {
  class: RequestClass;
  tenant: string;
  /** A batch's weight among its tenant's batches. */
  weight: number;
  /** Batch work: its clock among its tenant's batches, 1/weight per permit (fair shares). */
  vt: number;
  /** Times of its reservations in the last hour span and ahead, sorted. */
  grants: number[];
  /** Its last request. */
  seenAt: number;
  /** When its requests told to wait come back, sorted (capped at MAX_WAITING). */
  waiting: number[];
  /** The turn its next waiting request is given (its requests come back spread from here). */
  nextTurnAt: number;
  /** Why its requests wait, while some do. */
  reason?: WaitReason;
  budget?: BudgetName;
}

export interface SchedulerState {
  policy: SchedulerPolicy;
  /** When the scheduler first ran on this key: the hour reserve follows demand after an hour. */
  since: number;
  /** Reservations of batch work (a subset of the log), sorted: capped below each window's limit. */
  batchLog: number[];
  /** Hour-window budget held for the follow-ups of batch submits, sorted by expiry. */
  batchHeld: number[];
  requesters: Record<string, RequesterRecord>;
  /** Each tenant's clock among tenants: 1/tenant weight per batch permit (fair shares). */
  tenantClocks?: Record<string, number>;
  /** Credits charged per tenant on this key: [hour window start, credits], the last day. */
  credits: Record<string, [number, number][]>;
  counts: { fairShare: number; budget: number; refusedBudget: number };
}
