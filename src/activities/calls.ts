// Activities of one endpoint call: submit a job and poll it. Inputs and results name the endpoint,
// the key id and the request id; credentials stay in the dependencies.
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  callRequester,
  classifyPoll,
  getEndpoint,
  type EndpointDef,
  searchPageInfo,
  type PollOutcome,
  type Requester,
  type SearchPageInfo,
  type SearchPageRequest,
  type Transport,
} from '../contract/index.js';
import { TransportError } from '../http/errors.js';
import type { CacheUse } from '../calls/cache-policy.js';
import { callCache, type CacheableResult } from './call-cache.js';

type CallCache = ReturnType<typeof callCache>;
import type { CachedResult } from '../store/roles.js';
import type { ActivityDeps } from './deps.js';
import { terminalFailure, transientFailure } from './failures.js';
import { pollRequest } from './guarded-request.js';
import { withinResultBound } from './result-size.js';
import { withHeartbeat } from './heartbeat.js';
import { permitWaitReporter } from './permit-wait-report.js';
import { sendSubmit, submitProblem, withCallbackUrl, type Sent } from './submit.js';
import { workflowLedger } from './submit-intent.js';

export interface SubmitCallInput {
  endpoint: string;
  /** The configured key to use; the worker's first key when omitted. */
  keyId?: string;
  params: Record<string, unknown>;
  /** Ask for a webhook delivery to this workflow's receiver URL. */
  webhook?: boolean;
  /** This attempt's token: recorded by the workflow (submitIntent) just before the POST. */
  intentToken?: string;
  /** The MCP endpoint's tool instead of the HTTP API (default http). */
  transport?: Transport;
  /** How the call uses the result cache; absent: not at all (a batch's rows, older calls). */
  cache?: CacheUse;
  /** Who asks; absent from calls started before requesters: the operator's interactive work. */
  requester?: Requester;
  /**
   * Poll the accepted job once, this long after its acceptance, before returning (a batch's row
   * that polls): the workflow then needs no timer and no activity for its first poll. Absent: the
   * workflow makes every poll.
   */
  firstPollAfterMs?: number;
}

/** When a request was sent and what the service said of the job's duration (for learning). */
export interface PollTiming {
  /** Epoch ms (this worker's clock) when the GET went out, after its permit: no throttle wait. */
  sentAt?: number;
  /** completed_on - created_on by the service's clock (whole seconds), when it gives them. */
  serviceJobMs?: number;
}

/** Set on a result the result cache gave instead of a request. */
export interface CachedMark {
  cached?: true;
  /** When the cached result was fetched (ISO 8601). */
  fetchedAt?: string;
}

/** What a poll found: still running, or done with a payload or with nothing (no match). */
export type PollResult =
  | ({ kind: 'running'; status: string } & PollTiming)
  | ({
      kind: 'found';
      status: string;
      result: unknown;
      /** A person search's page: which page the rows are, and how to continue. */
      page?: SearchPageInfo;
    } & PollTiming &
      CachedMark)
  | ({ kind: 'empty'; status: string } & PollTiming & CachedMark);

export interface SubmitCallResult {
  /** The key id actually used (the default one resolved). */
  keyId: string;
  requestId: string;
  status: string;
  /** Set when the service answered with a terminal job at once. */
  immediate?: PollResult;
  /** Epoch ms (this worker's clock) when the acceptance arrived: the job's measured start. */
  acceptedAt?: number;
  /**
   * The first poll of the accepted job, made by the submit (`firstPollAfterMs`): running, found or
   * empty. Absent when it was not asked for or did not get a reply (the workflow polls then).
   */
  firstPoll?: PollResult;
}

export interface PollCallInput {
  endpoint: string;
  keyId: string;
  requestId: string;
  /** check_status of the MCP endpoint instead of the HTTP GET (default http). */
  transport?: Transport;
  /**
   * A person search's page (the offset and limit of its POST): read by GET with them, never by
   * request_id alone, which reads offset 0.
   */
  page?: SearchPageRequest;
  /** The call fills the result cache: a found or empty result read fills its submit's entry. */
  fillsCache?: boolean;
  /** Who asks; absent from calls started before requesters: the operator's interactive work. */
  requester?: Requester;
}

/** A terminal poll result as the cache keeps it; undefined for a page or a running job. */
function cacheable(r: PollResult): CacheableResult | undefined {
  if (r.kind === 'empty') return { outcome: 'empty', status: r.status };
  if (r.kind === 'found' && r.page === undefined)
    return { outcome: 'found', status: r.status, result: r.result };
  return undefined;
}

