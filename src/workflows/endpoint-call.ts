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
} from '@temporalio/workflow';
import {
  callRequester,
  findEndpoint,
  mcpUnsupportedReason,
  searchCallProblem,
  searchPageOf,
  type EndpointDef,
} from '../contract/index.js';
import type { PollResult } from '../activities/calls.js';
import {
  PcdsBatchId,
  PcdsEndpoint,
  PcdsKeyId,
  PcdsRowIndex,
} from '../temporal/search-attributes.js';
import {
  callFailure,
  failureCode,
  pollActivities,
  submitActivities,
  submitOnce,
} from './call-steps.js';
import { CallView } from './call-view.js';
import { rowFailure } from '../calls/failure-code.js';
import { CallEngine, type CallStep } from '../calls/engine.js';
import { callPolicyOf } from '../calls/policy.js';
import { fillsCache } from '../calls/cache-policy.js';
import { rowFinishedSignal } from '../batch/messages.js';
import type { RowEnd } from '../batch/rules.js';
import {
  callStateQuery,
  reportToBatchSignal,
  webhookDeliveredSignal,
  type WebhookDelivery,
} from '../calls/signals.js';
import type { CallInput, CallOutcome, CallState } from '../calls/types.js';

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

/** The call's endpoint, checked: an asynchronous one its transport can carry. */
function checkedEndpoint(input: EndpointCallInput): EndpointDef {
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
  if (
    endpoint.polling === 'person_search' &&
    searchCallProblem(input.params) &&
    patched('call-search-refuses-cursor')
  )
    throw callFailure('invalid_params', `invalid_params: ${searchCallProblem(input.params)}`);
  return endpoint;
}

/** The call's own search attributes, shown with its first phase. */
function callAttrs(input: EndpointCallInput, endpoint: EndpointDef): SearchAttributeUpdatePair[] {
  return [
    { key: PcdsEndpoint, value: endpoint.name },
    ...(input.keyId ? [{ key: PcdsKeyId, value: input.keyId }] : []),
    ...(input.batchId ? [{ key: PcdsBatchId, value: input.batchId }] : []),
    ...(input.rowIndex !== undefined ? [{ key: PcdsRowIndex, value: input.rowIndex }] : []),
  ] as SearchAttributeUpdatePair[];
}

/**
 * Webhook deliveries for the call, as its signal brings them: deliveries for other request ids
 * are dropped, a few naming none are kept (a failure envelope: confirmed by a poll).
 */
function deliveryInbox(state: CallState) {
  const deliveries: WebhookDelivery[] = [];
  setHandler(webhookDeliveredSignal, (delivery) => {
    // A repeated delivery after completion changes nothing.
    if (state.phase === 'done') return;
    if (
      state.requestId !== undefined &&
      delivery.requestId !== undefined &&
      delivery.requestId !== state.requestId
    )
      return;
    deliveries.push(delivery);
    if (deliveries.length > MAX_BUFFERED_DELIVERIES) deliveries.shift();
  });
  return {
    /** The next delivery for `requestId` within `ms`, or undefined when none came. */
    async next(requestId: string, ms: number): Promise<WebhookDelivery | undefined> {
      const ours = (d: WebhookDelivery) => d.requestId === undefined || d.requestId === requestId;
      if (!(await condition(() => deliveries.some(ours), ms))) return undefined;
      return deliveries.splice(deliveries.findIndex(ours), 1)[0];
    },
  };
}

