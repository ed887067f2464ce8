// The PermitGate of worker processes: each acquire takes a reservation from the key's throttle
// workflow, sleeps until it, confirms it when the wait was long enough for the key to close
// meanwhile, and returns. Requests of one process are gathered into one update per key in
// flight, which keeps the workflow far below its ten-updates-in-flight limit.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Client,
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  type ConnectionLike,
  type UpdateDefinition,
} from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import {
  FULL_JITTER,
  NO_JITTER,
  PERMIT_RETRY_SPREAD_MS,
  THROTTLE_UPDATE_ATTEMPTS,
  THROTTLE_UPDATE_BACKOFF,
  backoffDelayMs,
} from '../calls/backoff.js';
import type { EncryptionSettings } from '../codec/settings.js';
import type { Requester } from '../contract/tenant.js';
import type { Config } from '../config.js';
import { temporalClient } from '../temporal/data-converter.js';
import {
  PermitRefusedError,
  TenantBudgetError,
  unthrottled,
  type AcquireOptions,
  type PermitGate,
  type PermitWait,
  type RequestKind,
} from '../throttle/permits.js';
import { PcdsKeyId } from '../temporal/search-attributes.js';
import {
  creditsExhaustedUpdate,
  MAX_PERMIT_BATCH,
  permitsUpdate,
  rateLimitedUpdate,
  resetCreditsUpdate,
  THROTTLE_WORKFLOW_TYPE,
  throttleWorkflowId,
  type PermitBatch,
  type PermitRequest,
  type ThrottleInput,
} from '../throttle/protocol.js';
import {
  defaultSettings,
  timingOf,
  type BudgetName,
  type PermitAnswer,
  type ThrottleSettings,
  type WindowLimits,
} from '../throttle/windows.js';
import {
  DEFAULT_POLICY,
  SCHEDULER_REVISION,
  type SchedulerPolicy,
  type TenantPolicy,
} from '../throttle/scheduler.js';
import { policyOfTenant, type TenantSettings } from '../throttle/scheduling-settings.js';

export interface ThrottledKey {
  id: string;
  perMinute?: number;
  perHour?: number;
}

export interface WorkflowPermitGateOptions {
  client: Client;
  /** The task queue of the workers that run the throttle workflows (the worker's own). */
  taskQueue: string;
  keys: ThrottledKey[];
  /** Limits of a key that sets none (PCDS_RATE_PER_MINUTE / PCDS_RATE_PER_HOUR). */
  defaultLimits: WindowLimits;
  /** How many times faster than the service the windows run, as the emulator's (10: a "minute" of 6 s). */
  timeScale?: number;
  /** Overrides of the derived settings (margin, horizon, share kept for submits...). */
  settings?: Partial<Omit<ThrottleSettings, 'limits'>>;
  /**
   * Waits for a permit at least this long are reported to the caller (its workflow then shows
   * `throttled`). Default: REPORTED_WAIT_MS, shortened by timeScale like the windows.
   */
  reportWaitsAfterMs?: number;
  /**
   * How the throttles schedule (PCDS_THROTTLE_SCHEDULER, PCDS_INTERACTIVE_RESERVE, PCDS_TENANTS,
   * PCDS_TENANT_BUDGET): pool-wide budgets, which each key's throttle enforces in part (below).
   */
  scheduling?: TenantSettings;
}

/**
 * A key's part of pool-wide budgets: each key's throttle holds a tenant to the share of its budget
 * that the key's hour limit is of the pool's, so the pool as a whole never gives a tenant more
 * than its budget (a tenant whose work goes to fewer keys gets less of it).
 */
export function keyPolicy(
  scheduling: TenantSettings | undefined,
  keyHourLimit: number,
  poolHourLimit: number,
): SchedulerPolicy {
  if (!scheduling) return { ...DEFAULT_POLICY, revision: SCHEDULER_REVISION };
  const part = poolHourLimit > 0 ? keyHourLimit / poolHourLimit : 1;
  const split = (b: Omit<TenantPolicy, 'weight'>): Omit<TenantPolicy, 'weight'> => ({
    ...(b.requestsPerHour !== undefined ? { requestsPerHour: b.requestsPerHour * part } : {}),
    ...(b.creditsPerDay !== undefined ? { creditsPerDay: b.creditsPerDay * part } : {}),
  });
  const unlisted = scheduling.unlisted ? split(scheduling.unlisted) : undefined;
  return {
    mode: scheduling.mode,
    reserve: scheduling.reserve,
    tenants: Object.fromEntries(
      Object.entries(scheduling.tenants).map(([id, t]) => [
        id,
        { ...(t.weight !== undefined ? { weight: t.weight } : {}), ...split(t) },
      ]),
    ),
    ...(unlisted && Object.keys(unlisted).length > 0 ? { unlisted } : {}),
    revision: SCHEDULER_REVISION,
  };
}

