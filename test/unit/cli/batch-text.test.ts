// What `pcds batch status` and `pcds batch resume` tell an operator: the requests and job
// duration line, and what a resume does to the keys' credit breakers.
import { describe, expect, it } from 'vitest';
import { requestsText, resumeNotes } from '../../../src/cli/batch.js';

describe('requestsText', () => {
  it('shows requests per row and the job duration estimate once measured', () => {
    expect(requestsText({ requestsPerRow: 2.25, jobMsEstimate: 3_400 })).toBe(
      '2.25 requests per found/empty row; job duration estimate 3400 ms',
    );
  });

  it('says why a figure is missing instead of leaving it out', () => {
    expect(requestsText({})).toBe(
      'requests per row: none measured yet (no row found or empty); ' +
        'job duration estimate: not learned yet (it needs 5 rows found or empty)',
    );
  });
});

describe('resumeNotes', () => {
  const operator = { code: 'paused_by_operator', message: 'maintenance' };
  const credits = { code: 'insufficient_credits', message: '402 on key k1', keyId: 'k1' };

  it('after an operator pause, names each open breaker as staying open and how to close it', () => {
    expect(resumeNotes({ paused: operator }, ['k1'])).toEqual([
      'key k1: its credit breaker is open and stays open (this batch was paused for paused_by_operator, not for credits); after a top-up: pcds throttle resume k1',
    ]);
    expect(resumeNotes({ paused: operator }, [])).toEqual([]);
  });

  it('after a pause for credits, says the resume closes the breakers', () => {
    expect(resumeNotes({ paused: credits }, ['k1'])[0]).toMatch(
      /^paused for credits: this resume closes the credit breaker of its keys \(open: k1\)/,
    );
  });

  it('says a batch that was not paused does not change', () => {
    expect(resumeNotes({}, ['k1'])).toEqual(['the batch was not paused: nothing changes']);
  });
});
