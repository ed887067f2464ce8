// The one call engine: what a call does once its submit is accepted, after each thing it learns
// (an answer at once, a poll's reply or failure, a webhook delivery, a wait for one that ran
// out), as the next step its driver runs. Pure and workflow-safe, with the clock injected. Three
// drivers run it: the call workflow (timers, activities, signals), a compact batch row (one
// activity that sleeps, heartbeats and reads deliveries from the store) and search paging (a
// page read until done), so a change to polling, webhooks, deadlines or timing is made here
// once. The delays and the deadline are the call policy's (policy.ts), as is whether a failed
// submit is made again (afterSubmitFault, which every submit loop asks).
import { classifyPoll, type EndpointDef, type PollOutcome } from '../contract/index.js';
import {
  acceptedJob,
  afterPoll,
  nextWait,
  pollMade,
  type CallPolicy,
  type JobStanding,
  type PollStep,
} from './policy.js';
import type { CallOutcome, CallTiming } from './types.js';

/** Slack on the service's timestamps, which carry whole seconds. */
const SERVICE_CLOCK_SLACK_MS = 1_000;

/**
 * A finished call's job duration, for learning. The base is acceptance -> the GET that saw the
 * job done, both stamped by the activities when the request really went out, so time spent
 * waiting for a permit is not counted. When the service states the job's own duration, the
 * sample is capped by it (plus its 1 s resolution), so a poll delayed by an outage, a lost worker
 * or a retried attempt does not teach the batch that jobs are slow. `fallbackMs` (the engine's
 * clock) serves when the activities gave no stamps.
 */
export function measuredJobMs(t: {
  acceptedAt?: number;
  sentAt?: number;
  serviceJobMs?: number;
  fallbackMs: number;
}): number {
  const observed =
    t.acceptedAt !== undefined && t.sentAt !== undefined
      ? Math.max(0, t.sentAt - t.acceptedAt)
      : Math.max(0, t.fallbackMs);
  return t.serviceJobMs === undefined
    ? observed
    : Math.min(observed, t.serviceJobMs + SERVICE_CLOCK_SLACK_MS);
}

/** A reply as the engine reads it: the job still running, or done with a result or none. */
export interface Reply {
  kind: 'running' | 'found' | 'empty';
  /** When the request really went out (the worker's clock, after its permit). */
  sentAt?: number;
  /** The job's duration by the service's own timestamps. */
  serviceJobMs?: number;
}

/** A terminal reply: what ends a call found or empty (cached: the result cache answered). */
export type Terminal =
  | {
      kind: 'found';
      status: string;
      result: unknown;
      page?: unknown;
      sentAt?: number;
      serviceJobMs?: number;
      cached?: true;
      fetchedAt?: string;
    }
  | {
      kind: 'empty';
      status: string;
      sentAt?: number;
      serviceJobMs?: number;
      cached?: true;
      fetchedAt?: string;
    };

/** A webhook delivery for the call's job (signalled to its workflow, or kept in the store). */
export interface Delivery {
  /** The job the body names; absent for a failure envelope, which names none. */
  requestId?: string;
  body: unknown;
}

/** A delivery's body taken as the poll's reply it stands for. */
export type Delivered = Extract<PollOutcome, { kind: 'found' | 'empty' }>;

/** A reply that ends the call: a driver's terminal reply, or a delivery taken as one. */
export type Done<R> = Exclude<R, { kind: 'running' }> | Delivered;

/** What the driver does next. */
export type CallStep<R> =
  /**
   * Poll the job after `afterMs` (0: now, with no wait). `keyFault`: the key was refused and the
   * same poll is made again once it may work (the call shows `waiting_for_key`).
   */
  | { kind: 'poll'; afterMs: number; keyFault?: string }
  /** Wait up to `afterMs` for a delivery: one that comes goes to `delivered`, none to `noDelivery`. */
  | { kind: 'await_delivery'; afterMs: number }
  /** The job is done: this reply ends the call found or empty. */
  | { kind: 'finish'; reply: Done<R> }
  /** The call ends with this code (poll_timeout, or the service's code for the job). */
  | { kind: 'fail'; code: string; message?: string };