/**
 * Shortest permit wait a call shows as `throttled`: five of its default poll intervals, long
 * enough that the throttle's ordinary pacing (100 a minute is one request every 0.6 s) never
 * shows, short enough that a row held back by a full window shows it at once. Each time a call
 * enters `throttled` costs its history about seven events, so only waits that matter do.
 */
export const REPORTED_WAIT_MS = 5_000;

interface Pending {
  request: PermitRequest;
  resolve: (answer: PermitAnswer) => void;
  reject: (err: unknown) => void;
}

const MAX_MOVES = 5;

export function createWorkflowPermitGate(options: WorkflowPermitGateOptions): PermitGate {
  const { client, taskQueue } = options;
  const limitsOf = new Map(
    options.keys.map((k) => [
      k.id,
      {
        perMinute: k.perMinute ?? options.defaultLimits.perMinute,
        perHour: k.perHour ?? options.defaultLimits.perHour,
      },
    ]),
  );
  const settingsFor = (keyId: string): ThrottleSettings => {
    const limits = limitsOf.get(keyId) ?? options.defaultLimits;
    return { ...defaultSettings(limits, options.timeScale ?? 1), ...options.settings, limits };
  };
  const reportAfterMs = options.reportWaitsAfterMs ?? REPORTED_WAIT_MS / (options.timeScale ?? 1);
  const scheduling = options.scheduling;
  const poolHourLimit = [...limitsOf.values()].reduce((a, l) => a + l.perHour, 0);
  const channels = new Map<string, KeyChannel>();
  const channel = (keyId: string) => {
    let c = channels.get(keyId);
    if (!c) {
      const settings = settingsFor(keyId);
      const policy = keyPolicy(
        scheduling,
        settings.limits.perHour,
        poolHourLimit || settings.limits.perHour,
      );
      c = new KeyChannel(client, taskQueue, keyId, settings, policy);
      channels.set(keyId, c);
    }
    return c;
  };
  /**
   * When this process sent calls and background reads (not batch work) on each key within its
   * last hour window. Calls go where fewest of them went: batches spread their rows over their
   * keys on their own, and each key's hour reserve follows the calls it saw in its last hour, so
   * calls kept level across the keys find that reserve waiting for them. Counted with batch work,
   * calls would pile onto whichever key the batches used a little less, beyond what its reserve
   * expected, and wait there for the hour to slide.
   */
  const sent = new Map<string, number[]>();
  /** Keys whose credit breaker this process saw open (until an operator resets it). */
  const refused = new Set<string>();
  const noteSent = (keyId: string, requester: Requester) => {
    if (requester.class === 'batch') return;
    const times = sent.get(keyId) ?? [];
    times.push(Date.now());
    sent.set(keyId, times);
    // Pruned here too: a worker that only runs batches keeps an hour of times, not its whole life.
    sentInHour(keyId);
  };
  const sentInHour = (keyId: string): number => {
    const times = sent.get(keyId);
    if (!times) return 0;
    const since = Date.now() - channel(keyId).settings.hourMs;
    let old = 0;
    while (old < times.length && times[old] < since) old++;
    if (old > 0) times.splice(0, old);
    return times.length;
  };
  /** The tenant's pool-wide budget, for the refusal's message. */
  const poolBudget = (tenant: string, budget: BudgetName): number | undefined => {
    const t = policyOfTenant(scheduling, tenant);
    return budget === 'requests_per_hour' ? t?.requestsPerHour : t?.creditsPerDay;
  };

  return {
    async acquire(keyId: string, kind: RequestKind, options: AcquireOptions): Promise<void> {
      const { requester, signal, beforeSend, followUps, credits, onWait } = options;
      const keyChannel = channel(keyId);
      const askedAt = Date.now();
      let reported: PermitWait['reason'] | undefined;
      /** Tells the caller of a long wait, once per reason. */
      const waiting = (reason: PermitWait['reason'], until: number, budget?: BudgetName) => {
        if (!onWait || reason === reported || until - askedAt < reportAfterMs) return;
        reported = reason;
        onWait({ keyId, kind, reason, until, reportAfterMs, ...(budget ? { budget } : {}) });
      };
      const halfMargin = keyChannel.settings.marginMs / 2;
      const fresh = {
        kind,
        requester,
        ...(followUps !== undefined ? { followUps } : {}),
        ...(credits ? { credits } : {}),
      };
      let answer = await keyChannel.ask(fresh);
      let moves = 0;
      for (;;) {
        signal?.throwIfAborted();
        if (answer.kind === 'refused') {
          if (answer.code === 'tenant_budget')
            throw new TenantBudgetError(
              requester.tenant,
              answer.budget,
              poolBudget(requester.tenant, answer.budget),
              answer.until,
            );
          refused.add(keyId);
          throw new PermitRefusedError(keyId, answer.since);
        }
        if (answer.kind === 'retry') {
          waiting(answer.reason, answer.retryAt, answer.budget);
          // A little spread, so the callers told the same time do not all come back at once.
          await sleepUntil(answer.retryAt + FULL_JITTER() * PERMIT_RETRY_SPREAD_MS, signal);
          answer = await keyChannel.ask(fresh);
          continue;
        }
        if (answer.waitFor) waiting(answer.waitFor, answer.at);
        if (answer.confirm) {
          // Confirm one round trip ahead, so the answer is back by the reserved time.
          await sleepUntil(answer.at - keyChannel.leadMs(), signal);
          answer = await keyChannel.ask({ kind, requester, confirmAt: answer.at });
          continue;
        }
        await sleepUntil(answer.at, signal);
        // An answer that came back after its time, or a wake-up delayed by a busy process, would be
        // sent later than the log says: the throttle moves it to a fresh slot (a few times at most;
        // a process slower than that still sends, and a 429 would teach the throttle).
        if (Date.now() - answer.at > halfMargin && moves < MAX_MOVES) {
          moves += 1;
          answer = await keyChannel.ask({ kind, requester, confirmAt: answer.at, move: true });
          continue;
        }
        // The caller's last step (a submit claims its send) runs once the slot is due, and the
        // request is written right after it, however long the claim took (the margin absorbs it):
        // a worker lost while it waited for its slot holds no claim, so its send is known never
        // to have left and is made again, not called unknown. A claim is never held over a wait.
        if (beforeSend) await beforeSend();
        noteSent(keyId, requester);
        return;
      }
    },
    async rateLimited(keyId: string, retryAfterMs: number | undefined): Promise<void> {
      await channel(keyId).update(rateLimitedUpdate, [
        retryAfterMs !== undefined ? { retryAfterMs } : {},
      ]);
    },
    async creditsExhausted(keyId: string): Promise<void> {
      await channel(keyId).update(creditsExhaustedUpdate, []);
    },
    async resetCredits(keyId: string, by: string): Promise<void> {
      await channel(keyId).update(resetCreditsUpdate, [{ by }]);
      refused.delete(keyId);
    },
    // The key this process sent fewest calls on in its hour window, of those not known refused
    // (the first on a tie): see `sent`.
    keyForCall(keyIds: readonly string[]): string | undefined {
      let best: string | undefined;
      let fewest = Infinity;
      for (const keyId of keyIds) {
        if (refused.has(keyId)) continue;
        const n = sentInHour(keyId);
        if (n < fewest) [best, fewest] = [keyId, n];
      }
      return best;
    },
  };
}

