// The asynchronous data endpoints of the catalogue: POST submits (validation, access, credits,
// callback rules, then 202), GET with request_id polls. Person search adds page POSTs and page reads.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ASYNC_ENDPOINTS,
  applySearchTierRules,
  canonicalInput,
  checkCallbackUrl,
  findEndpoint,
  formatProblems,
  inputAliases,
  resolveSearchPaging,
  validateInput,
  type EndpointDef,
} from '../../contract/index.js';
import { admit } from '../access.js';
import type { EmulatorContext } from '../context.js';
import { submitFingerprint } from '../fingerprint.js';
import { decodeCursor, type Job } from '../jobs.js';
import type { ApiKeyRecord } from '../keys.js';
import { bucketOf } from '../prices.js';
import { sendData, sendError, sendRendered, type Rendered } from '../replies.js';

const CREDENTIAL_PARAMS = ['api_key', 'api_secret'];

function bodyObject(req: FastifyRequest): Record<string, unknown> | undefined {
  const b = req.body;
  if (b === undefined || b === '') return {};
  // A JSON null, array or scalar is not an input object.
  if (b === null || typeof b !== 'object' || Array.isArray(b)) return undefined;
  const out = { ...(b as Record<string, unknown>) };
  for (const k of CREDENTIAL_PARAMS) delete out[k];
  return out;
}

/** The job behind a request_id, if it belongs to this key and this endpoint. */
function ownedJob(
  ctx: EmulatorContext,
  keyId: string,
  endpoint: EndpointDef,
  requestId: string,
): Job | undefined {
  const job = ctx.jobs.get(requestId);
  return job && job.keyId === keyId && job.endpoint === endpoint ? job : undefined;
}

const notFound = (reply: FastifyReply) =>
  sendError(
    reply,
    404,
    'request_not_found',
    'No request with this request_id belongs to this key.',
  );

/** The outcome of a submit: a refusal (sent as the HTTP API's error), or the job and its reply. */
export type SubmitOutcome =
  | { ok: false; status: number; code: string; message: string }
  | { ok: true; job: Job; rendered: Rendered; page?: { offset: number; limit: number } };

const refused = (status: number, code: string, message: string): SubmitOutcome => ({
  ok: false,
  status,
  code,
  message,
});

/**
 * Everything a submit does after access is granted: callback rules, validation, restricted
 * endpoints, the credit check, then a new job or a person-search page POST. The HTTP route and
 * the MCP tools share it, so both accept, price and count a job the same way.
 */
export function submitJob(
  ctx: EmulatorContext,
  key: ApiKeyRecord,
  endpoint: EndpointDef,
  body: Record<string, unknown>,
): SubmitOutcome {
  // A string callback_url that breaks the delivery rules (its length included) is
  // invalid_callback_url, not a generic validation failure.
  if (typeof body.callback_url === 'string') {
    const check = checkCallbackUrl(body.callback_url, {
      allowLoopback: ctx.opts.allowLoopbackCallbacks,
    });
    if (!check.ok) return refused(400, 'invalid_callback_url', check.reason);
  }
  // Values as sent: an email with spaces around it is refused, as the service's format check would.
  const v = validateInput(endpoint, body, { trim: false });
  if (!v.ok) return refused(400, 'invalid_request', formatProblems(v.problems));
  const input = canonicalInput(v.value, inputAliases(endpoint));
  if (endpoint.restricted && !key.restrictedAccess.includes(endpoint.name)) {
    return refused(
      403,
      'access_denied',
      'This endpoint is disabled unless access is granted to the key.',
    );
  }
  const callbackUrl = typeof input.callback_url === 'string' ? input.callback_url : undefined;
  ctx.jobs.settleDue();
  if (!ctx.ledger.hasCredit(key)) {
    return refused(
      402,
      'insufficient_credits',
      'The credit balance is not positive; top up to continue.',
    );
  }

  if (
    endpoint.polling === 'person_search' &&
    (typeof input.request_id === 'string' || typeof input.cursor === 'string')
  ) {
    let requestId = input.request_id as string | undefined;
    let paging = resolveSearchPaging(input);
    if (typeof input.cursor === 'string') {
      const c = decodeCursor(input.cursor);
      if (!c)
        return refused(400, 'invalid_request', 'cursor is not a cursor returned by this service');
      requestId = c.requestId;
      // Explicit offset/limit/page in the same POST win over the cursor's.
      paging = {
        limit: typeof input.limit === 'number' ? input.limit : c.limit,
        offset:
          typeof input.offset === 'number' || typeof input.page === 'number'
            ? paging.offset
            : c.offset,
      };
      if (paging.offset > 999)
        return refused(400, 'invalid_request', 'cursor points past the last page (offset 999)');
    }
    const job = ownedJob(ctx, key.id, endpoint, requestId as string);
    if (!job)
      return refused(
        404,
        'request_not_found',
        'No request with this request_id belongs to this key.',
      );
    ctx.ledger.countRequest(key, 'search');
    ctx.stats.submitted(
      key.id,
      submitFingerprint(endpoint.name, { request_id: job.requestId, ...paging }),
    );
    return {
      ok: true,
      job,
      rendered: ctx.jobs.pagePost(job, paging.offset, paging.limit),
      page: paging,
    };
  }

  const fingerprint = submitFingerprint(endpoint.name, input);
  const page = endpoint.polling === 'person_search' ? resolveSearchPaging(input) : undefined;
  const job = page
    ? ctx.jobs.submit(key.id, endpoint, applySearchTierRules(input), callbackUrl, page)
    : ctx.jobs.submit(key.id, endpoint, input, callbackUrl);
  ctx.ledger.countRequest(key, bucketOf(endpoint));
  ctx.stats.submitted(key.id, fingerprint);
  return { ok: true, job, rendered: ctx.jobs.ack(job), ...(page ? { page } : {}) };
}

