// One row of a compact batch, run as an activity of the batch instead of a workflow of its own:
// the submit, the polls and the row's line in the output, all in one attempt that heartbeats
// where it stands (visible in the Web UI's pending activities). The submit keeps the one
// no-double-submit protocol (submit.ts) with the row journal as its ledger where a row run as a
// workflow has its workflow: an attempt that finds the row's job accepted polls it, one that finds
// a send that may have reached the service ends the row as submit_outcome_unknown. A found or
// empty row's line is written here, so the batch's history holds neither the row's result nor a
// second copy of it.
// With webhooks, the submit carries the row's callback URL and the row waits for the delivery,
// which the receiver keeps in the store (a compact row has no workflow to signal).
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { heartbeat, heartbeatWhere } from './heartbeat.js';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { NO_JITTER, type Backoff } from '../calls/backoff.js';
import { describeCode } from '../calls/failure-code.js';
import {
  FIRST_SUBMIT,
  acceptedJob,
  afterPoll,
  afterSubmitFault,
  callPolicyOf,
  nextWait,
  pollMade,
  pollReplyOf,
  type PollReply,
  type PollWait,
} from '../calls/policy.js';
import {
  batchRequester,
  classifyPoll,
  type PollOutcome,
  type Requester,
  getEndpoint,
  searchPageOf,
  type EndpointDef,
  type Failure,
  type Transport,
} from '../contract/index.js';
import { TransportError } from '../http/errors.js';
import type { PermitWait } from '../throttle/permits.js';
import { measuredJobMs } from '../batch/job-duration.js';
import { OutputUnwritableError, appendResultLines } from '../batch-io/result-writer.js';
import {
  claimRow,
  journalPathOf,
  recordRow,
  rowEntry,
  type Claim,
  type JournalEntry,
} from '../batch-io/row-journal.js';
import type { RowEnd } from '../batch/rules.js';
import type { ExpectedStore, ResultLine } from '../batch/types.js';
import { rowWorkflowId, type RowIdScheme } from '../temporal/workflow-ids.js';
import type { StoredDelivery } from '../store/batch-store.js';
import { storeMismatch } from '../store/identity.js';
import type { CallOutcome } from '../calls/types.js';
import { describePermitWait } from '../throttle/status-text.js';
import type { ActivityDeps } from './deps.js';
import { recordRowLines } from '../metrics/instruments.js';
import { pollRequest } from './guarded-request.js';
import { RESULT_TOO_LARGE, serializedBytes } from './result-size.js';
import { retryUntilAnswered } from './retrying.js';
import { sendSubmit, submitProblem, type AcceptedJob, type SubmitLedger } from './submit.js';

