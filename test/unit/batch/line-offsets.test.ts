// The index an ordered copy of a batch's output keeps of where each row's line is: the first
// line of a row kept, rows in any order and far apart, and its size a fixed number of bytes a
// row (12), not the hundred or so of a map entry and an array a row.
import { describe, expect, it } from 'vitest';
import { LineOffsets, ROWS_PER_PAGE } from '../../../src/batch-io/line-offsets.js';

describe('LineOffsets', () => {
  it('keeps the first line of each row, in whatever order rows come', () => {
    const index = new LineOffsets();
    index.setFirst(3, 0, 40);
    index.setFirst(1, 41, 0);
    index.setFirst(3, 100, 7);
    index.setFirst(2, 2 ** 40, 2 ** 31);
    expect(index.get(3)).toEqual([0, 40]);
    expect(index.get(1)).toEqual([41, 0]);
    expect(index.get(2)).toEqual([2 ** 40, 2 ** 31]);
    expect(index.get(4)).toBeUndefined();
    expect(index.has(1)).toBe(true);
    expect(index.has(5)).toBe(false);
    expect(index.size).toBe(3);
  });

  it('holds 12 bytes a row, and one page for a row far past the others', () => {
    const index = new LineOffsets();
    const rows = 100_000;
    for (let row = rows; row >= 1; row -= 1) index.setFirst(row, row * 100, 99);
    expect(index.size).toBe(rows);
    expect(index.get(1)).toEqual([100, 99]);
    expect(index.get(rows)).toEqual([rows * 100, 99]);
    const pages = Math.ceil((rows + 1) / ROWS_PER_PAGE);
    expect(index.bytes).toBe(pages * ROWS_PER_PAGE * 12);
    expect(index.bytes).toBeLessThan(rows * 13);

    // A stray line numbered a billion costs a page, not the rows before it.
    index.setFirst(1_000_000_000, 0, 1);
    expect(index.bytes).toBe((pages + 1) * ROWS_PER_PAGE * 12);
    expect(index.get(1_000_000_000)).toEqual([0, 1]);
    expect(index.get(999_999_999)).toBeUndefined();
  });
});
