// Metrics at the two doors every request passes: the service client (requests by key, endpoint,
// kind, transport and status; 429s; the credit gauges from GET /usage) and the permit gate
// (permits granted, refused, and how long each waited). Decorators, so the client and the
// throttle stay as they are.
import { ServiceError } from '../http/errors.js';
import { McpUnsupportedError } from '../http/errors.js';
import type { PermitGate } from '../throttle/permits.js';
import { PermitRefusedError, TenantBudgetError } from '../throttle/permits.js';
import { OPERATOR_TENANT } from '../contract/index.js';
import type { ServiceClient } from '../http/service-client.js';
import type { Reply } from '../contract/index.js';
import { USAGE_PATH, type RequestMetricKind } from './catalogue.js';
import { recordCredits, recordPermit, recordPermitRefused, recordRequest } from './instruments.js';

const FEEDBACK_PATH = '/person/enrichment/feedback';
const SEARCH_PATH = '/person/search';

/** The HTTP status of a failed request, when a reply came. */
const statusOfError = (err: unknown): number | undefined =>
  err instanceof ServiceError ? err.httpStatus : undefined;

/** `client` with every request counted under the key's id. */
export function meteredServiceClient(
  client: ServiceClient,
  key: string,
  transport: string,
): ServiceClient {
  const count = async <T>(
    endpoint: string,
    kind: RequestMetricKind,
    send: () => Promise<T>,
    statusOf: (value: T) => number,
  ): Promise<T> => {
    try {
      const value = await send();
      recordRequest({ key, endpoint, kind, transport, status: statusOf(value) });
      return value;
    } catch (err) {
      // A request the MCP endpoint has no tool for was never sent.
      if (!(err instanceof McpUnsupportedError))
        recordRequest({ key, endpoint, kind, transport, status: statusOfError(err) });
      throw err;
    }
  };
  const replyStatus = (r: Reply) => r.httpStatus;
  const ok = () => 200;
  return {
    submit: (endpoint, params) =>
      count(endpoint.path, 'submit', () => client.submit(endpoint, params), replyStatus),
    poll: (endpoint, requestId) =>
      count(endpoint.path, 'poll', () => client.poll(endpoint, requestId), replyStatus),
    readSearchPage: (requestId, offset, limit) =>
      count(
        SEARCH_PATH,
        'poll',
        () => client.readSearchPage(requestId, offset, limit),
        replyStatus,
      ),
    usage: async (query) => {
      const data = await count(USAGE_PATH, 'other', () => client.usage(query), ok);
      const credits = creditsOf(data);
      if (credits) recordCredits(key, credits.used, credits.available);
      return data;
    },
    feedback: (body) => count(FEEDBACK_PATH, 'other', () => client.feedback(body), ok),
  };
}

/** Credits used this month and available (undefined when unlimited), from GET /usage's data. */
export function creditsOf(
  data: Record<string, unknown>,
): { used: number; available: number | undefined } | undefined {
  const used = (data.credits_used as { total?: unknown } | undefined)?.total;
  if (typeof used !== 'number') return undefined;
  const limits = data.limits as { available_credits?: unknown; is_unlimited?: unknown } | undefined;
  const available =
    limits?.is_unlimited !== true && typeof limits?.available_credits === 'number'
      ? limits.available_credits
      : undefined;
  return { used, available };
}

/**
 * `gate` with each permit counted and its wait timed, by requester class and tenant. Tenants are
 * labelled by name only when configured (`named`, and the operator's `default`): any other
 * (a `pcds mcp` token's label, a client's tenant) is `other`, so the label's values stay few.
 */
export function meteredPermitGate(gate: PermitGate, named: Iterable<string> = []): PermitGate {
  const known = new Set([OPERATOR_TENANT, ...named]);
  return {
    async acquire(keyId, kind, options) {
      const asked = Date.now();
      const who = {
        class: options.requester.class,
        tenant: known.has(options.requester.tenant) ? options.requester.tenant : 'other',
      };
      try {
        await gate.acquire(keyId, kind, options);
      } catch (err) {
        if (err instanceof PermitRefusedError || err instanceof TenantBudgetError)
          recordPermitRefused(keyId, err.code, who);
        throw err;
      }
      recordPermit(keyId, kind, Date.now() - asked, who);
    },
    rateLimited: (keyId, retryAfterMs) => gate.rateLimited(keyId, retryAfterMs),
    creditsExhausted: (keyId) => gate.creditsExhausted(keyId),
    resetCredits: (keyId, by) => gate.resetCredits(keyId, by),
    ...(gate.keyForCall ? { keyForCall: gate.keyForCall.bind(gate) } : {}),
  };
}
