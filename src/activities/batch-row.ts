// One row of a compact batch, run as an activity of the batch instead of a workflow of its own:
// the submit, the polls and the row's line in the output, all in one attempt that heartbeats
// where it stands (visible in the Web UI's pending activities). The row journal beside the output
// (batch/row-journal.ts) keeps the no-double-submit rule that a row's workflow id keeps for row
// workflows: an attempt that finds the row's job accepted polls it, one that finds a send that may
// have reached the service ends the row as submit_outcome_unknown. A found or empty row's line is
// written here, so the batch's history holds neither the row's result nor a second copy of it.
import { setTimeout as sleep } from 'node:timers/promises';
import { Context } from '@temporalio/activity';
import { heartbeat, heartbeatWhere } from './heartbeat.js';
import { CancelledFailure } from '@temporalio/common';
import {
  classifyPoll,
  classifySubmit,
  formatProblems,
  getEndpoint,
  isKeyFault,
  mcpArgumentProblems,
  mcpUnsupportedReason,
  searchPageOf,
  validateInput,
  type EndpointDef,
  type Failure,
  type Transport,
} from '../contract/index.js';
import { TransportError } from '../http/errors.js';
import { PermitRefusedError } from '../throttle/permits.js';
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
import type { ResultLine } from '../batch/types.js';
import type { CallOutcome } from '../calls/types.js';
import {
  pollDelayMs,
  DEFAULT_MAX_POLL_INTERVAL_MS,
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_POLL_BACKOFF,
  DEFAULT_POLL_INTERVAL_MS,
} from '../calls/poll-schedule.js';
import type { ActivityDeps } from './deps.js';
import { recordRowLines } from '../metrics/instruments.js';
import { backoffDelayMs, describeCode, retryAfterDelayMs } from './failures.js';
import { acceptedStatus, guardedRequest, pollRequest } from './guarded-request.js';
import { RESULT_TOO_LARGE, serializedBytes } from './result-size.js';

export interface BatchRowInput {
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
}

const HEARTBEAT_EVERY_MS = 5_000;

/** The row's send was refused by an earlier attempt's claim: what that attempt left. */
class ClaimedElsewhere extends Error {
  constructor(readonly entry: JournalEntry) {
    super('the row was claimed by an earlier attempt');
  }
}

interface Job {
  keyId: string;
  requestId: string;
  status: string;
  acceptedAt: number;
}

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