export interface BatchRowInput extends ExpectedStore {
  batchId: string;
  endpoint: string;
  keyId: string;
  row: number;
  /** The row's key columns, copied to its line. */
  key: Record<string, unknown>;
  params: Record<string, unknown>;
  /** The batch's JSONL output (the journal sits beside it): batches started before the store. */
  output?: string;
  /** The batch's rows, results and journal are in the store. */
  store?: boolean;
  /** Submit and poll over the HTTP API (default) or the MCP endpoint's tools. */
  transport?: Transport;
  pollIntervalMs?: number;
  firstPollDelayMs?: number;
  maxWaitMs?: number;
  /**
   * The result comes by webhook: the submit carries the row's callback URL and the row waits for
   * the delivery in the store, polling only every `webhookFallbackPollMs`. Stored batches only.
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
/** Journal writes the store refused are made again from 0.5 s, doubling up to 30 s. */
const LEDGER_BACKOFF: Backoff = { baseMs: 500, capMs: 30_000, floorMs: 0 };
/** A poll whose connection failed: it never reached the job. */
const LOST_POLL: PollReply = { kind: 'transient', code: 'transport_error' };

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

type Job = AcceptedJob;

type RowFailed = Extract<RowEnd, { failure: unknown }>;

/** Where a row's journal entry and line are kept: the store, or files beside the output. */
interface RowLedger {
  entry(): Promise<JournalEntry | undefined>;
  claim(owner: string): Promise<Claim>;
  record(entry: JournalEntry): Promise<unknown>;
  /** Writes the row's line; false when it cannot be written now (the batch writes it later). */
  writeLine(line: ResultLine): Promise<boolean>;
}

async function ledgerOf(deps: ActivityDeps, input: BatchRowInput): Promise<RowLedger> {
  if (input.store) {
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
    return {
      entry: () => store.rowEntry(input.batchId, input.row),
      claim: (owner) => store.claimRow(input.batchId, input.row, owner),
      record: (entry) => store.recordRow(input.batchId, entry),
      async writeLine(line) {
        try {
          recordRowLines((await store.writeResults(input.batchId, [line])).inserted);
          return true;
        } catch {
          // The database is away: the batch gets the line and writes it once it is back.
          return false;
        }
      },
    };
  }
  const journal = journalPathOf(input.output!, input.batchId);
  return {
    entry: () => rowEntry(journal, input.row),
    claim: (owner) => claimRow(journal, input.row, owner),
    record: (entry) => recordRow(journal, entry),
    async writeLine(line) {
      try {
        await appendResultLines(input.output!, [line]);
        return true;
      } catch (err) {
        if (!(err instanceof OutputUnwritableError)) throw err;
        return false;
      }
    },
  };
}

const failed = (code: string, message: string, requestId?: string): RowFailed => ({
  failure: { code, message, ...(requestId ? { requestId } : {}) },
});
const failedWith = (f: Pick<Failure, 'code'> & { httpStatus?: number }, requestId?: string) =>
  failed(f.code, describeCode(f.code, f.httpStatus), requestId);

/**
 * A delivery taken as a poll's reply, as a row's workflow takes it: a success naming the job
 * that parses as found, empty or still running. Anything else (a failure envelope, one naming no
 * job, a person search's completion, which carries no rows) is confirmed by a poll: undefined.
 */
function deliveredReply(endpoint: EndpointDef, delivery: StoredDelivery): PollOutcome | undefined {
  if (delivery.requestId === undefined || endpoint.polling === 'person_search') return undefined;
  const outcome = classifyPoll(endpoint, { httpStatus: 200, body: delivery.body });
  return outcome.kind === 'found' || outcome.kind === 'empty' || outcome.kind === 'running'
    ? outcome
    : undefined;
}

export function createBatchRowActivities(deps: ActivityDeps) {
  return {
    /**
     * Runs one row to its end and returns it. Failures are returned, not thrown: Temporal retries
     * an attempt only when it was lost (its worker died), and the journal tells the new attempt
     * where the row stands. What happens after each reply is the call policy's (src/calls), as
     * for a row run by its own workflow; this attempt only waits where that one sets timers.
     */
    async runBatchRow(input: BatchRowInput): Promise<RowEnd> {
      const ctx = Context.current();
      const attempt = new RowAttempt(deps, input, ctx, await ledgerOf(deps, input));
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
    private readonly ledger: RowLedger,
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
    let job: Job;
    const earlier = await this.ledger.entry();
    if (earlier?.state === 'accepted') job = this.jobOf(earlier);
    else if (earlier?.state === 'sending' && earlier.owner !== this.owner)
      return this.unknownSend();
    else {
      const sent = await this.submit(endpoint);
      if ('failure' in sent) return sent;
      job = sent.job;
      // A person search's page POST that completes at once carries no rows: read by GET.
      if (
        sent.immediate &&
        !(endpoint.polling === 'person_search' && sent.immediate.kind === 'found')
      )
        return await this.finish(endpoint, job, sent.immediate, 0);
    }
    return await this.pollUntilDone(endpoint, job);
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
      backoff: LEDGER_BACKOFF,
      random: NO_JITTER,
      ends: () => this.signal.aborted,
      signal: this.signal,
    });
    if (!done.answered) throw done.error;
    return done.value;
  }