export interface CallEngineOptions {
  endpoint: EndpointDef;
  policy: CallPolicy;
  /** The engine's clock: workflow time in a workflow, the worker's clock in an activity. */
  now: () => number;
  /** The batch's learned first-poll delay the call was given, reported in its timing. */
  firstPollDelayMs?: number;
}

export class CallEngine<R extends Reply = Reply> {
  private job: JobStanding | undefined;
  /** The next poll is the last one made again after a fault: not counted anew. */
  private again = false;
  /**
   * The next reply confirms a delivery: still running, the call waits for the next delivery or
   * the fallback poll (the deadline is judged on those, not on a confirmation).
   */
  private confirming = false;

  constructor(readonly options: CallEngineOptions) {}

  /** A person search: an answer at once carries no rows, and a delivery only reports completion. */
  get isSearch(): boolean {
    return this.options.endpoint.polling === 'person_search';
  }

  /** The result comes by webhook: the call waits for deliveries, polling only as a fallback. */
  get waitsForDelivery(): boolean {
    return this.options.policy.webhookFallbackPollMs !== undefined;
  }

  /** Polls made so far (a poll made again after a fault counts once). */
  get polls(): number {
    return this.job?.polls ?? 0;
  }

  /** The poll under way was refused for its key before: a reply now means the key works again. */
  get keyWasRefused(): boolean {
    return (this.job?.keyFaults ?? 0) > 0;
  }

  /**
   * The service accepted the job at `at` (the engine's clock; `atWorker`: the accepting worker's).
   * A terminal `immediate` answer ends the call, but a person search's: its page is read by GET
   * (`readsSearchPage` says so; a workflow asks a patch). `firstLookNow`: the first poll is made
   * at once and not counted (a search page just asked for is usually ready).
   */
  accepted(
    at: number,
    o: {
      atWorker?: number;
      immediate?: R;
      readsSearchPage?: () => boolean;
      firstLookNow?: boolean;
    } = {},
  ): CallStep<R> {
    this.job = acceptedJob(at, o.atWorker);
    const immediate = o.immediate;
    if (
      immediate &&
      immediate.kind !== 'running' &&
      !(this.isSearch && (o.readsSearchPage?.() ?? true))
    )
      return { kind: 'finish', reply: immediate as Done<R> };
    if (o.firstLookNow) {
      this.again = true;
      return { kind: 'poll', afterMs: 0 };
    }
    return this.waitStep();
  }

  /**
   * How long after its acceptance a job's first poll is due, as `accepted` will schedule it: a
   * submit that makes that poll itself (a batch's row) is told before it runs.
   */
  firstPollAfterMs(): number {
    const at = this.options.now();
    return nextWait(this.options.policy, acceptedJob(at), at).afterMs;
  }

  // ---- Polls and deliveries ----

  /** The driver sends a poll now: counted, unless it is the last poll made again. */
  pollBegins(): void {
    if (!this.again) this.job = pollMade(this.current());
    this.again = false;
  }

  /** A poll's reply (running, found or empty). */
  afterReply(reply: R): CallStep<R> {
    if (reply.kind !== 'running') {
      this.confirming = false;
      return { kind: 'finish', reply: reply as Done<R> };
    }
    if (this.confirming) {
      this.confirming = false;
      return this.waitStep();
    }
    return this.follow(
      afterPoll(
        this.options.policy,
        this.current(),
        { kind: 'running', sentAt: reply.sentAt },
        this.options.now(),
      ),
    );
  }

  /** The service refused the job with `code`: a key fault waits for the key, anything else ends the call. */
  afterFailure(code: string): CallStep<R> {
    return this.follow(
      afterPoll(this.options.policy, this.current(), { kind: 'failed', code }, this.options.now()),
    );
  }

