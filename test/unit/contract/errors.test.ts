import { describe, expect, it } from 'vitest';
import {
  ERRORS,
  errorInfo,
  isSystemic,
  parseRetryAfter,
  retryRuleFor,
} from '../../../src/contract/errors.js';

// [code, HTTP, retry rule, systemic] exactly as the interface's Errors table and usage endpoint state.
const TABLE: [string, number, string, boolean][] = [
  ['missing_credentials', 401, 'never', true],
  ['invalid_credentials', 401, 'never', true],
  ['api_key_expired', 401, 'never', true],
  ['missing_api_key', 401, 'never', true],
  ['invalid_api_key', 401, 'never', true],
  ['missing_api_secret', 401, 'never', true],
  ['invalid_api_secret', 401, 'never', true],
  ['api_key_disabled', 403, 'never', true],
  ['subscription_inactive', 403, 'never', true],
  ['subscription_required', 403, 'never', true],
  ['ip_not_allowed', 403, 'never', true],
  ['access_denied', 403, 'never', true],
  ['insufficient_credits', 402, 'never', true],
  ['request_not_found', 404, 'never', false],
  ['invalid_callback_url', 400, 'never', false],
  ['invalid_month', 400, 'never', false],
  ['invalid_year', 400, 'never', false],
  ['invalid_date', 400, 'never', false],
  ['rate_limit_exceeded', 429, 'after_wait', false],
  ['search_error', 500, 'never', false],
  ['internal_error', 500, 'never', false],
  ['service_unavailable', 503, 'backoff', false],
];

describe('error taxonomy', () => {
  it.each(TABLE)('%s: HTTP %i, retry %s, systemic %s', (code, http, retry, systemic) => {
    const info = errorInfo(code);
    expect(info?.http).toBe(http);
    expect(info?.retry).toBe(retry);
    expect(info?.systemic).toBe(systemic);
    expect(info?.local).toBeUndefined();
    expect(retryRuleFor(http, code)).toBe(retry);
    expect(isSystemic(code)).toBe(systemic);
  });
  it('every service code is in the table; the rest are marked local', () => {
    const service = ERRORS.filter((e) => !e.local)
      .map((e) => e.code)
      .sort();
    expect(service).toEqual(TABLE.map(([c]) => c).sort());
  });
  it('codes are unique', () => {
    expect(new Set(ERRORS.map((e) => e.code)).size).toBe(ERRORS.length);
  });
  it('an unknown code is neither known nor systemic', () => {
    expect(errorInfo('no_such_code')).toBeUndefined();
    expect(isSystemic('no_such_code')).toBe(false);
  });
  it('a row or a result too large is local, terminal and not systemic', () => {
    for (const code of ['row_too_large', 'result_too_large'])
      expect(errorInfo(code)).toMatchObject({ retry: 'never', systemic: false, local: true });
  });
  it("a job's stored 429 is local and terminal", () => {
    expect(errorInfo('job_rate_limited')).toMatchObject({ http: 429, retry: 'never', local: true });
  });
});

describe('retryRuleFor', () => {
  it('429 on the request is retried after the wait, whatever the code', () => {
    expect(retryRuleFor(429, undefined)).toBe('after_wait');
    expect(retryRuleFor(429, 'rate_limit_exceeded', 'request')).toBe('after_wait');
  });
  it('a 429 stored as the job status ends the request', () => {
    expect(retryRuleFor(429, 'rate_limit_exceeded', 'job')).toBe('never');
    expect(retryRuleFor(200, 'rate_limit_exceeded', 'job')).toBe('never');
  });
  it('503 is retried with back-off even without a code', () => {
    expect(retryRuleFor(503, undefined)).toBe('backoff');
  });
  it.each([
    [401, undefined],
    [403, undefined],
    [402, undefined],
    [404, undefined],
    [400, undefined],
    [500, undefined],
    [502, undefined],
    [504, undefined],
    [500, 'search_error'],
  ] as const)('HTTP %i (%s) is not retried', (http, code) => {
    expect(retryRuleFor(http, code)).toBe('never');
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2015-10-21T07:28:00Z');
  it('delta seconds', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 5 ', now)).toBe(5_000);
    expect(parseRetryAfter('1.2', now)).toBe(1_200);
  });
  it('IMF-fixdate', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:30 GMT', now)).toBe(30_000);
  });
  it('RFC 850 and asctime dates, read as UTC', () => {
    expect(parseRetryAfter('Wednesday, 21-Oct-15 07:29:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('Wed Oct 21 07:28:10 2015', now)).toBe(10_000);
  });
  it('a date in the past means no wait', () => {
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:00:00 GMT', now)).toBe(0);
  });
  it.each([undefined, null, '', 'soon', '-5', '2015-10-21', '1e3'])(
    '%s is not a Retry-After value',
    (v) => {
      expect(parseRetryAfter(v, now)).toBeUndefined();
    },
  );
});
