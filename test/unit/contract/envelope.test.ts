import { describe, expect, it } from 'vitest';
import {
  REQUEST_ID_RE,
  TIMESTAMP_RE,
  formatTimestamp,
  jobView,
  parseEnvelope,
  serviceJobMs,
  timestampMs,
} from '../../../src/contract/envelope.js';
import { extractResult, isEmptyResult } from '../../../src/contract/results.js';

const RID = '9f86d081884c7d659a2feaa0c55ad015_1718000000_1';

describe('parseEnvelope', () => {
  it('reads a success envelope', () => {
    expect(
      parseEnvelope({
        success: true,
        data: { request_id: RID, status: 'queued' },
        timestamp: '2024-06-10T10:00:00',
      }),
    ).toEqual({
      success: true,
      data: { request_id: RID, status: 'queued' },
      timestamp: '2024-06-10T10:00:00',
    });
  });
  it('reads a failure envelope; a missing message becomes empty', () => {
    expect(parseEnvelope({ success: false, error: { code: 'request_not_found' } })).toEqual({
      success: false,
      error: { code: 'request_not_found', message: '' },
    });
  });
  it('drops null data and error', () => {
    expect(parseEnvelope({ success: true, data: null, error: null })).toEqual({ success: true });
  });
  it('reads the flat variant as data', () => {
    expect(
      parseEnvelope({
        request_id: RID,
        status: 'completed',
        completed: true,
        result: { a: 1 },
        timestamp: 't',
      }),
    ).toEqual({
      success: true,
      data: { request_id: RID, status: 'completed', completed: true, result: { a: 1 } },
      timestamp: 't',
    });
  });
  it('a flat variant with an error object is a failure', () => {
    expect(
      parseEnvelope({
        request_id: RID,
        status: 'failed',
        error: { code: 'search_error', message: 'm' },
      }),
    ).toEqual({
      success: false,
      data: { request_id: RID, status: 'failed', error: { code: 'search_error', message: 'm' } },
      error: { code: 'search_error', message: 'm' },
    });
  });
  it.each([
    null,
    undefined,
    'text',
    42,
    [],
    [{ success: true }],
    {},
    { foo: 1 },
    { success: 'yes' },
    { success: false, error: { message: 'no code' } },
    { success: true, data: [1] },
  ])('garbage %j is undefined', (body) => {
    expect(parseEnvelope(body)).toBeUndefined();
  });
});

describe('jobView', () => {
  it('reads every job field', () => {
    expect(
      jobView({
        request_id: RID,
        status: 'completed',
        completed: true,
        message: 'm',
        error: null,
        created_on: '2024-06-10T10:00:00',
        completed_on: '2024-06-10T10:00:05Z',
      }),
    ).toEqual({
      requestId: RID,
      status: 'completed',
      completed: true,
      message: 'm',
      error: null,
      createdOn: '2024-06-10T10:00:00',
      completedOn: '2024-06-10T10:00:05Z',
    });
  });
  it('ignores fields of the wrong type', () => {
    expect(jobView({ request_id: 5, status: ['x'], completed: 'true', error: 'boom' })).toEqual({});
    expect(jobView(undefined)).toEqual({});
  });
  it('reads an error object', () => {
    expect(jobView({ error: { code: 'rate_limit_exceeded', message: 'm' } })).toEqual({
      error: { code: 'rate_limit_exceeded', message: 'm' },
    });
  });
});

describe('timestamps and request ids', () => {
  it('formats YYYY-MM-DDThh:mm:ss in UTC', () => {
    const s = formatTimestamp(new Date(Date.UTC(2024, 0, 2, 3, 4, 5, 678)));
    expect(s).toBe('2024-01-02T03:04:05');
    expect(TIMESTAMP_RE.test(s)).toBe(true);
    expect(TIMESTAMP_RE.test('2024-01-02T03:04:05Z')).toBe(false);
  });
  it.each([RID, 'ABCDEF0123456789ABCDEF_1718000000_12'])('%s is a request id', (id) => {
    expect(REQUEST_ID_RE.test(id)).toBe(true);
  });
  it.each([
    '',
    'abc_1718000000_1',
    `${RID}_2`,
    '9f86d081884c7d659a2feaa0c55ad015-1718000000-1',
    'zz86d081884c7d65_1718000000_1',
    '9f86d081884c7d65_1718000000_12345',
  ])('%s is not a request id', (id) => {
    expect(REQUEST_ID_RE.test(id)).toBe(false);
  });
});

describe('extractResult', () => {
  const data = { result: { newsfeed: [{ id: 1 }], name: 'x' }, results: [{ id: 2 }] };
  it.each([
    ['data', data],
    ['data.result', data.result],
    ['data.results', data.results],
    ['data.result.newsfeed', data.result.newsfeed],
  ] as const)('%s', (path, expected) => {
    expect(extractResult(data, path)).toEqual(expected);
  });
  it('is undefined when the path is absent', () => {
    expect(extractResult(undefined, 'data.result')).toBeUndefined();
    expect(extractResult({ result: 'x' }, 'data.result.newsfeed')).toBeUndefined();
    expect(extractResult({}, 'data.results')).toBeUndefined();
  });
});

describe('isEmptyResult', () => {
  it.each([undefined, null, '', '  ', [], {}, { a: null, b: [], c: { d: '' } }])(
    '%j is empty',
    (v) => {
      expect(isEmptyResult(v)).toBe(true);
    },
  );
  it.each([0, false, 'x', [null], { a: 1 }, { a: { b: 'x' } }])('%j is not empty', (v) => {
    expect(isEmptyResult(v)).toBe(false);
  });
});

describe('service timestamps', () => {
  it('reads the interface form, with or without a trailing Z or a fraction', () => {
    expect(timestampMs('2026-01-02T03:04:05')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(timestampMs('2026-01-02T03:04:05Z')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(timestampMs('2026-01-02T03:04:05.250Z')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5, 250));
    expect(timestampMs('yesterday')).toBeUndefined();
    expect(timestampMs(undefined)).toBeUndefined();
  });
  it('gives the job duration only when both ends are there and in order', () => {
    expect(
      serviceJobMs({ createdOn: '2026-01-02T03:04:05', completedOn: '2026-01-02T03:04:08Z' }),
    ).toBe(3_000);
    expect(serviceJobMs({ createdOn: '2026-01-02T03:04:05' })).toBeUndefined();
    expect(
      serviceJobMs({ createdOn: '2026-01-02T03:04:08', completedOn: '2026-01-02T03:04:05' }),
    ).toBeUndefined();
  });
});
