import { describe, expect, it } from 'vitest';
import { getEndpoint } from '../../../src/contract/catalogue.js';
import { classifyPoll, classifySubmit } from '../../../src/contract/classify.js';

const RID = '9f86d081884c7d659a2feaa0c55ad015_1718000000_1';
const enrichment = getEndpoint('person_enrichment');
const search = getEndpoint('person_search');
const newsfeed = getEndpoint('person_newsfeed');
const ok = (data: Record<string, unknown>) => ({
  success: true,
  data,
  timestamp: '2024-06-10T10:00:00',
});
const fail = (code: string, message = 'm', data?: Record<string, unknown>) => ({
  success: false,
  error: { code, message },
  ...(data ? { data } : {}),
});

describe('classifyPoll', () => {
  it('in progress (200 or 202)', () => {
    expect(
      classifyPoll(enrichment, {
        httpStatus: 202,
        body: ok({ request_id: RID, status: 'processing', completed: false }),
      }),
    ).toEqual({ kind: 'running', status: 'processing' });
    expect(
      classifyPoll(enrichment, {
        httpStatus: 200,
        body: ok({ request_id: RID, status: 'enriching' }),
      }),
    ).toEqual({ kind: 'running', status: 'enriching' });
  });
  it('HTTP 200 with status completed but completed=false keeps polling', () => {
    expect(
      classifyPoll(search, {
        httpStatus: 200,
        body: ok({ request_id: RID, status: 'completed', completed: false }),
      }),
    ).toEqual({ kind: 'running', status: 'completed' });
  });
  it('found: the result at the endpoint result path', () => {
    const data = {
      request_id: RID,
      status: 'completed',
      completed: true,
      result: { displayname: 'A' },
    };
    expect(classifyPoll(enrichment, { httpStatus: 200, body: ok(data) })).toEqual({
      kind: 'found',
      status: 'completed',
      result: { displayname: 'A' },
      data,
    });
    const nf = { request_id: RID, status: 'completed', result: { newsfeed: [{ id: 1 }] } };
    expect(classifyPoll(newsfeed, { httpStatus: 200, body: ok(nf) })).toEqual({
      kind: 'found',
      status: 'completed',
      result: [{ id: 1 }],
      data: nf,
    });
  });
  it('empty: a completed job without a payload', () => {
    const data = { request_id: RID, status: 'completed', result: {} };
    expect(classifyPoll(enrichment, { httpStatus: 200, body: ok(data) })).toEqual({
      kind: 'empty',
      status: 'completed',
      data,
    });
    const nf = { request_id: RID, status: 'success', result: { newsfeed: [] } };
    expect(classifyPoll(newsfeed, { httpStatus: 200, body: ok(nf) })).toEqual({
      kind: 'empty',
      status: 'success',
      data: nf,
    });
  });
  it.each(['completed', 'exhausted', 'stale'])(
    'person search %s is found (rows are read by page)',
    (status) => {
      const data = { request_id: RID, status, completed: true, has_more: status === 'exhausted' };
      expect(classifyPoll(search, { httpStatus: 200, body: ok(data) })).toEqual({
        kind: 'found',
        status,
        result: undefined,
        data,
      });
    },
  );
  it('the flat variant is read like the envelope', () => {
    const body = { request_id: RID, status: 'completed', completed: true, result: { a: 1 } };
    expect(classifyPoll(enrichment, { httpStatus: 200, body })).toMatchObject({
      kind: 'found',
      result: { a: 1 },
    });
  });
  it('failed status with the job error', () => {
    expect(
      classifyPoll(enrichment, {
        httpStatus: 200,
        body: ok({
          request_id: RID,
          status: 'failed',
          error: { code: 'search_error', message: 'm' },
        }),
      }),
    ).toEqual({
      kind: 'failed',
      status: 'failed',
      failure: { code: 'search_error', message: 'm', httpStatus: 200 },
    });
  });
  it('failed status without an error', () => {
    expect(
      classifyPoll(enrichment, { httpStatus: 200, body: ok({ status: 'timed_out' }) }),
    ).toEqual({
      kind: 'failed',
      status: 'timed_out',
      failure: { code: 'job_failed', message: 'job ended with status timed_out', httpStatus: 200 },
    });
    expect(
      classifyPoll(enrichment, { httpStatus: 200, body: ok({ status: 'not_found' }) }),
    ).toMatchObject({ kind: 'failed', failure: { code: 'not_found' } });
  });
  it('an undocumented status is an explicit failure', () => {
    expect(
      classifyPoll(enrichment, {
        httpStatus: 200,
        body: ok({ request_id: RID, status: 'thinking' }),
      }),
    ).toEqual({
      kind: 'failed',
      status: 'thinking',
      failure: {
        code: 'unknown_status',
        message: 'undocumented status "thinking"',
        httpStatus: 200,
      },
    });
  });
  it('a failed envelope with HTTP 200 ends the request', () => {
    expect(classifyPoll(enrichment, { httpStatus: 200, body: fail('internal_error') })).toEqual({
      kind: 'failed',
      failure: { code: 'internal_error', message: 'm', httpStatus: 200 },
    });
  });
  it.each([
    [401, 'invalid_credentials'],
    [403, 'subscription_required'],
    [402, 'insufficient_credits'],
    [404, 'request_not_found'],
    [500, 'search_error'],
    [500, 'internal_error'],
  ] as const)('HTTP %i %s ends the request', (httpStatus, code) => {
    expect(classifyPoll(enrichment, { httpStatus, body: fail(code) })).toEqual({
      kind: 'failed',
      failure: { code, message: 'm', httpStatus },
    });
  });
  it('429 on the poll is retried after the wait', () => {
    expect(
      classifyPoll(enrichment, {
        httpStatus: 429,
        body: fail('rate_limit_exceeded'),
        retryAfterMs: 3000,
      }),
    ).toEqual({
      kind: 'retry',
      failure: { code: 'rate_limit_exceeded', message: 'm', httpStatus: 429 },
      retryAfterMs: 3000,
    });
    expect(classifyPoll(enrichment, { httpStatus: 429, body: undefined })).toEqual({
      kind: 'retry',
      failure: { code: 'rate_limit_exceeded', message: 'HTTP 429', httpStatus: 429 },
    });
  });
  it('503 is retried with back-off', () => {
    expect(
      classifyPoll(enrichment, { httpStatus: 503, body: fail('service_unavailable') }),
    ).toEqual({
      kind: 'retry',
      failure: { code: 'service_unavailable', message: 'm', httpStatus: 503 },
    });
  });
  it('a 429 stored as the job terminal status ends the request', () => {
    const stored = {
      request_id: RID,
      status: 'failed',
      error: { code: 'rate_limit_exceeded', message: 'm' },
    };
    expect(classifyPoll(enrichment, { httpStatus: 200, body: ok(stored) })).toEqual({
      kind: 'failed',
      status: 'failed',
      failure: { code: 'job_rate_limited', message: 'm', httpStatus: 200 },
    });
    expect(
      classifyPoll(enrichment, {
        httpStatus: 429,
        body: fail('rate_limit_exceeded', 'm', { request_id: RID, status: 'failed' }),
      }),
    ).toEqual({
      kind: 'failed',
      status: 'failed',
      failure: { code: 'job_rate_limited', message: 'm', httpStatus: 429 },
    });
    expect(
      classifyPoll(enrichment, { httpStatus: 200, body: fail('rate_limit_exceeded') }),
    ).toEqual({
      kind: 'failed',
      failure: { code: 'job_rate_limited', message: 'm', httpStatus: 200 },
    });
  });
  it('garbage: retried on 5xx, a failure otherwise', () => {
    expect(classifyPoll(enrichment, { httpStatus: 502, body: '<html>' })).toEqual({
      kind: 'retry',
      failure: {
        code: 'invalid_response',
        message: 'HTTP 502 without an envelope',
        httpStatus: 502,
      },
    });
    expect(classifyPoll(enrichment, { httpStatus: 200, body: 'oops' })).toEqual({
      kind: 'failed',
      failure: {
        code: 'invalid_response',
        message: 'HTTP 200: the reply is not an envelope',
        httpStatus: 200,
      },
    });
  });
});