  /** The poll never reached the job (429, 503, a lost connection): the same poll again after a wait. */
  afterLostPoll(code: string, retryAfterMs?: number, random?: () => number): CallStep<R> {
    const reply = {
      kind: 'transient' as const,
      code,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
    return this.follow(
      afterPoll(this.options.policy, this.current(), reply, this.options.now(), random),
    );
  }

  /**
   * A delivery for the job. The URL's token proves the sender knew the URL, not what the body
   * says: a success that names the job and parses against the contract is taken as the reply a
   * poll would have had (a running one: the call waits on); a delivered failure, or a body naming
   * no job, is confirmed by one poll before it ends the call. A person search's delivery only
   * reports completion: its rows are read by GET.
   */
  delivered(delivery: Delivery): CallStep<R> {
    if (delivery.requestId !== undefined && !this.isSearch) {
      const outcome = classifyPoll(this.options.endpoint, { httpStatus: 200, body: delivery.body });
      if (outcome.kind === 'found' || outcome.kind === 'empty')
        return { kind: 'finish', reply: outcome };
      if (outcome.kind === 'running') return this.waitStep();
    }
    this.confirming = true;
    return { kind: 'poll', afterMs: 0 };
  }

  /** No delivery came in time: one fallback poll, now (at the deadline, the one that decides). */
  noDelivery(): CallStep<R> {
    return { kind: 'poll', afterMs: 0 };
  }

  // ---- The end ----

  /** How long the job took and what it cost in polls (a cached result has no job: none). */
  timing(reply: Terminal | Delivered): CallTiming | undefined {
    if ('cached' in reply && reply.cached) return undefined;
    const job = this.current();
    const sentAt = 'sentAt' in reply ? reply.sentAt : undefined;
    const { firstPollDelayMs } = this.options;
    return {
      jobMs: measuredJobMs({
        ...(job.acceptedAtWorker !== undefined ? { acceptedAt: job.acceptedAtWorker } : {}),
        ...(sentAt !== undefined ? { sentAt } : {}),
        ...(reply.serviceJobMs !== undefined ? { serviceJobMs: reply.serviceJobMs } : {}),
        fallbackMs: this.options.now() - job.acceptedAt,
      }),
      polls: job.polls,
      ...(firstPollDelayMs !== undefined ? { firstPollDelayMs } : {}),
    };
  }

  /**
   * The call's outcome from the reply that ended it. `carriesResult` false: a found outcome
   * carries no result (a compact row whose result is written already).
   */
  outcome(reply: Terminal | Delivered, requestId: string, carriesResult = true): CallOutcome {
    const timing = this.timing(reply);
    const cached =
      'cached' in reply && reply.cached
        ? {
            cached: true as const,
            ...(reply.fetchedAt !== undefined ? { fetchedAt: reply.fetchedAt } : {}),
          }
        : {};
    const measured = timing ? { timing } : {};
    if (reply.kind === 'empty')
      return { outcome: 'empty', requestId, status: reply.status, ...cached, ...measured };
    const page = 'page' in reply && reply.page !== undefined ? { page: reply.page } : {};
    return {
      outcome: 'found',
      requestId,
      status: reply.status,
      result: carriesResult ? reply.result : undefined,
      ...(page as Pick<Extract<CallOutcome, { outcome: 'found' }>, 'page'>),
      ...cached,
      ...measured,
    };
  }

  // ---- Inside ----

  private current(): JobStanding {
    if (!this.job) throw new Error('the call engine was asked about a job before it was accepted');
    return this.job;
  }

  /** The wait before the next poll or delivery: never past the deadline (see nextWait). */
  private waitStep(): CallStep<R> {
    const wait = nextWait(this.options.policy, this.current(), this.options.now());
    return wait.kind === 'await_webhook'
      ? { kind: 'await_delivery', afterMs: wait.afterMs }
      : { kind: 'poll', afterMs: wait.afterMs };
  }

  private follow(next: { step: PollStep; job: JobStanding }): CallStep<R> {
    this.job = next.job;
    const step = next.step;
    switch (step.kind) {
      case 'finish':
        throw new Error('a reply that is not terminal cannot finish the call');
      case 'fail':
        return step.message !== undefined
          ? { kind: 'fail', code: step.code, message: step.message }
          : { kind: 'fail', code: step.code };
      case 'retry_poll':
        this.again = true;
        return { kind: 'poll', afterMs: step.afterMs };
      case 'wait_for_key':
        this.again = true;
        return { kind: 'poll', afterMs: step.afterMs, keyFault: step.code };
      case 'await_webhook':
        return { kind: 'await_delivery', afterMs: step.afterMs };
      case 'poll':
        return { kind: 'poll', afterMs: step.afterMs };
    }
  }
}