export function createBatchRowActivities(deps: ActivityDeps) {
  return {
    /**
     * Runs one row to its end and returns it. Failures are returned, not thrown: Temporal retries
     * an attempt only when it was lost (its worker died), and the journal tells the new attempt
     * where the row stands.
     */
    async runBatchRow(input: BatchRowInput): Promise<RowEnd> {
      const ctx = Context.current();
      const signal = ctx.cancellationSignal;
      const info = ctx.info;
      const owner = `${info.workflowExecution?.runId ?? 'none'}/${info.activityId}/${info.attempt}`;
      const ledger = await ledgerOf(deps, input);
      const transport = input.transport ?? 'http';
      // What the pending activity shows: row, phase and (once accepted) request id, no values.
      heartbeatWhere({ row: input.row, phase: 'submitting' }, ctx);
      const beat = setInterval(() => heartbeat(ctx), HEARTBEAT_EVERY_MS);
      try {
        let endpoint: EndpointDef;
        try {
          endpoint = getEndpoint(input.endpoint);
        } catch {
          return failedWith({ code: 'unknown_endpoint' });
        }
        const maxWaitMs = input.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
        let job: Job;
        const earlier = await ledger.entry();
        if (earlier?.state === 'accepted') job = jobOf(earlier);
        else if (earlier?.state === 'sending' && earlier.owner !== owner) return unknownSend();
        else {
          const sent = await submit(endpoint, maxWaitMs);
          if ('failure' in sent) return sent;
          job = sent.job;
          // A person search's page POST that completes at once carries no rows: read by GET.
          if (
            sent.immediate &&
            !(endpoint.polling === 'person_search' && sent.immediate.kind === 'found')
          )
            return await finish(endpoint, job, sent.immediate, 0);
        }
        heartbeatWhere(
          { row: input.row, phase: 'polling', keyId: job.keyId, requestId: job.requestId },
          ctx,
        );
        return await pollUntilDone(endpoint, job, maxWaitMs);
      } catch (err) {
        if (signal.aborted) throw new CancelledFailure('the row was cancelled');
        throw err;
      } finally {
        clearInterval(beat);
      }

      function unknownSend(): RowFailed {
        return failed(
          'submit_outcome_unknown',
          'submit_outcome_unknown: an earlier attempt of this row may have sent its request; it is not sent again',
        );
      }

      /**
       * Records what this attempt knows once its claim is taken (the job accepted, the claim let
       * go), waiting out a store that cannot write: an attempt that gave up here would leave its
       * claim behind, and the next one could only call the row's send unknown (a charged job lost).
       */
      async function recordHeld(entry: JournalEntry): Promise<void> {
        for (let attempt = 1; ; attempt++) {
          try {
            await ledger.record(entry);
            return;
          } catch (err) {
            if (signal.aborted) throw err;
            await sleep(Math.min(30_000, 500 * 2 ** Math.min(attempt - 1, 6)), undefined, {
              signal,
            });
          }
        }
      }

      function jobOf(e: {
        keyId?: string;
        requestId?: string;
        status?: string;
        acceptedAt?: number;
      }): Job {
        return {
          keyId: e.keyId ?? input.keyId,
          requestId: e.requestId!,
          status: e.status ?? 'pending',
          acceptedAt: e.acceptedAt ?? Date.now(),
        };
      }

      /** POSTs the row's job under the journal's claim; repeats only what cannot have been accepted. */
      async function submit(
        endpoint: EndpointDef,
        maxWaitMs: number,
      ): Promise<{ job: Job; immediate?: ReturnType<typeof classifyPoll> } | RowFailed> {
        const valid = validateInput(endpoint, input.params);
        if (!valid.ok)
          return failed('invalid_request', `invalid_request: ${formatProblems(valid.problems)}`);
        if (transport === 'mcp') {
          const why = mcpUnsupportedReason(endpoint, { webhook: false });
          if (why) return failed('mcp_unsupported', `mcp_unsupported: ${why}`);
          const problems = mcpArgumentProblems(endpoint.mcpTool!, valid.value);
          if (problems.length)
            return failed(
              'invalid_request',
              `invalid_request: ${endpoint.mcpTool} over MCP: ${formatProblems(problems)}`,
            );
        }
        const release = () =>
          recordHeld({ row: input.row, state: 'released', owner, keyId: input.keyId });
        let waited = 0;
        for (let attempt = 1; ; attempt++) {
          let reply;
          try {
            reply = await guardedRequest(
              deps,
              input.keyId,
              'submit',
              (c) => c.submit(endpoint, { ...valid.value }),
              async () => {
                const claim = await ledger.claim(owner);
                if (!claim.mine) throw new ClaimedElsewhere(claim.entry);
              },
              1,
              transport,
            );
          } catch (err) {
            if (err instanceof ClaimedElsewhere) {
              if (err.entry.state !== 'accepted') return unknownSend();
              return { job: jobOf(err.entry) };
            }
            if (err instanceof TransportError) {
              if (err.phase !== 'connect') return failedWith({ code: 'submit_outcome_unknown' });
              await release();
              const delay = backoffDelayMs(attempt);
              if ((waited += delay) > maxWaitMs) return failedWith({ code: 'transport_error' });
              await sleep(delay, undefined, { signal });
              continue;
            }
            if (err instanceof PermitRefusedError) return failedWith({ code: err.code });
            throw err;
          }
          const acceptedAt = Date.now();
          const outcome = classifySubmit(endpoint, reply);
          if (outcome.kind === 'accepted' || outcome.kind === 'done') {
            const status = acceptedStatus(outcome);
            const job: Job = {
              keyId: input.keyId,
              requestId: outcome.requestId,
              status,
              acceptedAt,
            };
            await recordHeld({ row: input.row, state: 'accepted', owner, ...job });
            return outcome.kind === 'done' ? { job, immediate: outcome.poll } : { job };
          }
          if (outcome.kind === 'rejected') {
            // A refusal with no job: a row sent back by the batch (402, a revoked key) may run again.
            await release();
            return failedWith(outcome.failure);
          }
          await release();
          const delay =
            outcome.retryAfterMs !== undefined
              ? retryAfterDelayMs(outcome.retryAfterMs)
              : backoffDelayMs(attempt);
          if ((waited += delay) > maxWaitMs) return failedWith(outcome.failure);
          await sleep(delay, undefined, { signal });
        }
      }

      async function pollUntilDone(
        endpoint: EndpointDef,
        job: Job,
        maxWaitMs: number,
      ): Promise<RowEnd> {
        const schedule = {
          intervalMs: input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
          backoff: DEFAULT_POLL_BACKOFF,
          maxIntervalMs: DEFAULT_MAX_POLL_INTERVAL_MS,
          ...(input.firstPollDelayMs !== undefined
            ? { firstPollDelayMs: input.firstPollDelayMs }
            : {}),
        };
        let polls = 0;
        let faults = 0;
        let delay = pollDelayMs(1, schedule);
        for (;;) {
          const left = job.acceptedAt + maxWaitMs - Date.now();
          await sleep(Math.max(1, Math.min(delay, left)), undefined, { signal });
          let reply;
          let sentAt: number;
          try {
            ({ reply, sentAt } = await pollRequest(
              deps,
              job.keyId,
              endpoint,
              job.requestId,
              transport,
              undefined,
              endpoint.polling === 'person_search' ? searchPageOf(input.params) : undefined,
            ));
          } catch (err) {
            if (!(err instanceof TransportError)) throw err;
            // Polls are free and safe to repeat: a lost one is made again.
            delay = backoffDelayMs(++faults);
            continue;
          }
          polls += 1;
          const outcome = classifyPoll(endpoint, reply);
          if (outcome.kind === 'found' || outcome.kind === 'empty')
            return finish(endpoint, job, outcome, polls, sentAt);
          if (outcome.kind === 'running') {
            faults = 0;
            if (sentAt - job.acceptedAt >= maxWaitMs)
              return failed(
                'poll_timeout',
                `poll_timeout: the job was still running ${Math.round(maxWaitMs / 1000)} s after the service accepted it`,
                job.requestId,
              );
            delay = pollDelayMs(polls + 1, schedule);
            continue;
          }
          if (outcome.kind === 'retry') {
            faults += 1;
            delay =
              outcome.retryAfterMs !== undefined
                ? retryAfterDelayMs(outcome.retryAfterMs)
                : backoffDelayMs(faults);
            continue;
          }
          if (isKeyFault(outcome.failure.code)) {
            // The job is the key's and may be charged: wait for the key to work again.
            heartbeatWhere(
              {
                row: input.row,
                phase: 'waiting_for_key',
                keyId: job.keyId,
                requestId: job.requestId,
                code: outcome.failure.code,
              },
              ctx,
            );
            delay = Math.min(600, 30 * 2 ** faults++) * schedule.intervalMs;
            continue;
          }
          return failedWith(outcome.failure, job.requestId);
        }
      }

      /** A found or empty row: its line goes to the output, and the batch hears the outcome. */
      async function finish(
        endpoint: EndpointDef,
        job: Job,
        outcome: ReturnType<typeof classifyPoll>,
        polls: number,
        sentAt?: number,
      ): Promise<RowEnd> {
        if (outcome.kind !== 'found' && outcome.kind !== 'empty') {
          if (outcome.kind === 'failed') return failedWith(outcome.failure, job.requestId);
          return pollUntilDone(endpoint, job, input.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
        }
        const timing = {
          jobMs: measuredJobMs({
            acceptedAt: job.acceptedAt,
            ...(sentAt !== undefined ? { sentAt } : {}),
            ...(outcome.serviceJobMs !== undefined ? { serviceJobMs: outcome.serviceJobMs } : {}),
            fallbackMs: Date.now() - job.acceptedAt,
          }),
          polls,
          ...(input.firstPollDelayMs !== undefined
            ? { firstPollDelayMs: input.firstPollDelayMs }
            : {}),
        };
        const line: ResultLine =
          outcome.kind === 'found'
            ? {
                row: input.row,
                key: input.key,
                outcome: 'found',
                requestId: job.requestId,
                result: outcome.result,
              }
            : { row: input.row, key: input.key, outcome: 'empty', requestId: job.requestId };
        const carried = (result: unknown): CallOutcome =>
          outcome.kind === 'found'
            ? { outcome: 'found', requestId: job.requestId, status: outcome.status, result, timing }
            : { outcome: 'empty', requestId: job.requestId, status: outcome.status, timing };
        if (!(await ledger.writeLine(line))) {
          // The batch keeps the line and pauses (or writes it) until the output is back.
          const size = serializedBytes(line);
          if (size > deps.config.PCDS_MAX_RESULT_BYTES)
            return failed(
              RESULT_TOO_LARGE,
              `${RESULT_TOO_LARGE}: the job's result is ${size} bytes and the output cannot be written; read it from the service with request_id ${job.requestId}`,
              job.requestId,
            );
          return { outcome: carried(outcome.kind === 'found' ? outcome.result : undefined) };
        }
        return { outcome: carried(undefined), written: true };
      }
    },
  };
}

export type BatchRowActivities = ReturnType<typeof createBatchRowActivities>;
