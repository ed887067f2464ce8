// The MCP endpoint's answers read as the HTTP API's replies: the same classification, the result
// at the HTTP endpoint's result path, the same error codes and waits.
import { describe, expect, it } from 'vitest';
import {
  classifyPoll,
  classifySubmit,
  getEndpoint,
  mcpArgumentProblems,
  mcpUnsupportedReason,
  replyOfCheckStatus,
  replyOfMcpHttpFailure,
  replyOfRpcError,
  replyOfToolStart,
  type Reply,
} from '../../../src/contract/index.js';

const enrich = getEndpoint('person_enrichment');
const RID = 'req_123_456';

/** The HTTP poll of the same completed job: data as the HTTP API nests it. */
const httpPoll = (data: Record<string, unknown>): Reply => ({
  httpStatus: 200,
  body: { success: true, data: { request_id: RID, status: 'completed', completed: true, ...data } },
});

describe('a tool call', () => {
  it('pending with a request_id is an accepted job', () => {
    const reply = replyOfToolStart({
      request_id: RID,
      status: 'pending',
      endpoint: 'person_enrichment',
      next_action: { tool: 'check_status', args: { request_id: RID } },
    });
    expect(classifySubmit(enrich, reply)).toEqual({
      kind: 'accepted',
      requestId: RID,
      status: 'queued',
    });
  });

  it('any other answer may have started a job: rejected, never repeated', () => {
    for (const doc of [undefined, { status: 'pending' }, { request_id: RID, status: 'complete' }])
      expect(classifySubmit(enrich, replyOfToolStart(doc))).toMatchObject({
        kind: 'rejected',
        failure: { code: 'invalid_response' },
      });
  });
});

describe('check_status', () => {
  it('pending is running', () => {
    expect(
      classifyPoll(
        enrich,
        replyOfCheckStatus(enrich, RID, { status: 'pending', request_id: RID, message: 'wait' }),
      ),
    ).toEqual({ kind: 'running', status: 'processing' });
  });

  it.each([
    [
      'person_enrichment',
      { full_name: 'A B', emails: ['a@b.c'] },
      { result: { full_name: 'A B', emails: ['a@b.c'] } },
    ],
    ['person_ask', { answer: 'yes' }, { result: { answer: 'yes' } }],
    [
      'person_newsfeed',
      { newsfeed: [{ text: 'post' }] },
      { result: { newsfeed: [{ text: 'post' }] } },
    ],
    ['company_enrichment', { result: { name: 'Acme' } }, { result: { name: 'Acme' } }],
    ['person_lookup_fields', { result: { title: 'CTO' } }, { result: { title: 'CTO' } }],
    [
      'company_search',
      { results: [{ name: 'Acme' }], total: 1 },
      { results: [{ name: 'Acme' }], total: 1 },
    ],
    [
      'person_search',
      { results: [{ id: 1 }], offset: 0, limit: 10, total: 1, has_more: false },
      { results: [{ id: 1 }], offset: 0, limit: 10, total: 1, has_more: false },
    ],
  ])('complete of %s gives the HTTP poll result', (name, mcpData, httpData) => {
    const endpoint = getEndpoint(name);
    const overMcp = classifyPoll(
      endpoint,
      replyOfCheckStatus(endpoint, RID, {
        status: 'complete',
        endpoint: name,
        request_id: RID,
        data: mcpData,
      }),
    );
    const overHttp = classifyPoll(endpoint, httpPoll(httpData));
    expect(overMcp.kind).toBe('found');
    expect(overMcp).toEqual(overHttp);
  });

  it('an empty result is empty, as over HTTP', () => {
    const endpoint = getEndpoint('company_search');
    const reply = replyOfCheckStatus(endpoint, RID, {
      status: 'complete',
      data: { results: [] },
    });
    expect(classifyPoll(endpoint, reply)).toMatchObject({ kind: 'empty', status: 'completed' });
  });

  it.each([
    ['not_found', 'not_found'],
    ['request_not_found', 'request_not_found'],
    ['search_error', 'search_error'],
    ['internal_error', 'internal_error'],
    ['rate_limit_exceeded', 'job_rate_limited'],
  ])('error %s ends the call as %s', (code, expected) => {
    const reply = replyOfCheckStatus(enrich, RID, {
      status: 'error',
      request_id: RID,
      code,
      message: 'm',
    });
    expect(reply.retryAfterMs).toBeUndefined();
    expect(classifyPoll(enrich, reply)).toMatchObject({
      kind: 'failed',
      failure: { code: expected },
    });
  });
});

