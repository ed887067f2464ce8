// One row of a compact batch, run as an activity of the batch instead of a workflow of its own:
// the submit, the waits and polls of the call engine (calls/engine.ts, as a row's workflow runs
// it, but on sleeps inside one attempt that heartbeats where it stands, visible in the Web UI's
// pending activities) and the row's result, written to the store. The submit keeps the one
// no-double-submit protocol (submit.ts) with the row's journal in the store as its ledger where a
// row run as a workflow has its workflow: an attempt that finds the row's job accepted polls it,
// one that finds a send that may have reached the service ends the row as submit_outcome_unknown.
// A found or empty row's result is written here, so the batch's history holds neither the result
// nor a second copy of it. With webhooks, the submit carries the row's callback URL and the row
// waits for the delivery, which the receiver keeps in the store (a compact row has no workflow to
// signal).
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { heartbeat, heartbeatWhere } from './heartbeat.js';
import { NO_JITTER, ROW_JOURNAL_BACKOFF } from '../calls/backoff.js';
import { CallEngine, type CallStep, type Done } from '../calls/engine.js';
import { describeCode } from '../calls/failure-code.js';
import { FIRST_SUBMIT, afterSubmitFault, callPolicyOf } from '../calls/policy.js';
import {
  batchRequester,
  classifyPoll,
  getEndpoint,
  searchPageOf,
  type EndpointDef,
  type Failure,
  type PollOutcome,
  type Requester,
  type Transport,
} from '../contract/index.js';
import { TransportError } from '../http/errors.js';
import type { PermitWait } from '../throttle/permits.js';
import type { JournalEntry } from '../batch/journal.js';
import type { RowEnd } from '../batch/rules.js';
import { BATCH_BEFORE_STORE, type ExpectedStore, type ResultLine } from '../batch/types.js';
import { rowWorkflowId, type RowIdScheme } from '../contract/workflow-ids.js';
import type { BatchResults, DeliveryInbox, SubmitJournal } from '../store/roles.js';
import { storeMismatch } from '../store/identity.js';
import { describePermitWait } from '../throttle/status-text.js';
import type { ActivityDeps } from './deps.js';
import { recordRowLines } from '../metrics/instruments.js';
import { pollRequest } from './guarded-request.js';
import { RESULT_TOO_LARGE, serializedBytes } from './result-size.js';
import { retryUntilAnswered } from './retrying.js';
import {
  sendSubmit,
  submitProblem,
  withCallbackUrl,
  type AcceptedJob,
  type SubmitLedger,
} from './submit.js';

export interface BatchRowInput extends ExpectedStore {
  batchId: string;
  endpoint: string;
  keyId: string;
  row: number;
  /** The row's key columns, copied to its line. */
  key: Record<string, unknown>;
  params: Record<string, unknown>;
  /**
   * The batch's rows, results and journal are in the store: every batch sets it. A row without
   * it belongs to a batch started before the store, which workers of this release refuse.
   */
  store?: boolean;
  /** Submit and poll over the HTTP API (default) or the MCP endpoint's tools. */
  transport?: Transport;
  pollIntervalMs?: number;
  firstPollDelayMs?: number;
  maxWaitMs?: number;
  /**
   * The result comes by webhook: the submit carries the row's callback URL and the row waits for
   * the delivery in the store, polling only every `webhookFallbackPollMs`.
   */
  webhook?: boolean;
  webhookFallbackPollMs?: number;
  /** Who asks: the batch (rows started before requesters existed: the operator's batch). */
  requester?: Requester;
  /** How the batch names its rows (the callback URL's name of the row); absent: the old scheme. */
  rowIdScheme?: RowIdScheme;
}

/** A row's requests are its batch's. */
const rowRequester = (input: BatchRowInput): Requester =>
  input.requester ?? batchRequester(input.batchId);

const HEARTBEAT_EVERY_MS = 5_000;

/**
 * Where the row stands, as its heartbeat details show it (in the Web UI's pending activities):
 * no parameter value, ever. `throttled` is shown over the phase while a request waits for a
 * permit of our own throttle (as a row's workflow shows PcdsState throttled), `why` says why.
 */
interface RowWhere {
  row: number;
  phase: 'submitting' | 'polling' | 'waiting_for_webhook' | 'waiting_for_key' | 'throttled';
  keyId?: string;
  requestId?: string;
  /** The key's fault, while waiting for the key. */
  code?: string;
  why?: string;
}

type RowFailed = Extract<RowEnd, { failure: unknown }>;
/** A poll's reply as the engine reads it: the classified reply and when the GET went out. */
type Polled = Extract<PollOutcome, { kind: 'running' | 'found' | 'empty' }> & { sentAt?: number };