async function runCall(input: EndpointCallInput, state: CallState): Promise<CallOutcome> {
  const endpoint = checkedEndpoint(input);
  const inbox = deliveryInbox(state);
  const view = new CallView(
    endpoint.name,
    state,
    callAttrs(input, endpoint),
    input.startedShowing === true,
  );
  view.enter('submitting');
  // The maximum wait measures the service's job, from its acceptance: time spent waiting for
  // permits of our own throttle before the submit is "throttled", never late.
  const policy = callPolicyOf(input, input.webhook === true);
  const engine = new CallEngine<PollResult>({
    endpoint,
    policy,
    now: () => Date.now(),
    ...(input.firstPollDelayMs !== undefined ? { firstPollDelayMs: input.firstPollDelayMs } : {}),
  });

  // A batch's row that polls has its submit make the first poll too, at its time: one activity
  // and no timer for a row done by then. Versioned: rows started before poll in an activity of
  // their own. A row whose batch says so in its input records no marker for it (a marker, and
  // the SDK's upsert of TemporalChangeVersion with it, are two events and a visibility write).
  const firstPollAfterMs =
    input.batchId !== undefined &&
    input.cache === undefined &&
    !engine.waitsForDelivery &&
    endpoint.polling === 'general' &&
    (input.firstPollInSubmit === true || patched('row-submit-makes-first-poll'))
      ? engine.firstPollAfterMs()
      : undefined;

  // Submit (the no-replay rule lives in submitOnce).
  let submitted;
  try {
    submitted = await submitWithRetries(input, policy.maxWaitMs, firstPollAfterMs, () =>
      view.enter(
        'submitting',
        'throttled',
        undefined,
        'throttled: the submit waits to be made again',
      ),
    );
  } catch (err) {
    return view.fail(err, 'submit_outcome_unknown');
  }
  const { requestId } = submitted;
  state.requestId = requestId;
  state.lastStatus = submitted.status;
  if (!input.keyId) view.later({ key: PcdsKeyId, value: submitted.keyId });
  let step = engine.accepted(Date.now(), {
    ...(submitted.acceptedAt !== undefined ? { atWorker: submitted.acceptedAt } : {}),
    ...(submitted.immediate ? { immediate: submitted.immediate } : {}),
    readsSearchPage: () => patched('call-search-reads-immediate-page'),
  });
  if (step.kind === 'poll' && submitted.firstPoll) {
    // The submit made the first poll: counted as the call's, and the schedule goes on from it.
    engine.pollBegins();
    state.polls = engine.polls;
    state.lastStatus = submitted.firstPoll.status;
    step = engine.afterReply(submitted.firstPoll);
  }
  const waiting = engine.waitsForDelivery ? 'waiting_for_webhook' : 'polling';
  if (step.kind !== 'finish') view.enter(waiting);
  const poll = pollOf(input, endpoint, submitted, engine, view, state);
  for (;;) {
    switch (step.kind) {
      case 'finish': {
        const reply = step.reply;
        state.lastStatus = reply.status;
        view.enter('done', 'done', reply.kind);
        return engine.outcome(reply, requestId);
      }
      case 'fail':
        return view.fail(callFailure(step.code, step.message ?? step.code), 'poll_timeout');
      case 'await_delivery': {
        const delivery = await inbox.next(requestId, step.afterMs);
        step = delivery ? engine.delivered(delivery) : engine.noDelivery();
        break;
      }
      case 'poll':
        if (step.afterMs > 0) await sleep(step.afterMs);
        step = await poll();
        if (step.kind === 'poll' && !step.keyFault && waiting === 'polling')
          setCurrentDetails(
            `${endpoint.name}: polling (request ${requestId}, status ${state.lastStatus}, ${state.polls} polls)`,
          );
    }
  }
}

/**
 * One poll of the accepted job (made again by Temporal while it fails transiently: the job may be
 * charged, so it is read however long our own throttle or an outage delays the poll), and the
 * engine's next step. A refused key shows `waiting_for_key` until the same poll works again.
 */
function pollOf(
  input: EndpointCallInput,
  endpoint: EndpointDef,
  submitted: { keyId: string; requestId: string },
  engine: CallEngine<PollResult>,
  view: CallView,
  state: CallState,
) {
  const searchPage = endpoint.polling === 'person_search' ? searchPageOf(input.params) : undefined;
  const waiting = engine.waitsForDelivery ? 'waiting_for_webhook' : 'polling';
  return async (): Promise<CallStep<PollResult>> => {
    engine.pollBegins();
    state.polls = engine.polls;
    const askedAt = Date.now();
    let reply: PollResult;
    try {
      reply = await pollActivities().pollCall({
        endpoint: endpoint.name,
        keyId: submitted.keyId,
        requester: callRequester(input),
        requestId: submitted.requestId,
        // Only a call over MCP names its transport to the activities (HTTP is their default).
        ...(input.transport === 'mcp' ? { transport: 'mcp' as const } : {}),
        ...(searchPage ? { page: searchPage } : {}),
        ...(fillsCache(endpoint.name, input.cache) ? { fillsCache: true } : {}),
      });
    } catch (err) {
      const code = failureCode(err, 'poll_timeout').code;
      const step = engine.afterFailure(code);
      if (step.kind !== 'poll') return view.fail(err, 'poll_timeout');
      // The key was revoked, rotated or fenced off after the service accepted the job: the call
      // waits, keeping its request id, and reads it once the key works again.
      view.enter(waiting, 'waiting_for_key');
      setCurrentDetails(
        `${endpoint.name}: waiting for key ${submitted.keyId} to work again (${code}); request ${submitted.requestId} is kept`,
      );
      return step;
    }
    state.lastStatus = reply.status;
    if (engine.keyWasRefused) view.enter(waiting);
    else view.sentWithoutWait(askedAt, reply.sentAt);
    return engine.afterReply(reply);
  };
}

async function submitWithRetries(
  input: EndpointCallInput,
  serviceWaitMs: number,
  firstPollAfterMs: number | undefined,
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
        ...(firstPollAfterMs !== undefined ? { firstPollAfterMs } : {}),
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