function submitHandler(ctx: EmulatorContext, endpoint: EndpointDef) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const body = bodyObject(req);
    // Logged on arrival, before any check: a request answered 429 or 401 still left its caller.
    if (body) ctx.stats.submitArrived(submitFingerprint(endpoint.name, body));
    const key = await admit(ctx, req, reply, { path: endpoint.path, product: endpoint.product });
    if (!key) return reply;
    if (!body) return sendError(reply, 400, 'invalid_request', 'The body must be a JSON object.');
    const outcome = submitJob(ctx, key, endpoint, body);
    if (!outcome.ok) return sendError(reply, outcome.status, outcome.code, outcome.message);
    return sendRendered(reply, outcome.rendered);
  };
}

const INT = /^\d{1,6}$/;

function pollHandler(ctx: EmulatorContext, endpoint: EndpointDef) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const key = await admit(ctx, req, reply, { path: endpoint.path, product: endpoint.product });
    if (!key) return reply;
    const q = req.query as Record<string, unknown>;
    const requestId = q.request_id;
    if (typeof requestId !== 'string' || requestId === '') {
      return sendError(reply, 400, 'invalid_request', 'request_id is required');
    }
    const job = ownedJob(ctx, key.id, endpoint, requestId);
    if (!job) return notFound(reply);
    if (!job.search) return sendRendered(reply, ctx.jobs.renderPoll(job));
    // A GET with only request_id reads offset 0 (any earlier cursor POST is ignored).
    const page = { offset: 0, limit: job.search.first.limit };
    for (const [field, min, max] of [
      ['offset', 0, 999],
      ['limit', 1, 100],
    ] as const) {
      const raw = q[field];
      if (raw === undefined) continue;
      if (typeof raw !== 'string' || !INT.test(raw) || Number(raw) < min || Number(raw) > max) {
        return sendError(
          reply,
          400,
          'invalid_request',
          `${field} must be an integer from ${min} to ${max}`,
        );
      }
      page[field] = Number(raw);
    }
    return sendRendered(reply, ctx.jobs.renderPoll(job, Date.now(), page));
  };
}

export function registerDataRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  for (const endpoint of ASYNC_ENDPOINTS) {
    app.post(endpoint.path, submitHandler(ctx, endpoint));
    app.get(endpoint.path, pollHandler(ctx, endpoint));
  }
  const feedback = findEndpoint('person_enrichment_feedback');
  if (feedback) {
    // Synchronous: a single insert, 200 at once, nothing to poll.
    app.post(feedback.path, async (req, reply) => {
      const key = await admit(ctx, req, reply, { path: feedback.path, product: feedback.product });
      if (!key) return reply;
      const body = bodyObject(req);
      if (!body) return sendError(reply, 400, 'invalid_request', 'The body must be a JSON object.');
      const v = validateInput(feedback, body, { trim: false });
      if (!v.ok) return sendError(reply, 400, 'invalid_request', formatProblems(v.problems));
      return sendData(reply, 200, { received: true });
    });
  }
}