const failed = (code: string, message: string, requestId?: string): RowFailed => ({
  failure: { code, message, ...(requestId ? { requestId } : {}) },
});
const failedWith = (f: Pick<Failure, 'code'> & { httpStatus?: number }, requestId?: string) =>
  failed(f.code, describeCode(f.code, f.httpStatus), requestId);

export function createBatchRowActivities(deps: ActivityDeps) {
  return {
    /**
     * Runs one row to its end and returns it. Failures are returned, not thrown: Temporal retries
     * an attempt only when it was lost (its worker died), and the journal tells the new attempt
     * where the row stands. What happens after each reply is the call engine's, as for a row run
     * by its own workflow; this attempt only waits where that one sets timers.
     */
    async runBatchRow(input: BatchRowInput): Promise<RowEnd> {
      if (input.store !== true)
        // Retried: a worker of the release that started the batch may take the row.
        throw ApplicationFailure.create({
          type: BATCH_BEFORE_STORE,
          message: `${BATCH_BEFORE_STORE}: row ${input.row} belongs to batch ${input.batchId}, started before the store: finish it with workers of the release that started it`,
        });
      if (!deps.store) throw new Error('this worker has no store (PCDS_STORE_URL)');
      const store = await deps.store.get();
      // Another store than the batch's: nothing is claimed or sent from here; another worker (of
      // the batch's store) takes the attempt.
      const mismatch = storeMismatch(
        {
          ...(input.storeId ? { id: input.storeId } : {}),
          ...(input.storeShown ? { shown: input.storeShown } : {}),
        },
        store.identity,
      );
      if (mismatch) throw ApplicationFailure.create({ type: 'store_mismatch', message: mismatch });
      const ctx = Context.current();
      const attempt = new RowAttempt(deps, input, ctx, store);
      const beat = setInterval(() => heartbeat(ctx), HEARTBEAT_EVERY_MS);
      try {
        return await attempt.run();
      } catch (err) {
        if (ctx.cancellationSignal.aborted) throw new CancelledFailure('the row was cancelled');
        throw err;
      } finally {
        clearInterval(beat);
      }
    },
  };
}

/** One attempt at a row: where it stands, and each of its steps. */
class RowAttempt {
  private readonly signal: AbortSignal;
  /** This attempt, as the journal names it: `runId/activityId/attempt`. */
  private readonly owner: string;
  private readonly transport: Transport;
  private readonly policy: ReturnType<typeof callPolicyOf>;
  /** Deliveries this attempt has taken (by request id, '' for none): each is acted on once. */
  private readonly taken = new Set<string>();
  /** What the pending activity shows: row, phase and (once accepted) request id, no values. */
  private where: RowWhere;

  constructor(
    private readonly deps: ActivityDeps,
    private readonly input: BatchRowInput,
    private readonly ctx: Context,
    private readonly store: SubmitJournal & DeliveryInbox & BatchResults,
  ) {
    const info = ctx.info;
    this.signal = ctx.cancellationSignal;
    this.owner = `${info.workflowExecution?.runId ?? 'none'}/${info.activityId}/${info.attempt}`;
    this.transport = input.transport ?? 'http';
    this.policy = callPolicyOf(input, input.webhook === true);
    this.where = { row: input.row, phase: 'submitting' };
    this.show(this.where);
  }

  async run(): Promise<RowEnd> {
    let endpoint: EndpointDef;
    try {
      endpoint = getEndpoint(this.input.endpoint);
    } catch {
      return failedWith({ code: 'unknown_endpoint' });
    }
    const engine = new CallEngine<Polled>({
      endpoint,
      policy: this.policy,
      now: () => Date.now(),
      ...(this.input.firstPollDelayMs !== undefined
        ? { firstPollDelayMs: this.input.firstPollDelayMs }
        : {}),
    });
    const earlier = await this.store.rowEntry(this.input.batchId, this.input.row);
    if (earlier?.state === 'accepted') {
      const job = this.jobOf(earlier);
      return this.follow(
        engine,
        job,
        engine.accepted(job.acceptedAt, { atWorker: job.acceptedAt }),
      );
    }
    if (earlier?.state === 'sending' && earlier.owner !== this.owner) return this.unknownSend();
    const sent = await this.submit(endpoint);
    if ('failure' in sent) return sent;
    const { job, immediate } = sent;
    // An answer at once that is a failure ends the row; a terminal one may end it (engine.accepted).
    if (immediate?.kind === 'failed') return failedWith(immediate.failure, job.requestId);
    const step = engine.accepted(job.acceptedAt, {
      atWorker: job.acceptedAt,
      ...(immediate && immediate.kind !== 'retry' ? { immediate } : {}),
    });
    return this.follow(engine, job, step);
  }

  private show(now: RowWhere): void {
    heartbeatWhere((this.where = now), this.ctx);
  }

