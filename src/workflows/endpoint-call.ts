// One durable endpoint call: submit a job, then poll it (or wait for its webhook) until the
// classifier says terminal or the maximum wait passes. Returns found / empty, or fails with the
// service's error code as the failure type.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  patched,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import {
  callRequester,
  classifyPoll,
  findEndpoint,
  mcpUnsupportedReason,
  searchCallProblem,
  searchPageOf,
} from '../contract/index.js';
import type { PollResult } from '../activities/calls.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsKeyId,
  PcdsOutcome,
  PcdsRowIndex,
  PcdsState,
} from '../temporal/search-attributes.js';
import {
  callFailure,
  failureCode,
  pollActivities,
  submitActivities,
  submitOnce,
  type CallStateAttr,
} from './call-steps.js';
import { rowFailure } from '../calls/failure-code.js';
import {
  acceptedJob,
  afterPoll,
  callPolicyOf,
  nextWait,
  pollMade,
  pollTimeoutMessage,
  type WaitStep,
} from '../calls/policy.js';
import { measuredJobMs } from '../batch/job-duration.js';
import { fillsCache } from '../calls/cache-policy.js';
import { rowFinishedSignal } from '../batch/messages.js';
import type { RowEnd } from '../batch/rules.js';
import { showPermitWaits } from './permit-waits.js';
import {
  callStateQuery,
  reportToBatchSignal,
  webhookDeliveredSignal,
  type WebhookDelivery,
} from '../calls/signals.js';
import type { CallInput, CallOutcome, CallState, CallTiming } from '../calls/types.js';

/** CallInput plus optional tuning of the poll schedule; a plain CallInput is a valid input. */
export interface EndpointCallInput extends CallInput {
  /** Growth factor of the poll interval for long jobs (default 1.5). */
  pollBackoff?: number;
  /** Ceiling of the poll interval (default 15 s). */
  maxPollIntervalMs?: number;
}

// Deliveries for other request ids are dropped; a few are kept only until the request id is known.
const MAX_BUFFERED_DELIVERIES = 8;

export async function pcdsEndpointCall(input: EndpointCallInput): Promise<CallOutcome> {
  const state: CallState = { phase: 'submitting', polls: 0 };
  setHandler(callStateQuery, () => state);
  // Set by the batch when this call outlives the batch's run: the end is reported by signal.
  let reportTo: string | undefined;
  setHandler(reportToBatchSignal, ({ batchWorkflowId }) => {
    reportTo = batchWorkflowId;
  });
  const report = async (end: RowEnd) => {
    if (reportTo === undefined || input.rowIndex === undefined) return;
    const row = input.rowIndex;
    const batch = reportTo;
    await CancellationScope.nonCancellable(() =>
      getExternalWorkflowHandle(batch)
        .signal(rowFinishedSignal, { row, ...end })
        // The batch is gone (terminated): nobody is waiting for this row.
        .catch(() => undefined),
    );
  };
  try {
    const outcome = await runCall(input, state);
    await report({ outcome });
    return outcome;
  } catch (err) {
    await report({ failure: rowFailure(err, state.requestId) });
    throw err;
  }
}