  private async recordHeld(entry: JournalEntry): Promise<void> {
    await this.held(() => this.ledger.record(entry));
  }

  private jobOf(e: {
    keyId?: string;
    requestId?: string;
    status?: string;
    acceptedAt?: number;
  }): Job {
    return {
      keyId: e.keyId ?? this.input.keyId,
      requestId: e.requestId!,
      status: e.status ?? 'pending',
      acceptedAt: e.acceptedAt ?? Date.now(),
    };
  }

  /** The row's journal as its submit's ledger (see submit.ts). */
  private journalLedger(): SubmitLedger {
    return {
      claim: async () => {
        const claim = await this.held(() => this.ledger.claim(this.owner));
        if (claim.mine) return { mine: true };
        return claim.entry.state === 'accepted'
          ? { mine: false, accepted: this.jobOf(claim.entry) }
          : { mine: false };
      },
      accepted: (job) =>
        this.recordHeld({ row: this.input.row, state: 'accepted', owner: this.owner, ...job }),
      released: () =>
        this.recordHeld({
          row: this.input.row,
          state: 'released',
          owner: this.owner,
          keyId: this.input.keyId,
        }),
    };
  }

  /** POSTs the row's job under the journal's claim; repeats only what cannot have been accepted. */
  private async submit(
    endpoint: EndpointDef,
  ): Promise<{ job: Job; immediate?: ReturnType<typeof classifyPoll> } | RowFailed> {
    const checked = submitProblem(
      endpoint,
      this.input.params,
      this.transport,
      this.input.webhook === true,
    );
    if (!checked.ok) return failed(checked.code, checked.message);
    const params = { ...checked.params };
    if (this.input.webhook) {
      if (!this.input.store || !this.deps.store || !this.deps.callbackUrlFor)
        return failed(
          'webhook_not_configured',
          'webhook_not_configured: a compact row waits for its webhook in the store; this worker has no receiver URL (PCDS_WEBHOOK_*) or the batch is not stored',
        );
      try {
        // Never returned nor logged: the URL carries the receiver's token for this row.
        params.callback_url = this.deps.callbackUrlFor(
          rowWorkflowId(this.input.batchId, this.input.row, this.input.rowIdScheme),
        );
      } catch (err) {
        if (!(err instanceof ApplicationFailure) || !err.type) throw err;
        return failed(err.type, err.message);
      }
    }
    const submitLedger = this.journalLedger();
    let standing = FIRST_SUBMIT;
    for (;;) {
      const sent = await sendSubmit(this.deps, {
        requester: rowRequester(this.input),
        keyId: this.input.keyId,
        endpoint,
        params,
        ledger: submitLedger,
        // A job whose result a webhook delivers needs no poll held for it.
        followUps: this.input.webhook ? 0 : 1,
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
      let kept: StoredDelivery[] = [];
      try {
        kept = await (
          await this.deps.store!.get()
        ).deliveries(this.input.batchId, this.input.row, requestId);
      } catch {
        // The store is away: the next look, or the fallback poll, reads the job.
      }
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

  private async pollUntilDone(endpoint: EndpointDef, accepted: Job): Promise<RowEnd> {
    const { keyId, requestId } = accepted;
    const waiting: RowWhere = {
      row: this.input.row,
      phase: this.input.webhook ? 'waiting_for_webhook' : 'polling',
      keyId,
      requestId,
    };
    this.show(waiting);
    let job = acceptedJob(accepted.acceptedAt, accepted.acceptedAt);
    let wait: PollWait = nextWait(this.policy, job, Date.now());
    for (;;) {
      let outcome: PollOutcome | undefined;
      let sentAt: number | undefined;
      // A delivery is the reply a poll would have had; one that needs confirming is polled.
      if (wait.kind === 'await_webhook') {
        const delivery = await this.nextDelivery(requestId, wait.afterMs);
        outcome = delivery && deliveredReply(endpoint, delivery);
      } else await sleep(wait.afterMs, undefined, { signal: this.signal });
      if (!outcome) {
        // A poll made again after a fault is the same poll.
        if (wait.kind === 'poll' || wait.kind === 'await_webhook') job = pollMade(job);
        try {
          const polled = await pollRequest(this.deps, {
            requester: rowRequester(this.input),
            keyId,
            endpoint,
            requestId,
            transport: this.transport,
            onWait: this.onWait,
            page:
              endpoint.polling === 'person_search' ? searchPageOf(this.input.params) : undefined,
          });
          outcome = classifyPoll(endpoint, polled.reply);
          sentAt = polled.sentAt;
        } catch (err) {
          // Polls are free and safe to repeat: a lost one is made again.
          if (!(err instanceof TransportError)) throw err;
        }
      }
      const next = afterPoll(
        this.policy,
        job,
        outcome ? pollReplyOf(outcome, sentAt) : LOST_POLL,
        Date.now(),
      );
      const step = next.step;
      job = next.job;
      if (step.kind === 'finish')
        return this.finish(endpoint, accepted, outcome!, job.polls, sentAt);
      if (step.kind === 'fail')
        return outcome?.kind === 'failed'
          ? failedWith(outcome.failure, requestId)
          : failed(step.code, step.message ?? describeCode(step.code), requestId);
      // The job is the key's and may be charged: the row waits for the key to work again.
      this.show(
        step.kind === 'wait_for_key'
          ? { ...waiting, phase: 'waiting_for_key', code: step.code }
          : waiting,
      );
      wait = step;
    }
  }

  /** A found or empty row: its line goes to the output, and the batch hears the outcome. */
  private async finish(
    endpoint: EndpointDef,
    job: Job,
    outcome: ReturnType<typeof classifyPoll>,
    polls: number,
    sentAt?: number,
  ): Promise<RowEnd> {
    if (outcome.kind !== 'found' && outcome.kind !== 'empty') {
      if (outcome.kind === 'failed') return failedWith(outcome.failure, job.requestId);
      return this.pollUntilDone(endpoint, job);
    }
    const timing = {
      jobMs: measuredJobMs({
        acceptedAt: job.acceptedAt,
        ...(sentAt !== undefined ? { sentAt } : {}),
        ...(outcome.serviceJobMs !== undefined ? { serviceJobMs: outcome.serviceJobMs } : {}),
        fallbackMs: Date.now() - job.acceptedAt,
      }),
      polls,
      ...(this.input.firstPollDelayMs !== undefined
        ? { firstPollDelayMs: this.input.firstPollDelayMs }
        : {}),
    };
    const line: ResultLine =
      outcome.kind === 'found'
        ? {
            row: this.input.row,
            key: this.input.key,
            outcome: 'found',
            requestId: job.requestId,
            result: outcome.result,
          }
        : { row: this.input.row, key: this.input.key, outcome: 'empty', requestId: job.requestId };
    const carried = (result: unknown): CallOutcome =>
      outcome.kind === 'found'
        ? { outcome: 'found', requestId: job.requestId, status: outcome.status, result, timing }
        : { outcome: 'empty', requestId: job.requestId, status: outcome.status, timing };
    if (!(await this.ledger.writeLine(line))) {
      // The batch keeps the line and pauses (or writes it) until the output is back.
      const size = serializedBytes(line);
      if (size > this.deps.config.PCDS_MAX_RESULT_BYTES)
        return failed(
          RESULT_TOO_LARGE,
          `${RESULT_TOO_LARGE}: the job's result is ${size} bytes and the output cannot be written; read it from the service with request_id ${job.requestId}`,
          job.requestId,
        );
      return { outcome: carried(outcome.kind === 'found' ? outcome.result : undefined) };
    }
    return { outcome: carried(undefined), written: true };
  }
}

export type BatchRowActivities = ReturnType<typeof createBatchRowActivities>;
