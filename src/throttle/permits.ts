// The gate every request to the service passes first. The HTTP activities ask it for a permit;
// the shared throttle implements it across workers (src/worker/permit-gate.ts); tests may use
// `unthrottled`.

import { PcdsError, type Requester } from '../contract/index.js';
import type { BudgetName, PermitKind, WaitReason } from './windows.js';

export type RequestKind = PermitKind;

/** A permit that keeps its caller waiting long enough for an operator to care, and why. */
export interface PermitWait {
  keyId: string;
  kind: RequestKind;
  reason: WaitReason;
  /** When the permit is due, or when the throttle is asked again (epoch ms). */
  until: number;
  /** The shortest wait reported: a request sent sooner than this after asking was not throttled. */
  reportAfterMs: number;
  /** For reason `budget`: which of the tenant's budgets is spent. */
  budget?: BudgetName;
}

/** What a permit request says beyond its key and kind. */
export interface AcquireOptions {
  /** Who asks, and for which class of work: the throttle orders and shares permits by it. */
  requester: Requester;
  signal?: AbortSignal | undefined;
  /**
   * The caller's last step before sending (a submit claims its send): runs once the slot is due,
   * just before the request is written, so a caller lost while it waits holds no claim; if it
   * fails, nothing is sent.
   */
  beforeSend?: (() => Promise<void>) | undefined;
  /**
   * For a submit: the later requests (polls) its job will need, whose budget the throttle holds
   * before it grants new submits (default 1; 0 when a webhook delivers the result).
   */
  followUps?: number | undefined;
  /** For a submit: the credits its job costs when found (its tenant's daily budget counts them). */
  credits?: number | undefined;
  /** Hears of a wait longer than the gate's reporting threshold, once per reason. */
  onWait?: ((wait: PermitWait) => void) | undefined;
}

export interface PermitGate {
  /** Resolves when `keyId` may send one request of `kind` now; rejects when the key is closed for good. */
  acquire(keyId: string, kind: RequestKind, options: AcquireOptions): Promise<void>;
  /** The service answered 429: the key is closed for every caller until the wait has passed. */
  rateLimited(keyId: string, retryAfterMs: number | undefined): Promise<void>;
  /** The service answered 402 insufficient_credits: open the key's credit breaker. */
  creditsExhausted(keyId: string): Promise<void>;
  /** Credits were added and an operator resumed: close the key's credit breaker. */
  resetCredits(keyId: string, by: string): Promise<void>;
  /**
   * For a call that names no key: the key of `keyIds` with the most room, so single calls spread
   * over the pool instead of spending one key's windows (and its reserve) alone. Absent, or
   * undefined: the first key.
   */
  keyForCall?(keyIds: readonly string[]): string | undefined;
}

export const unthrottled: PermitGate = {
  acquire: (_keyId, _kind, { beforeSend }) => (beforeSend ? beforeSend() : Promise.resolve()),
  rateLimited: () => Promise.resolve(),
  creditsExhausted: () => Promise.resolve(),
  resetCredits: () => Promise.resolve(),
};

/** The key's credit breaker is open (a 402 was seen): no submit is sent until an operator resumes. */
export class PermitRefusedError extends PcdsError {
  override name = 'PermitRefusedError';
  declare readonly code: 'insufficient_credits';
  constructor(
    readonly keyId: string,
    /** When the breaker opened (epoch ms). */
    readonly since: number,
  ) {
    super(
      'insufficient_credits',
      `key ${keyId}: credits exhausted (402); submits are paused until an operator resumes (pcds throttle resume ${keyId})`,
    );
  }
}

const BUDGET_WORDS: Record<BudgetName, string> = {
  requests_per_hour: 'requests an hour',
  credits_per_day: 'credits a day',
};

/**
 * The caller's tenant spent a budget the operator set: nothing was sent. The message names the
 * tenant (the caller's own), the budget and when more is allowed, never another caller's work.
 */
export class TenantBudgetError extends PcdsError {
  override name = 'TenantBudgetError';
  declare readonly code: 'tenant_budget';
  constructor(
    readonly tenant: string,
    readonly budget: BudgetName,
    /** The tenant's budget across the pool, when the worker's configuration says it. */
    readonly limit: number | undefined,
    /** When the budget allows more again (epoch ms). */
    readonly until: number,
  ) {
    super(
      'tenant_budget',
      `tenant_budget: tenant ${tenant} spent its budget` +
        (limit !== undefined
          ? ` of ${limit} ${BUDGET_WORDS[budget]}`
          : ` (${BUDGET_WORDS[budget]})`) +
        ` across the key pool; nothing was sent; more is allowed from about ${new Date(until).toISOString().replace(/\.\d+Z$/, 'Z')}`,
    );
  }
}

/** "requests an hour", "credits a day". */
export const budgetWords = (b: BudgetName): string => BUDGET_WORDS[b];