async function sleepUntil(at: number, signal?: AbortSignal): Promise<void> {
  const ms = at - Date.now();
  if (ms > 0) await sleep(ms, undefined, signal ? { signal } : undefined);
}

/** One key's link to its throttle workflow: batches permit requests, starts the workflow when missing. */
class KeyChannel {
  private pending: Pending[] = [];
  private inFlight = false;
  /** Until the first update succeeds, updates go with a start (the workflow may not exist yet). */
  private mayNeedStart = true;
  private readonly workflowId: string;
  /** Smoothed round trip of a permit update, the lead asked for grants. */
  private roundTripMs = 150;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly keyId: string,
    readonly settings: ThrottleSettings,
    private readonly policy: SchedulerPolicy,
  ) {
    this.workflowId = throttleWorkflowId(keyId);
  }

  /** Twice the smoothed round trip: grants start that far ahead, so they arrive before their time. */
  leadMs(): number {
    return Math.min(5_000, Math.max(50, Math.round(2 * this.roundTripMs)));
  }

  /** Asks for a permit (or confirms one); the lead is this channel's current one. */
  ask(request: Omit<PermitRequest, 'leadMs'>): Promise<PermitAnswer> {
    return new Promise((resolve, reject) => {
      this.pending.push({ request: { ...request, leadMs: this.leadMs() }, resolve, reject });
      this.flush();
    });
  }

  private flush(): void {
    if (this.inFlight || this.pending.length === 0) return;
    this.inFlight = true;
    const taken = this.pending.splice(0, MAX_PERMIT_BATCH);
    const batch: PermitBatch = {
      requests: taken.map((p) => p.request),
      limits: this.settings.limits,
      timing: timingOf(this.settings),
      policy: this.policy,
    };
    const sentAt = Date.now();
    this.update(permitsUpdate, [batch])
      .then((answers) => {
        this.roundTripMs = 0.8 * this.roundTripMs + 0.2 * (Date.now() - sentAt);
        if (answers.length !== taken.length)
          throw new Error(`throttle answered ${answers.length} of ${taken.length} requests`);
        taken.forEach((p, i) => p.resolve(answers[i]));
      })
      .catch((err: unknown) => taken.forEach((p) => p.reject(err)))
      .finally(() => {
        this.inFlight = false;
        this.flush();
      });
  }

  /** Sends an update, starting the throttle workflow when it does not exist; retries brief failures. */
  async update<Ret, Args extends unknown[]>(
    def: UpdateDefinition<Ret, Args>,
    args: Args,
  ): Promise<Ret> {
    let lastError: unknown;
    for (let attempt = 0; attempt < THROTTLE_UPDATE_ATTEMPTS; attempt++) {
      try {
        if (this.mayNeedStart) {
          const result = await this.updateWithStart(def, args);
          this.mayNeedStart = false;
          return result;
        }
        // The handle's overloads want a literal tuple; the definitions above fix the arguments' types.
        const handle = this.client.workflow.getHandle(this.workflowId);
        return await handle.executeUpdate(def as unknown as UpdateDefinition<Ret, [unknown]>, {
          args: args as unknown as [unknown],
        });
      } catch (err) {
        lastError = err;
        // The run finished (completed, terminated) between our calls: the next attempt starts a
        // new one. The client reports a closed or missing run as WorkflowNotFoundError.
        if (err instanceof WorkflowNotFoundError) {
          this.mayNeedStart = true;
          continue;
        }
        // A run continuing as new, or a busy server: try again shortly.
        await sleep(backoffDelayMs(attempt + 1, NO_JITTER, THROTTLE_UPDATE_BACKOFF));
      }
    }
    throw lastError;
  }

  private updateWithStart<Ret, Args extends unknown[]>(
    def: UpdateDefinition<Ret, Args>,
    args: Args,
  ): Promise<Ret> {
    const input: ThrottleInput = { keyId: this.keyId, settings: this.settings };
    const start = new WithStartWorkflowOperation(THROTTLE_WORKFLOW_TYPE, {
      workflowId: this.workflowId,
      taskQueue: this.taskQueue,
      args: [input],
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: `Rate throttle of key ${this.keyId}`,
      typedSearchAttributes: new TypedSearchAttributes([{ key: PcdsKeyId, value: this.keyId }]),
    });
    return this.client.workflow.executeUpdateWithStart(def, {
      args,
      startWorkflowOperation: start,
    });
  }
}

/**
 * The worker's gate from configuration: the shared throttle, or none with PCDS_THROTTLE=off
 * (only for a service without limits, such as an emulator with limits disabled).
 */
export function permitGateFromConfig(
  config: Pick<
    Config,
    | 'PCDS_THROTTLE'
    | 'PCDS_THROTTLE_TIME_SCALE'
    | 'PCDS_RATE_PER_MINUTE'
    | 'PCDS_RATE_PER_HOUR'
    | 'PCDS_TEMPORAL_NAMESPACE'
    | 'keys'
    | 'scheduling'
    | keyof EncryptionSettings
  >,
  connection: ConnectionLike,
  taskQueue: string,
): PermitGate {
  if (config.PCDS_THROTTLE === 'off') return unthrottled;
  return createWorkflowPermitGate({
    client: temporalClient(connection, config),
    taskQueue,
    keys: config.keys,
    defaultLimits: { perMinute: config.PCDS_RATE_PER_MINUTE, perHour: config.PCDS_RATE_PER_HOUR },
    timeScale: config.PCDS_THROTTLE_TIME_SCALE,
    scheduling: config.scheduling,
  });
}
