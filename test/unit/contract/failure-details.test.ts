// A failure's first detail read one way by every reader: typed fields kept, anything else dropped.
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { retryableFailure, terminalFailure } from '../../../src/activities/failures.js';
import { failureDetailsOf } from '../../../src/contract/failure-details.js';

describe('failureDetailsOf', () => {
  it('reads back what the activities write, terminal and retryable', () => {
    const terminal = terminalFailure({ code: 'invalid_credentials', httpStatus: 401 }, 'req-1');
    expect(failureDetailsOf(terminal.details)).toEqual({
      code: 'invalid_credentials',
      httpStatus: 401,
      requestId: 'req-1',
    });
    const retryable = retryableFailure({ code: 'rate_limited', httpStatus: 429 }, 1_500, 1_000);
    expect(failureDetailsOf(retryable.details)).toEqual({
      code: 'rate_limited',
      httpStatus: 429,
      retryAfterMs: 1_000,
      retryDelayMs: 1_500,
    });
  });

  it('drops fields of the wrong type and details of another kind', () => {
    expect(failureDetailsOf([{ code: 7, httpStatus: '401', requestId: 'r', extra: 1 }])).toEqual({
      requestId: 'r',
    });
    expect(failureDetailsOf(['text'])).toEqual({});
    expect(failureDetailsOf(undefined)).toEqual({});
    expect(failureDetailsOf(ApplicationFailure.create({ message: 'm' }).details)).toEqual({});
  });
});