describe('JSON-RPC errors', () => {
  it('a throttled tools/call waits the service s retry_after_seconds', () => {
    const reply = replyOfRpcError({
      code: -32029,
      message: 'Rate limit exceeded',
      data: { code: 'rate_limit_exceeded', retry_after_seconds: 2 },
    });
    expect(reply).toMatchObject({ httpStatus: 429, retryAfterMs: 2000 });
    expect(classifySubmit(enrich, reply)).toMatchObject({
      kind: 'retry',
      retryAfterMs: 2000,
      failure: { code: 'rate_limit_exceeded' },
    });
    expect(classifyPoll(enrich, reply)).toMatchObject({ kind: 'retry', retryAfterMs: 2000 });
  });

  it.each([
    [-32002, 'insufficient_credits', 402],
    [-32003, 'subscription_required', 403],
    [-32003, 'ip_not_allowed', 403],
    [-32602, 'invalid_request', 400],
    [-32602, 'invalid_callback_url', 400],
  ])('%i %s is refused with its code and HTTP class', (rpc, code, http) => {
    const reply = replyOfRpcError({ code: rpc, message: 'no', data: { code } });
    expect(reply.httpStatus).toBe(http);
    expect(classifySubmit(enrich, reply)).toMatchObject({
      kind: 'rejected',
      failure: { code, httpStatus: http },
    });
  });

  it('service_unavailable is transient', () => {
    const reply = replyOfRpcError({
      code: -32050,
      message: 'down',
      data: { code: 'service_unavailable' },
    });
    expect(classifySubmit(enrich, reply)).toMatchObject({ kind: 'retry' });
  });

  it('an error without the service code is judged by its JSON-RPC code', () => {
    expect(replyOfRpcError({ code: -32602, message: 'bad args' }).httpStatus).toBe(400);
    expect(
      classifySubmit(enrich, replyOfRpcError({ code: -32603, message: 'oops' })),
    ).toMatchObject({ kind: 'rejected', failure: { code: 'internal_error' } });
  });
});

describe('HTTP refusals of the MCP endpoint', () => {
  const rpcBody = (code: string) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32001, message: 'm', data: { code } },
    });

  it('401 and 403 carry the service code of the JSON-RPC error inside', () => {
    expect(
      classifySubmit(enrich, replyOfMcpHttpFailure(401, rpcBody('invalid_credentials'))),
    ).toMatchObject({
      kind: 'rejected',
      failure: { code: 'invalid_credentials', httpStatus: 401 },
    });
    expect(
      classifySubmit(enrich, replyOfMcpHttpFailure(403, rpcBody('access_denied'))),
    ).toMatchObject({ kind: 'rejected', failure: { code: 'access_denied', httpStatus: 403 } });
  });

  it('a 429 without a body still waits its Retry-After', () => {
    expect(classifySubmit(enrich, replyOfMcpHttpFailure(429, '', 3000))).toMatchObject({
      kind: 'retry',
      retryAfterMs: 3000,
      failure: { code: 'rate_limit_exceeded' },
    });
  });

  it("a gateway's 5xx to a tools/call is submit_outcome_unknown; to a check_status, retried", () => {
    for (const status of [502, 503, 504]) {
      const reply = replyOfMcpHttpFailure(status, '<html>bad gateway</html>');
      expect(classifySubmit(enrich, reply)).toMatchObject({
        kind: 'rejected',
        failure: { code: 'submit_outcome_unknown' },
      });
      expect(classifyPoll(enrich, reply)).toMatchObject({ kind: 'retry' });
    }
  });

  it("the service's own 503 inside a JSON-RPC error is transient", () => {
    expect(
      classifySubmit(enrich, replyOfMcpHttpFailure(503, rpcBody('service_unavailable'))),
    ).toMatchObject({ kind: 'retry' });
  });
});

describe('what can go over MCP', () => {
  it('names an endpoint without a tool, and refuses webhooks', () => {
    expect(mcpUnsupportedReason(getEndpoint('person_enrich'))).toMatch(
      /^person_enrich has no MCP tool/,
    );
    expect(mcpUnsupportedReason(enrich)).toBeUndefined();
    expect(mcpUnsupportedReason(enrich, { webhook: true })).toMatch(/webhook/);
  });

  it('names the parameters a tool does not take', () => {
    expect(mcpArgumentProblems('person_enrichment', { email: 'a@b.co' })).toEqual([]);
    const problems = mcpArgumentProblems('person_enrichment', {
      email: 'a@b.co',
      lookup_mode: 'fast',
    });
    expect(JSON.stringify(problems)).toMatch(/lookup_mode/);
  });
});