  /** A wait of our own throttle, shown over the phase until the phase is shown again. */
  private showThrottled(why: string): void {
    heartbeatWhere({ ...this.where, phase: 'throttled', why: `throttled: ${why}` }, this.ctx);
  }

  private readonly onWait = (wait: PermitWait) => this.showThrottled(describePermitWait(wait));

  private unknownSend(): RowFailed {
    return failed(
      'submit_outcome_unknown',
      'submit_outcome_unknown: an earlier attempt of this row may have sent its request; it is not sent again',
    );
  }

  /**
   * A journal step, made again with the same owner until the store answers: a claim whose
   * reply was lost (the store cut at that moment) is this attempt's when claimed again, and
   * what an attempt knows once its claim is taken (the job accepted, the claim let go) is
   * recorded. An attempt that gave up here would leave its claim behind, and the next one could
   * only call the row's send unknown: a row lost, or a charged job lost.
   */
  private async held<T>(step: () => Promise<T>): Promise<T> {
    const done = await retryUntilAnswered(step, {
      backoff: ROW_JOURNAL_BACKOFF,
      random: NO_JITTER,
      ends: () => this.signal.aborted,
      signal: this.signal,
    });
    if (!done.answered) throw done.error;
    return done.value;
  }

  private async record(entry: JournalEntry): Promise<void> {
    await this.held(() => this.store.recordRow(this.input.batchId, entry));
  }

  private jobOf(e: {
    keyId?: string;
    requestId?: string;
    status?: string;
    acceptedAt?: number;
  }): AcceptedJob {
    return {
      keyId: e.keyId ?? this.input.keyId,
      requestId: e.requestId!,
      status: e.status ?? 'pending',
      acceptedAt: e.acceptedAt ?? Date.now(),
    };
  }

  /** The row's journal as its submit's ledger (see submit.ts). */
  private journalLedger(): SubmitLedger {
    const { batchId, row } = this.input;
    return {
      claim: async () => {
        const claim = await this.held(() => this.store.claimRow(batchId, row, this.owner));
        if (claim.mine) return { mine: true };
        return claim.entry.state === 'accepted'
          ? { mine: false, accepted: this.jobOf(claim.entry) }
          : { mine: false };
      },
      accepted: (job) => this.record({ row, state: 'accepted', owner: this.owner, ...job }),
      released: () =>
        this.record({ row, state: 'released', owner: this.owner, keyId: this.input.keyId }),
    };
  }

  /** POSTs the row's job under the journal's claim; repeats only what cannot have been accepted. */
  private async submit(
    endpoint: EndpointDef,
  ): Promise<{ job: AcceptedJob; immediate?: PollOutcome } | RowFailed> {
    const { input } = this;
    const checked = submitProblem(endpoint, input.params, this.transport, input.webhook === true);
    if (!checked.ok) return failed(checked.code, checked.message);
    const withUrl = input.webhook
      ? withCallbackUrl(
          this.deps,
          checked.params,
          rowWorkflowId(input.batchId, input.row, input.rowIdScheme),
        )
      : checked;
    if (!withUrl.ok) return failed(withUrl.code, withUrl.message);
    const ledger = this.journalLedger();
    let standing = FIRST_SUBMIT;
    for (;;) {
      const sent = await sendSubmit(this.deps, {
        requester: rowRequester(input),
        keyId: input.keyId,
        endpoint,
        params: withUrl.params,
        ledger,
        // A job whose result a webhook delivers needs no poll held for it.
        followUps: input.webhook ? 0 : 1,
        transport: this.transport,
        onWait: this.onWait,
      });
      this.show(this.where);
      switch (sent.kind) {
        case 'accepted':
          return sent.immediate ? { job: sent.job, immediate: sent.immediate } : { job: sent.job };
        case 'earlier':
          return { job: sent.job };
        case 'unknown':
          return sent.earlier ? this.unknownSend() : failedWith({ code: 'submit_outcome_unknown' });
        case 'refused':
          break;
      }
      // A refusal with no job: a row sent back by the batch (402, a revoked key) may run again.
      if (!sent.retryable) return failedWith(sent.failure);
      const next = afterSubmitFault(this.policy, standing, {
        kind: 'refused',
        code: sent.failure.code,
        retryable: true,
        ...(sent.retryAfterMs !== undefined ? { retryAfterMs: sent.retryAfterMs } : {}),
      });
      if (next.step.kind === 'fail') return failedWith(sent.failure);
      standing = next.standing;
      if (next.step.throttled) this.showThrottled('the submit waits to be made again');
      await sleep(next.step.afterMs, undefined, { signal: this.signal });
      this.show(this.where);
    }
  }

