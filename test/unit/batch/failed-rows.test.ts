// The failed rows a batch shows: the lowest row numbers, each once, whatever the finishing order.
import { describe, expect, it } from 'vitest';
import { failedRowOfLine, failedRowText, noteFailedRow } from '../../../src/batch/failed-rows.js';
import type { FailedRow } from '../../../src/batch/types.js';

describe('noteFailedRow', () => {
  it('keeps the lowest rows in row order, at most max', () => {
    const list: FailedRow[] = [];
    for (const row of [9, 4, 12, 1, 7, 4, 30, 2]) noteFailedRow(list, { row, code: `c${row}` }, 4);
    expect(list).toEqual([
      { row: 1, code: 'c1' },
      { row: 2, code: 'c2' },
      { row: 4, code: 'c4' },
      { row: 7, code: 'c7' },
    ]);
  });

  it('keeps ten by default and ignores a row noted twice', () => {
    const list: FailedRow[] = [];
    for (let row = 20; row >= 1; row--) noteFailedRow(list, { row, code: 'x' });
    noteFailedRow(list, { row: 3, code: 'other' });
    expect(list.map((f) => f.row)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(list[2].code).toBe('x');
  });
});

describe('failedRowOfLine / failedRowText', () => {
  it('gives a failed line its code and reason, the code once, and nothing for other lines', () => {
    const invalid = failedRowOfLine({
      row: 3,
      key: { email: 'not-an-email' },
      outcome: 'failed',
      code: 'invalid_row',
      message: 'email must be an email address',
    });
    expect(invalid).toEqual({
      row: 3,
      code: 'invalid_row',
      reason: 'email must be an email address',
    });
    expect(failedRowText(invalid!)).toBe('row 3 invalid_row: email must be an email address');
    // The key's values never reach the listing.
    expect(JSON.stringify(invalid)).not.toContain('not-an-email');
    const prefixed = failedRowOfLine({
      row: 8,
      outcome: 'failed',
      code: 'poll_timeout',
      message: 'poll_timeout: the job was still running 600 s after the service accepted it',
    });
    expect(failedRowText(prefixed!)).toBe(
      'row 8 poll_timeout: the job was still running 600 s after the service accepted it',
    );
    expect(failedRowText(failedRowOfLine({ row: 9, outcome: 'failed', code: 'x' })!)).toBe(
      'row 9 x',
    );
    expect(failedRowOfLine({ row: 1, outcome: 'found' })).toBeUndefined();
    expect(failedRowOfLine('not a line')).toBeUndefined();
  });
});