describe('classifySubmit', () => {
  it.each(['queued', 'processing'])('202 with %s is accepted', (status) => {
    expect(
      classifySubmit(enrichment, {
        httpStatus: 202,
        body: ok({ request_id: RID, status, message: 'poll GET' }),
      }),
    ).toEqual({ kind: 'accepted', requestId: RID, status });
  });
  it('a person search acknowledgement with queued is accepted although its poll contract lacks queued', () => {
    expect(
      classifySubmit(search, { httpStatus: 200, body: ok({ request_id: RID, status: 'queued' }) }),
    ).toEqual({ kind: 'accepted', requestId: RID, status: 'queued' });
  });
  it('an acknowledgement without status defaults to queued', () => {
    expect(classifySubmit(enrichment, { httpStatus: 202, body: ok({ request_id: RID }) })).toEqual({
      kind: 'accepted',
      requestId: RID,
      status: 'queued',
    });
  });
  it('a submit that completed at once is done, with the poll outcome', () => {
    const data = { request_id: RID, status: 'completed', completed: true, result: { a: 1 } };
    expect(classifySubmit(enrichment, { httpStatus: 200, body: ok(data) })).toEqual({
      kind: 'done',
      requestId: RID,
      poll: { kind: 'found', status: 'completed', result: { a: 1 }, data },
    });
    const sdata = { request_id: RID, status: 'completed', completed: true };
    expect(classifySubmit(search, { httpStatus: 200, body: ok(sdata) })).toEqual({
      kind: 'done',
      requestId: RID,
      poll: { kind: 'found', status: 'completed', result: undefined, data: sdata },
    });
  });
  it('accepted without a request_id is an invalid reply', () => {
    expect(classifySubmit(enrichment, { httpStatus: 202, body: ok({ status: 'queued' }) })).toEqual(
      {
        kind: 'rejected',
        failure: {
          code: 'invalid_response',
          message: 'accepted without a request_id',
          httpStatus: 202,
        },
      },
    );
  });
  it('an unreadable 2xx is not repeated: the job may exist', () => {
    expect(classifySubmit(enrichment, { httpStatus: 202, body: 'ok' })).toEqual({
      kind: 'rejected',
      failure: {
        code: 'invalid_response',
        message: 'HTTP 202: the reply is not an envelope',
        httpStatus: 202,
      },
    });
  });
  it.each([
    [400, 'invalid_callback_url'],
    [401, 'missing_credentials'],
    [401, 'api_key_expired'],
    [403, 'ip_not_allowed'],
    [403, 'subscription_inactive'],
    [403, 'access_denied'],
    [402, 'insufficient_credits'],
    [500, 'internal_error'],
  ] as const)('HTTP %i %s is rejected', (httpStatus, code) => {
    expect(classifySubmit(enrichment, { httpStatus, body: fail(code) })).toEqual({
      kind: 'rejected',
      failure: { code, message: 'm', httpStatus },
    });
  });
  it('a 400 without an error code is an invalid request', () => {
    expect(classifySubmit(enrichment, { httpStatus: 400, body: undefined })).toEqual({
      kind: 'rejected',
      failure: { code: 'invalid_request', message: 'HTTP 400', httpStatus: 400 },
    });
  });
  it.each([500, 502, 503, 504])(
    'a bare %i (a gateway, no envelope) may have reached the service: outcome unknown, not repeated',
    (httpStatus) => {
      expect(classifySubmit(enrichment, { httpStatus, body: '<html>' })).toEqual({
        kind: 'rejected',
        failure: {
          code: 'submit_outcome_unknown',
          message: `HTTP ${httpStatus} without the service's envelope: the job may exist, so the submit is not repeated`,
          httpStatus,
        },
      });
    },
  );
  it('a 500 with the service envelope is its terminal error', () => {
    expect(
      classifySubmit(enrichment, {
        httpStatus: 500,
        body: { success: false, error: { code: 'internal_error', message: 'm' } },
      }),
    ).toEqual({
      kind: 'rejected',
      failure: { code: 'internal_error', message: 'm', httpStatus: 500 },
    });
  });
  it('429 and 503 are retried', () => {
    expect(
      classifySubmit(enrichment, {
        httpStatus: 429,
        body: fail('rate_limit_exceeded'),
        retryAfterMs: 1000,
      }),
    ).toEqual({
      kind: 'retry',
      failure: { code: 'rate_limit_exceeded', message: 'm', httpStatus: 429 },
      retryAfterMs: 1000,
    });
    expect(
      classifySubmit(enrichment, { httpStatus: 503, body: fail('service_unavailable') }),
    ).toEqual({
      kind: 'retry',
      failure: { code: 'service_unavailable', message: 'm', httpStatus: 503 },
    });
  });
  it('a bare 503 is retried on a poll (free) but never on a submit (it may have been sent)', () => {
    expect(classifyPoll(enrichment, { httpStatus: 503, body: undefined })).toMatchObject({
      kind: 'retry',
    });
    expect(classifySubmit(enrichment, { httpStatus: 503, body: undefined })).toMatchObject({
      kind: 'rejected',
      failure: { code: 'submit_outcome_unknown' },
    });
  });
});