  /**
   * The row's next delivery this attempt has not taken, looked for in the store every
   * PCDS_WEBHOOK_DELIVERY_CHECK_MS for up to `ms`; undefined when none came in that time.
   */
  private async nextDelivery(requestId: string, ms: number) {
    const until = Date.now() + ms;
    for (;;) {
      const kept = await this.store
        .deliveries(this.input.batchId, this.input.row, requestId)
        // The store is away: the next look, or the fallback poll, reads the job.
        .catch(() => []);
      const delivery = kept.find((d) => !this.taken.has(d.requestId ?? ''));
      if (delivery) {
        this.taken.add(delivery.requestId ?? '');
        return delivery;
      }
      const left = until - Date.now();
      if (left <= 0) return undefined;
      await sleep(Math.min(this.deps.config.PCDS_WEBHOOK_DELIVERY_CHECK_MS, left), undefined, {
        signal: this.signal,
      });
    }
  }

  /** Runs the engine's steps for the accepted job until the row ends. */
  private async follow(
    engine: CallEngine<Polled>,
    job: AcceptedJob,
    first: CallStep<Polled>,
  ): Promise<RowEnd> {
    const { keyId, requestId } = job;
    const waiting: RowWhere = {
      row: this.input.row,
      phase: engine.waitsForDelivery ? 'waiting_for_webhook' : 'polling',
      keyId,
      requestId,
    };
    for (let step = first; ;) {
      if (step.kind === 'finish') return this.finish(engine, job, step.reply);
      if (step.kind === 'fail')
        return failed(step.code, step.message ?? describeCode(step.code), requestId);
      // The job is the key's and may be charged: the row waits for the key to work again.
      const keyFault = step.kind === 'poll' ? step.keyFault : undefined;
      this.show(keyFault ? { ...waiting, phase: 'waiting_for_key', code: keyFault } : waiting);
      if (step.kind === 'await_delivery') {
        const delivery = await this.nextDelivery(requestId, step.afterMs);
        step = delivery ? engine.delivered(delivery) : engine.noDelivery();
        continue;
      }
      if (step.afterMs > 0) await sleep(step.afterMs, undefined, { signal: this.signal });
      const polled = await this.poll(engine, job);
      if ('failure' in polled) return polled;
      step = polled.step;
    }
  }

  /** One poll, and the engine's next step; a failure of the job itself ends the row. */
  private async poll(
    engine: CallEngine<Polled>,
    job: AcceptedJob,
  ): Promise<{ step: CallStep<Polled> } | RowFailed> {
    const def = engine.options.endpoint;
    engine.pollBegins();
    let outcome: PollOutcome;
    let sentAt: number;
    try {
      const polled = await pollRequest(this.deps, {
        requester: rowRequester(this.input),
        keyId: job.keyId,
        endpoint: def,
        requestId: job.requestId,
        transport: this.transport,
        onWait: this.onWait,
        page: def.polling === 'person_search' ? searchPageOf(this.input.params) : undefined,
      });
      outcome = classifyPoll(def, polled.reply);
      sentAt = polled.sentAt;
    } catch (err) {
      // Polls are free and safe to repeat: a lost one is made again.
      if (!(err instanceof TransportError)) throw err;
      return { step: engine.afterLostPoll('transport_error') };
    }
    switch (outcome.kind) {
      case 'retry':
        return { step: engine.afterLostPoll(outcome.failure.code, outcome.retryAfterMs) };
      case 'failed': {
        const step = engine.afterFailure(outcome.failure.code);
        return step.kind === 'fail' ? failedWith(outcome.failure, job.requestId) : { step };
      }
      default:
        return { step: engine.afterReply({ ...outcome, sentAt }) };
    }
  }

  /** A found or empty row: its result goes to the store, and the batch hears the outcome. */
  private async finish(
    engine: CallEngine<Polled>,
    job: AcceptedJob,
    reply: Done<Polled>,
  ): Promise<RowEnd> {
    const { row, key } = this.input;
    const line: ResultLine =
      reply.kind === 'found'
        ? { row, key, outcome: 'found', requestId: job.requestId, result: reply.result }
        : { row, key, outcome: 'empty', requestId: job.requestId };
    try {
      recordRowLines((await this.store.writeResults(this.input.batchId, [line])).inserted);
      // Written: the batch hears the outcome without its result.
      return { outcome: engine.outcome(reply, job.requestId, false), written: true };
    } catch {
      // The database is away: the batch keeps the line and writes it once it is back, unless
      // the result is too large to carry through its history.
      const size = serializedBytes(line);
      if (size > this.deps.config.PCDS_MAX_RESULT_BYTES)
        return failed(
          RESULT_TOO_LARGE,
          `${RESULT_TOO_LARGE}: the job's result is ${size} bytes and the output cannot be written; read it from the service with request_id ${job.requestId}`,
          job.requestId,
        );
      return { outcome: engine.outcome(reply, job.requestId) };
    }
  }
}

export type BatchRowActivities = ReturnType<typeof createBatchRowActivities>;
