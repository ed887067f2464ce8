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
import { NO_JITTER, backoffDelayMs, type Backoff } from '../calls/backoff.js';
import type { EncryptionSettings } from '../codec/settings.js';
import type { Config } from '../config.js';
import { temporalClient } from '../temporal/data-converter.js';
import {
  PermitRefusedError,
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
  type PermitAnswer,
  type ThrottleSettings,
  type WindowLimits,
} from '../throttle/windows.js';

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
  /** Multiplies the windows, as the emulator's time scale does (0.1: a "minute" of 6 s). */
  timeScale?: number;
  /** Overrides of the derived settings (margin, horizon, share kept for submits...). */
  settings?: Partial<Omit<ThrottleSettings, 'limits'>>;
  /**
   * Waits for a permit at least this long are reported to the caller (its workflow then shows
   * `throttled`). Default: REPORTED_WAIT_MS, scaled by timeScale like the windows.
   */
  reportWaitsAfterMs?: number;
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

const UPDATE_ATTEMPTS = 6;
/** Between those attempts: 50 ms, doubling (1.6 s before the last). */
const UPDATE_BACKOFF: Backoff = { baseMs: 50, capMs: 1_600, floorMs: 0 };
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
  const reportAfterMs = options.reportWaitsAfterMs ?? REPORTED_WAIT_MS * (options.timeScale ?? 1);
  const channels = new Map<string, KeyChannel>();
  const channel = (keyId: string) => {
    let c = channels.get(keyId);
    if (!c) {
      c = new KeyChannel(client, taskQueue, keyId, settingsFor(keyId));
      channels.set(keyId, c);
    }
    return c;
  };

  return {
    async acquire(keyId: string, kind: RequestKind, options: AcquireOptions): Promise<void> {
      const { requester, signal, beforeSend, followUps, onWait } = options;
      const keyChannel = channel(keyId);
      const askedAt = Date.now();
      let reported: PermitWait['reason'] | undefined;
      /** Tells the caller of a long wait, once per reason. */
      const waiting = (reason: PermitWait['reason'], until: number) => {
        if (!onWait || reason === reported || until - askedAt < reportAfterMs) return;
        reported = reason;
        onWait({ keyId, kind, reason, until, reportAfterMs });
      };
      const halfMargin = keyChannel.settings.marginMs / 2;
      const fresh = { kind, requester, ...(followUps !== undefined ? { followUps } : {}) };
      let answer = await keyChannel.ask(fresh);
      let moves = 0;
      let prepared: Promise<void> | undefined;
      for (;;) {
        signal?.throwIfAborted();
        if (answer.kind === 'refused') throw new PermitRefusedError(keyId, answer.since);
        if (answer.kind === 'retry') {
          waiting(answer.reason, answer.retryAt);
          // A little spread, so the callers told the same time do not all come back at once.
          await sleepUntil(answer.retryAt + Math.random() * 100, signal);
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
        // The caller's last step (a submit records its intent to send) runs as late as it can:
        // one round trip before the slot, so it is done by then, and nothing waits after it. A
        // worker lost before that step sent nothing, which the workflow can then prove.
        if (beforeSend && !prepared) {
          await sleepUntil(answer.at - keyChannel.leadMs(), signal);
          prepared = beforeSend();
          prepared.catch(() => undefined);
        }
        await sleepUntil(answer.at, signal);
        if (prepared) await prepared;
        // An answer that came back after its time, or a wake-up delayed by a busy process, would be
        // sent later than the log says: the throttle moves it to a fresh slot (a few times at most;
        // a process slower than that still sends, and a 429 would teach the throttle). A move
        // keeps the intent already recorded: sending late into a full window would draw a 429.
        if (Date.now() - answer.at > halfMargin && moves < MAX_MOVES) {
          moves += 1;
          answer = await keyChannel.ask({ kind, requester, confirmAt: answer.at, move: true });
          continue;
        }
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
    for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
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
        await sleep(backoffDelayMs(attempt + 1, NO_JITTER, UPDATE_BACKOFF));
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
  });
}
