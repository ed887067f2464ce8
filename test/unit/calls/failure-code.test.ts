// One mapping from a failure to its code: by the SDK's failure classes, never by message text.
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ChildWorkflowFailure,
  RetryState,
  TerminatedFailure,
  TimeoutFailure,
} from '@temporalio/common';
import { TimeoutType } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  codeOfFailure,
  describeCode,
  failureCause,
  rowFailureCode,
} from '../../../src/calls/failure-code.js';

const refused = ApplicationFailure.create({
  type: 'invalid_credentials',
  message: 'invalid_credentials (HTTP 401): key or secret wrong, or key disabled',
  nonRetryable: true,
  details: [{ code: 'invalid_credentials', requestId: 'r-1' }],
});
const execution = { workflowId: 'w', runId: 'r' };
const activity = (cause: Error) =>
  new ActivityFailure(
    'failed',
    'pollCall',
    '1',
    RetryState.NON_RETRYABLE_FAILURE,
    undefined,
    cause,
  );

describe('failure codes', () => {
  it("takes an application failure's type, directly or behind an activity or a child", () => {
    for (const err of [
      refused,
      activity(refused),
      new ChildWorkflowFailure(
        'ns',
        execution,
        'pcdsEndpointCall',
        RetryState.NON_RETRYABLE_FAILURE,
        refused,
      ),
    ])
      expect(codeOfFailure(err)).toEqual({
        code: 'invalid_credentials',
        message: refused.message,
        details: [{ code: 'invalid_credentials', requestId: 'r-1' }],
        requestId: 'r-1',
      });
  });

  it("names an activity's timeout by the code given, and nothing else", () => {
    const timedOut = activity(new TimeoutFailure('t', undefined, TimeoutType.HEARTBEAT));
    expect(codeOfFailure(timedOut, 'poll_timeout')).toMatchObject({ code: 'poll_timeout' });
    expect(codeOfFailure(timedOut)).toBeUndefined();
    expect(codeOfFailure(new Error('application failure: invalid_credentials'))).toBeUndefined();
  });

  it('ends a row as cancelled, terminated or child_failed, keeping the request id it knew', () => {
    expect(rowFailureCode(new CancelledFailure('x'), 'r-2')).toMatchObject({
      code: 'cancelled',
      requestId: 'r-2',
    });
    expect(rowFailureCode(activity(new CancelledFailure('x')))).toMatchObject({
      code: 'cancelled',
    });
    expect(
      rowFailureCode(
        new ChildWorkflowFailure(
          'ns',
          execution,
          't',
          RetryState.NON_RETRYABLE_FAILURE,
          new TerminatedFailure('x'),
        ),
      ).code,
    ).toBe('terminated');
    expect(rowFailureCode(new Error('boom'), 'r-3')).toMatchObject({
      code: 'child_failed',
      requestId: 'r-3',
    });
    // The failure's own request id wins over the one known.
    expect(rowFailureCode(refused, 'r-9').requestId).toBe('r-1');
  });

  it('describes a code from the taxonomy, never from request data', () => {
    expect(describeCode('invalid_credentials', 401)).toBe(
      'invalid_credentials (HTTP 401): key or secret wrong, or key disabled',
    );
    expect(describeCode('made_up')).toBe('made_up: the service refused the request');
  });
});

describe('failureCause', () => {
  const child = (cause: Error) =>
    new ChildWorkflowFailure(
      'ns',
      execution,
      'pcdsEndpointCall',
      RetryState.NON_RETRYABLE_FAILURE,
      cause,
    );
  // A batch's failure as the client sees it: the row's child, then its activity, then the code.
  const deep = child(activity(refused));

  it('looks through one wrapper by default, as the workflows always have', () => {
    expect(failureCause(activity(refused))).toEqual({ kind: 'application', failure: refused });
    expect(failureCause(deep).kind).toBe('other');
    expect(codeOfFailure(deep)).toBeUndefined();
  });

  it('looks through as many wrappers as asked (the client asks for five)', () => {
    expect(failureCause(deep, 2)).toEqual({ kind: 'application', failure: refused });
    expect(failureCause(child(child(activity(new CancelledFailure('x')))), 5)).toEqual({
      kind: 'cancelled',
    });
  });

  it("reads a timeout only as an activity's", () => {
    const timeout = new TimeoutFailure('t', undefined, TimeoutType.START_TO_CLOSE);
    expect(failureCause(activity(timeout)).kind).toBe('activity_timeout');
    expect(failureCause(child(timeout)).kind).toBe('other');
  });
});
