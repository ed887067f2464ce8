// The failed rows a batch shows: the lowest row numbers, each once, whatever the finishing order.
import { describe, expect, it } from 'vitest';
import { noteFailedRow } from '../../../src/batch/failed-rows.js';
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