/** Turns a poll classification into a result, or throws the matching failure. */
function pollResultOf(
  outcome: PollOutcome,
  requestId: string,
  sentAt?: number,
  page?: SearchPageRequest,
): PollResult {
  const timing: PollTiming = {
    ...(sentAt !== undefined ? { sentAt } : {}),
    ...('serviceJobMs' in outcome && outcome.serviceJobMs !== undefined
      ? { serviceJobMs: outcome.serviceJobMs }
      : {}),
  };
  switch (outcome.kind) {
    case 'running':
      return { kind: 'running', status: outcome.status, ...timing };
    case 'found':
      return {
        kind: 'found',
        status: outcome.status,
        result: outcome.result,
        ...(page ? { page: searchPageInfo(outcome.data, page) } : {}),
        ...timing,
      };
    case 'empty':
      return { kind: 'empty', status: outcome.status, ...timing };
    case 'failed':
      throw terminalFailure(outcome.failure, requestId);
    case 'retry':
      throw transientFailure(outcome.failure, outcome.retryAfterMs);
  }
}

function asyncEndpoint(name: string): EndpointDef {
  const endpoint = (() => {
    try {
      return getEndpoint(name);
    } catch {
      throw terminalFailure({ code: 'unknown_endpoint' });
    }
  })();
  if (endpoint.polling === 'sync') throw terminalFailure({ code: 'not_async_endpoint' });
  return endpoint;
}

/**
 * A fresh cached result as a submit's answer at once: its request id is the job that fetched it;
 * an entry another tenant fetched (a shared cache) shows neither its request id (empty) nor its time.
 */
function cachedAnswer(hit: CachedResult, keyId: string, maxBytes: number): SubmitCallResult {
  return withinResultBound(
    {
      keyId,
      requestId: hit.requestId ?? '',
      status: hit.status,
      immediate: {
        ...(hit.outcome === 'found'
          ? { kind: 'found' as const, status: hit.status, result: hit.result }
          : { kind: 'empty' as const, status: hit.status }),
        cached: true as const,
        ...(hit.fetchedAt !== undefined
          ? { fetchedAt: new Date(hit.fetchedAt).toISOString() }
          : {}),
      },
    },
    maxBytes,
    hit.requestId ?? '',
  );
}

/** Refusals of the key itself (its credits, credentials or plan): nothing was accepted. */
const KEY_REFUSALS: ReadonlySet<string> = new Set([
  'insufficient_credits',
  'invalid_credentials',
  'subscription_required',
]);

/**
 * For a call that names no key: the pool's key with most room (the gate's choice; the first key
 * without a throttle), leaving out `tried`.
 */
function poolKey(deps: ActivityDeps, tried: readonly string[]): string | undefined {
  const keyIds = deps.clients.keyIds().filter((k) => !tried.includes(k));
  return deps.permits.keyForCall ? deps.permits.keyForCall(keyIds) : keyIds[0];
}

/**
 * A call's submit on the pool: single calls spread over the keys instead of spending the first
 * key's windows alone. A refusal of the key itself, before or by the service (nothing accepted,
 * the send's claim released), moves the call to the next key; the last key's answer stands.
 */
async function sendOnPool(
  deps: ActivityDeps,
  first: string,
  send: (keyId: string) => Promise<Sent>,
): Promise<{ sent: Sent; on: string }> {
  const tried: string[] = [];
  for (let keyId: string | undefined = first; ;) {
    tried.push(keyId);
    const next = poolKey(deps, tried);
    let sent: Sent;
    try {
      sent = await send(keyId);
    } catch (err) {
      // The key's credit breaker is open: nothing was sent.
      if (
        next === undefined ||
        !(err instanceof ApplicationFailure) ||
        !KEY_REFUSALS.has(err.type ?? '')
      )
        throw err;
      keyId = next;
      continue;
    }
    if (next === undefined || sent.kind !== 'refused' || !KEY_REFUSALS.has(sent.failure.code))
      return { sent, on: keyId };
    keyId = next;
  }
}