async function runCall(input: EndpointCallInput, state: CallState): Promise<CallOutcome> {
  const endpoint = findEndpoint(input.endpoint);
  if (!endpoint || endpoint.polling === 'sync') {
    throw callFailure(
      endpoint ? 'not_async_endpoint' : 'unknown_endpoint',
      `no asynchronous endpoint named ${input.endpoint}`,
    );
  }
  if (input.transport === 'mcp') {
    const why = mcpUnsupportedReason(endpoint, { webhook: input.webhook === true });
    if (why) throw callFailure('mcp_unsupported', `mcp_unsupported: ${why}`);
  }
  // A person search's rows are read by GET with its page's offset and limit (by request_id alone,
  // the service reads offset 0). A cursor names no page the call could read back: refused.
  const isSearch = endpoint.polling === 'person_search';
  if (isSearch && searchCallProblem(input.params) && patched('call-search-refuses-cursor'))
    throw callFailure('invalid_params', `invalid_params: ${searchCallProblem(input.params)}`);
  const searchPage = isSearch ? searchPageOf(input.params) : undefined;
  // Only a call over MCP names its transport to the activities (HTTP is their default).
  const transport = input.transport === 'mcp' ? { transport: 'mcp' as const } : {};
  // The maximum wait measures the service's job, from its acceptance: time spent waiting for
  // permits of our own throttle before the submit is "throttled", never late.
  const policy = callPolicyOf(input, input.webhook === true);
  const maxWaitMs = policy.maxWaitMs;

  const deliveries: WebhookDelivery[] = [];
  setHandler(webhookDeliveredSignal, (delivery) => {
    // A repeated delivery after completion changes nothing.
    if (state.phase === 'done') return;
    // A delivery naming no job (a failure envelope has no data) is kept: it is confirmed by a poll.
    if (
      state.requestId !== undefined &&
      delivery.requestId !== undefined &&
      delivery.requestId !== state.requestId
    )
      return;
    deliveries.push(delivery);
    if (deliveries.length > MAX_BUFFERED_DELIVERIES) deliveries.shift();
  });

  const attrs: SearchAttributeUpdatePair[] = [
    { key: PcdsEndpoint, value: endpoint.name },
    ...(input.keyId ? [{ key: PcdsKeyId, value: input.keyId }] : []),
    ...(input.batchId ? [{ key: PcdsBatchId, value: input.batchId }] : []),
    ...(input.rowIndex !== undefined ? [{ key: PcdsRowIndex, value: input.rowIndex }] : []),
  ] as SearchAttributeUpdatePair[];
  // Each change of phase is one upsert (one history event), carrying whatever else changed with it.
  let pendingAttrs: SearchAttributeUpdatePair[] = [
    ...attrs,
    { key: PcdsOutcome, value: 'running' },
  ] as SearchAttributeUpdatePair[];
  /** What PcdsState shows now. */
  let shown: CallStateAttr = 'submitting';
  const enter = (
    phase: CallState['phase'],
    attr: CallStateAttr = phase,
    outcome?: 'found' | 'empty' | 'failed',
    details?: string,
  ) => {
    state.phase = phase;
    shown = attr;
    if (attr !== 'throttled') waits.reset();
    upsertSearchAttributes([
      ...pendingAttrs,
      { key: PcdsState, value: attr },
      ...(outcome ? [{ key: PcdsOutcome, value: outcome }] : []),
    ] as SearchAttributeUpdatePair[]);
    pendingAttrs = [];
    setCurrentDetails(
      `${endpoint.name}: ${details ?? attr}${state.requestId ? ` (request ${state.requestId})` : ''}`,
    );
  };
  // An activity of this call waits for a permit long enough to matter: show it, and why. The
  // call goes back to its phase when a request goes out without such a wait, or its phase moves
  // on, so a row held back poll after poll costs its history one change, not one per poll.
  const waits = showPermitWaits({
    label: endpoint.name,
    ended: () => state.phase === 'done',
    shown: () => shown === 'throttled',
    enter: (details) => enter(state.phase, 'throttled', undefined, details),
  });
  enter('submitting');
  /** Back to the phase once a request went out within the reporting threshold of being asked. */
  const sentWithoutWait = (askedAt: number, sentAt: number | undefined) => {
    if (shown !== 'throttled' || sentAt === undefined) return;
    if (sentAt - askedAt < (waits.shownWait?.reportAfterMs ?? 0)) enter(state.phase);
  };

  // Set when the submit is accepted: the start of the job's measured duration and of its deadline.
  let acceptedAt = Date.now();
  let acceptedAtActivity: number | undefined = undefined;
  const finish = (result: PollResult, requestId: string): CallOutcome => {
    state.lastStatus = result.status;
    enter('done', 'done', result.kind === 'found' ? 'found' : 'empty');
    // A cached result: no job ran for this call, so there is no timing to give.
    if (result.kind !== 'running' && result.cached) {
      const cached = {
        cached: true as const,
        ...(result.fetchedAt !== undefined ? { fetchedAt: result.fetchedAt } : {}),
      };
      return result.kind === 'found'
        ? { outcome: 'found', requestId, status: result.status, result: result.result, ...cached }
        : { outcome: 'empty', requestId, status: result.status, ...cached };
    }
    const timing: CallTiming = {
      jobMs: measuredJobMs({
        ...(acceptedAtActivity !== undefined ? { acceptedAt: acceptedAtActivity } : {}),
        ...(result.sentAt !== undefined ? { sentAt: result.sentAt } : {}),
        ...(result.serviceJobMs !== undefined ? { serviceJobMs: result.serviceJobMs } : {}),
        fallbackMs: Date.now() - acceptedAt,
      }),
      polls: state.polls,
      ...(input.firstPollDelayMs !== undefined ? { firstPollDelayMs: input.firstPollDelayMs } : {}),
    };
    if (result.kind === 'found')
      return {
        outcome: 'found',
        requestId,
        status: result.status,
        result: result.result,
        ...(result.page ? { page: result.page } : {}),
        timing,
      };
    return { outcome: 'empty', requestId, status: result.status, timing };
  };
  const fail = (err: unknown, timeoutCode: string): never => {
    const f = failureCode(err, timeoutCode);
    enter('done', 'failed', 'failed', `failed: ${f.code}`);
    throw callFailure(f.code, f.message, f.details);
  };

  // Submit (the no-replay rule lives in submitOnce).
  let submitted;
  try {
    submitted = await submitWithRetries(input, maxWaitMs, () =>
      enter('submitting', 'throttled', undefined, 'throttled: the submit waits to be made again'),
    );
  } catch (err) {
    return fail(err, 'submit_outcome_unknown');
  }
  acceptedAt = Date.now();
  acceptedAtActivity = submitted.acceptedAt;
  let job = acceptedJob(acceptedAt, acceptedAtActivity);
  state.requestId = submitted.requestId;
  state.lastStatus = submitted.status;
  // Goes with the next change of phase.
  if (!input.keyId) pendingAttrs.push({ key: PcdsKeyId, value: submitted.keyId });
  // A page POST that completes at once carries no rows: a person search reads them by GET.
  if (
    submitted.immediate &&
    submitted.immediate.kind !== 'running' &&
    !(isSearch && patched('call-search-reads-immediate-page'))
  )
    return finish(submitted.immediate, submitted.requestId);

  const poll = async (): Promise<PollResult> => {
    job = pollMade(job);
    state.polls = job.polls;
    for (;;) {
      const askedAt = Date.now();
      try {
        // No bound on the attempts: the job may be charged, so it is read however long our own
        // throttle or an outage delays the poll. The deadline is judged on what the service says.
        const r = await pollActivities().pollCall({
          endpoint: endpoint.name,
          keyId: submitted.keyId,
          requester: callRequester(input),
          requestId: submitted.requestId,
          ...transport,
          ...(searchPage ? { page: searchPage } : {}),
          ...(fillsCache(endpoint.name, input.cache) ? { fillsCache: true } : {}),
        });
        state.lastStatus = r.status;
        if (job.keyFaults > 0) enter(input.webhook ? 'waiting_for_webhook' : 'polling');
        else sentWithoutWait(askedAt, r.sentAt);
        return r;
      } catch (err) {
        const code = failureCode(err, 'poll_timeout').code;
        const next = afterPoll(policy, job, { kind: 'failed', code }, Date.now());
        if (next.step.kind !== 'wait_for_key') return fail(err, 'poll_timeout');
        job = next.job;
        // The key was revoked, rotated or fenced off after the service accepted the job: the call
        // waits, keeping its request id, and reads it once the key works again.
        enter(input.webhook ? 'waiting_for_webhook' : 'polling', 'waiting_for_key');
        setCurrentDetails(
          `${endpoint.name}: waiting for key ${submitted.keyId} to work again (${code}); request ${submitted.requestId} is kept`,
        );
        await sleep(next.step.afterMs);
      }
    }
  };
  /** A running reply: the wait before the next poll, or the end at the deadline. */
  const stillRunning = (r: PollResult): WaitStep => {
    const { step } = afterPoll(policy, job, { kind: 'running', sentAt: r.sentAt }, Date.now());
    if (step.kind === 'poll' || step.kind === 'await_webhook') return step;
    return fail(callFailure('poll_timeout', pollTimeoutMessage(policy)), 'poll_timeout');
  };

  if (input.webhook) {
    enter('waiting_for_webhook');
    const ours = (d: WebhookDelivery) =>
      d.requestId === undefined || d.requestId === submitted.requestId;
    for (;;) {
      const delivered = await condition(
        () => deliveries.some(ours),
        nextWait(policy, job, Date.now()).afterMs,
      );
      if (delivered) {
        const delivery = deliveries.splice(deliveries.findIndex(ours), 1)[0];
        const outcome = classifyPoll(endpoint, { httpStatus: 200, body: delivery.body });
        // The URL's token proves the sender knew the URL, not what the body says. A success that
        // names this job and parses against the contract is taken as the result; a delivered
        // failure, or a body naming no job, is confirmed by one poll before it ends the call.
        // Person search: the callback reports completion only; the rows are read by GET.
        if (delivery.requestId !== undefined && endpoint.polling !== 'person_search') {
          if (outcome.kind === 'found')
            return finish(
              { kind: 'found', status: outcome.status, result: outcome.result },
              submitted.requestId,
            );
          if (outcome.kind === 'empty')
            return finish({ kind: 'empty', status: outcome.status }, submitted.requestId);
          // A non-terminal delivery: keep waiting.
          if (outcome.kind === 'running') continue;
        }
        const confirmed = await poll();
        if (confirmed.kind !== 'running') return finish(confirmed, submitted.requestId);
        continue;
      }
      // No delivery in time: one fallback poll (at the deadline, the one that decides).
      const r = await poll();
      if (r.kind !== 'running') return finish(r, submitted.requestId);
      // Ends the call when the job is still running at the deadline.
      stillRunning(r);
    }
  }

  enter('polling');
  // The last poll lands at the deadline; a job still running then has timed out.
  let wait = nextWait(policy, job, Date.now());
  for (;;) {
    await sleep(wait.afterMs);
    const r = await poll();
    if (r.kind !== 'running') return finish(r, submitted.requestId);
    wait = stillRunning(r);
    setCurrentDetails(
      `${endpoint.name}: polling (request ${submitted.requestId}, status ${r.status}, ${state.polls} polls)`,
    );
  }
}

async function submitWithRetries(
  input: EndpointCallInput,
  serviceWaitMs: number,
  onThrottled: () => void,
) {
  return submitOnce(
    (intentToken) =>
      submitActivities.submitCall({
        endpoint: input.endpoint,
        params: input.params,
        ...(input.keyId ? { keyId: input.keyId } : {}),
        ...(input.webhook ? { webhook: true } : {}),
        ...(input.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
        ...(input.cache ? { cache: input.cache } : {}),
        requester: callRequester(input),
        intentToken,
      }),
    serviceWaitMs,
    onThrottled,
    // A job handed over after its attempt timed out is polled like any other.
    (accepted) => ({
      keyId: accepted.keyId,
      requestId: accepted.requestId,
      status: accepted.status,
      acceptedAt: accepted.acceptedAt,
    }),
  );
}

/**
 * The type's name before 0.2 (see src/workflows/index.ts), for code that refers to the workflow
 * by its old name: a start through it uses the function's own name, pcdsEndpointCall.
 */
export const endpointCall = pcdsEndpointCall;
