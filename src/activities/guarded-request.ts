// One request to the service under the key's permit, with the side effects every HTTP activity
// owes the shared throttle: a 429 closes the key for its Retry-After, a 402 opens its credit breaker.
import type {
  EndpointDef,
  Reply,
  Requester,
  SearchPageRequest,
  SubmitOutcome,
  Transport,
} from '../contract/index.js';
import {
  PermitRefusedError,
  TenantBudgetError,
  type PermitWait,
  type RequestKind,
} from '../throttle/permits.js';
import type { ServiceClient } from '../http/service-client.js';
import type { ActivityDeps } from './deps.js';
import { terminalFailure } from './failures.js';
import { withHeartbeat } from './heartbeat.js';

/** One request under the key's permit. */
export interface GuardedRequest {
  keyId: string;
  kind: RequestKind;
  /** Who asks: the throttle orders and shares permits by it. */
  requester: Requester;
  send: (client: ServiceClient) => Promise<Reply>;
  /** The last step before sending, once the permit is taken (a submit's intent record, a claim). */
  beforeSend?: (() => Promise<void>) | undefined;
  /** For a submit: the polls its job will need (see PermitGate.acquire). */
  followUps?: number | undefined;
  /** For a submit: what its job costs when found (its tenant's daily credit budget counts it). */
  credits?: number | undefined;
  /** The MCP endpoint's tool calls take the same permits as the HTTP API's requests. */
  transport?: Transport | undefined;
  /** Hears of a long wait for the permit (see PermitGate.acquire). */
  onWait?: ((wait: PermitWait) => void) | undefined;
}

export async function guardedRequest(deps: ActivityDeps, r: GuardedRequest): Promise<Reply> {
  const { keyId, kind, requester, beforeSend, followUps, credits, onWait } = r;
  const client = deps.clients.get(keyId, r.transport ?? 'http');
  return withHeartbeat(async (signal) => {
    try {
      await deps.permits.acquire(keyId, kind, {
        requester,
        signal,
        beforeSend,
        followUps,
        credits,
        onWait,
      });
    } catch (err) {
      // The key is closed for good (credits exhausted): nothing was sent, and retrying will not help.
      if (err instanceof PermitRefusedError) throw terminalFailure({ code: err.code });
      // The caller's tenant spent a budget: nothing was sent; the message says which and until when.
      if (err instanceof TenantBudgetError)
        throw terminalFailure({ code: err.code }, undefined, err.message);
      throw err;
    }
    const reply = await r.send(client);
    if (reply.httpStatus === 429) await deps.permits.rateLimited(keyId, reply.retryAfterMs);
    if (reply.httpStatus === 402) await deps.permits.creditsExhausted(keyId);
    return reply;
  });
}

/** One poll of a job under its key's permit; `sentAt` is when the GET really went out. */
export async function pollRequest(
  deps: ActivityDeps,
  poll: {
    keyId: string;
    requester: Requester;
    endpoint: EndpointDef;
    requestId: string;
    transport?: Transport | undefined;
    onWait?: ((wait: PermitWait) => void) | undefined;
    /** A person search's page: read with its offset and limit (over HTTP; MCP's check_status has none). */
    page?: SearchPageRequest | undefined;
  },
): Promise<{ reply: Reply; sentAt: number }> {
  const { endpoint, requestId, page } = poll;
  const transport = poll.transport ?? 'http';
  let sentAt = Date.now();
  const reply = await guardedRequest(deps, {
    keyId: poll.keyId,
    kind: 'poll',
    requester: poll.requester,
    send: (c) => {
      sentAt = Date.now();
      return page && transport === 'http'
        ? c.readSearchPage(requestId, page.offset, page.limit)
        : c.poll(endpoint, requestId);
    },
    transport,
    onWait: poll.onWait,
  });
  return { reply, sentAt };
}

/** The job's status of an accepted submit, or of one the service answered done at once. */
export function acceptedStatus(
  outcome: Extract<SubmitOutcome, { kind: 'accepted' } | { kind: 'done' }>,
): string {
  if (outcome.kind === 'accepted') return outcome.status;
  return ('status' in outcome.poll ? outcome.poll.status : undefined) ?? 'completed';
}