export function createCallActivities(deps: ActivityDeps) {
  const resolveKey = (keyId?: string): string => {
    try {
      return deps.clients.resolveKeyId(keyId);
    } catch {
      throw terminalFailure({ code: 'unknown_key' });
    }
  };

  const cache = callCache(deps);

  return {
    /**
     * POSTs the job. Repeated only when the service cannot have accepted it: a refused
     * connection, or an explicit 429 / 503. A request that may have been sent and got no reply
     * ends as submit_outcome_unknown, since repeating it could pay for a second job.
     */
    async submitCall(input: SubmitCallInput): Promise<SubmitCallResult> {
      const endpoint = asyncEndpoint(input.endpoint);
      const pooled = input.keyId === undefined;
      let keyId = resolveKey(pooled ? poolKey(deps, []) : input.keyId);
      const transport = input.transport ?? 'http';
      // The client validated already; this guards against a caller that skipped it.
      const checked = submitProblem(endpoint, input.params, transport, input.webhook === true);
      if (!checked.ok) throw terminalFailure({ code: checked.code }, undefined, checked.message);
      // A fresh cached result answers: no permit, no request, no credit. Its request id is the
      // job that fetched it; an entry another tenant fetched (a shared cache) shows neither its
      // request id (empty) nor its time.
      const hit = await cache.lookup(endpoint.name, checked.params, input.cache);
      if (hit) return cachedAnswer(hit, keyId, deps.config.PCDS_MAX_RESULT_BYTES);
      // The delivery goes to this call's workflow.
      const workflowId = Context.current().info.workflowExecution?.workflowId;
      const withUrl = input.webhook ? withCallbackUrl(deps, checked.params, workflowId) : checked;
      if (!withUrl.ok) throw terminalFailure({ code: withUrl.code }, undefined, withUrl.message);
      const send = (on: string) =>
        sendSubmit(deps, {
          keyId: on,
          requester: callRequester(input),
          endpoint,
          params: withUrl.params,
          ledger: workflowLedger(input.intentToken, {
            reportAccepted: true,
            workerShutdown: deps.workerShutdown,
          }),
          // A job whose result a webhook delivers needs no poll held for it.
          followUps: input.webhook ? 0 : 1,
          transport,
          onWait: permitWaitReporter(),
        });
      const { sent, on } = pooled
        ? await sendOnPool(deps, keyId, send)
        : { sent: await send(keyId), on: keyId };
      keyId = on;
      switch (sent.kind) {
        case 'refused':
          throw sent.retryable
            ? transientFailure(sent.failure, sent.retryAfterMs)
            : terminalFailure(sent.failure);
        case 'unknown':
        case 'earlier':
          // The workflow never sends after an attempt it knows to be accepted (see submit.ts).
          throw terminalFailure({ code: 'submit_outcome_unknown' });
        case 'accepted':
          break;
      }
      const { requestId, status, acceptedAt } = sent.job;
      if (!sent.immediate) {
        await cache.expect(requestId, endpoint.name, checked.params, input.cache);
        const firstPoll =
          input.firstPollAfterMs === undefined || input.webhook
            ? undefined
            : await firstPollOf(deps, cache, {
                endpoint: endpoint.name,
                keyId,
                requestId,
                ...(input.transport ? { transport: input.transport } : {}),
                ...(input.requester ? { requester: input.requester } : {}),
                at: (acceptedAt ?? Date.now()) + input.firstPollAfterMs,
              });
        return { keyId, requestId, status, acceptedAt, ...(firstPoll ? { firstPoll } : {}) };
      }
      const done = withinResultBound(
        {
          keyId,
          requestId,
          status,
          immediate: pollResultOf(sent.immediate, requestId),
          acceptedAt,
        },
        deps.config.PCDS_MAX_RESULT_BYTES,
        requestId,
      );
      const got = cacheable(done.immediate);
      if (got) await cache.put(endpoint.name, checked.params, input.cache, { ...got, requestId });
      return done;
    },

    /**
     * GETs the job's state. Polls are free and safe to repeat, so every transient failure retries.
     * A result too large to carry ends the call (result_too_large), never a refused completion.
     */
    pollCall: (input: PollCallInput) => pollJob(deps, cache, input),
  };
}

/**
 * The submit's own first poll of the job it had accepted, at `at` (this worker's clock). The job
 * is already in the activity's acknowledged heartbeat (submit-intent.ts), so nothing is lost if
 * this worker goes meanwhile. Any failure, or the activity's cancellation, leaves the poll to
 * the workflow: the accepted job is returned in any case.
 */
async function firstPollOf(
  deps: ActivityDeps,
  cache: CallCache,
  input: PollCallInput & { at: number },
): Promise<PollResult | undefined> {
  const { at, ...poll } = input;
  try {
    await withHeartbeat(() => Context.current().sleep(Math.max(0, at - Date.now())));
    return await pollJob(deps, cache, poll);
  } catch {
    return undefined;
  }
}

/** One poll of an accepted job (the pollCall activity's work). */
async function pollJob(
  deps: ActivityDeps,
  cache: CallCache,
  input: PollCallInput,
): Promise<PollResult> {
  const endpoint = asyncEndpoint(input.endpoint);
  let reply;
  let sentAt: number;
  try {
    ({ reply, sentAt } = await pollRequest(deps, {
      keyId: input.keyId,
      requester: callRequester(input),
      endpoint,
      requestId: input.requestId,
      transport: input.transport,
      onWait: permitWaitReporter(),
      page: input.page,
    }));
  } catch (err) {
    if (err instanceof TransportError) throw transientFailure({ code: 'transport_error' });
    throw err;
  }
  const result = withinResultBound(
    pollResultOf(classifyPoll(endpoint, reply), input.requestId, sentAt, input.page),
    deps.config.PCDS_MAX_RESULT_BYTES,
    input.requestId,
  );
  // Failures threw above: only a found or empty result is ever cached.
  const got = input.fillsCache ? cacheable(result) : undefined;
  if (got) await cache.fill(input.requestId, endpoint.name, got);
  return result;
}
