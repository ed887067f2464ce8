// Where each row's line starts in a batch's JSONL output, and how long it is: 12 bytes a row in
// typed arrays, a page of rows at a time, instead of a map entry and an array a row (about 100
// bytes). An ordered copy of a million-row output holds its index in about 12 MB.

/** Rows a page holds: a row number far past the others costs one page, not the rows between. */
export const ROWS_PER_PAGE = 4096;

interface Page {
  /** Byte offsets (exact up to 2^53 in a float64). */
  offsets: Float64Array;
  /** Byte length + 1 (0: no line for that row). */
  lengths: Uint32Array;
}

/** Row -> [byte offset, byte length] of its first line. */
export class LineOffsets {
  private readonly pages = new Map<number, Page>();
  private count = 0;

  /** Rows with a line. */
  get size(): number {
    return this.count;
  }

  /** Bytes the index holds in its pages. */
  get bytes(): number {
    return this.pages.size * ROWS_PER_PAGE * (8 + 4);
  }

  has(row: number): boolean {
    return this.get(row) !== undefined;
  }

  /** Notes a row's line; a row's first line stays (a later one is a duplicate). */
  setFirst(row: number, offset: number, length: number): void {
    const pageNo = Math.floor(row / ROWS_PER_PAGE);
    let page = this.pages.get(pageNo);
    if (!page) {
      page = {
        offsets: new Float64Array(ROWS_PER_PAGE),
        lengths: new Uint32Array(ROWS_PER_PAGE),
      };
      this.pages.set(pageNo, page);
    }
    const at = row % ROWS_PER_PAGE;
    if (page.lengths[at] !== 0) return;
    page.offsets[at] = offset;
    page.lengths[at] = length + 1;
    this.count += 1;
  }

  get(row: number): [number, number] | undefined {
    const page = this.pages.get(Math.floor(row / ROWS_PER_PAGE));
    const at = row % ROWS_PER_PAGE;
    if (!page || page.lengths[at] === 0) return undefined;
    return [page.offsets[at], page.lengths[at] - 1];
  }
}
