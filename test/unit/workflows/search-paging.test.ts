// Where person-search paging goes after each page, and which caller fields it drops.
import { describe, expect, it } from 'vitest';
import { nextPage, withoutPaging } from '../../../src/workflows/search-paging.js';

const page = { maxResults: 250, pageSize: 100, offset: 0, limit: 100 };

describe('search paging', () => {
  it('moves on by the page length and asks only for the rows still wanted', () => {
    expect(nextPage({ ...page, taken: 100, pageRows: 100, hasMore: true })).toEqual({
      offset: 100,
      limit: 100,
    });
    expect(nextPage({ ...page, offset: 100, taken: 200, pageRows: 100, hasMore: true })).toEqual({
      offset: 200,
      limit: 50,
    });
  });

  it('stops at the maximum before looking at has_more', () => {
    expect(nextPage({ ...page, taken: 250, pageRows: 100, hasMore: true })).toEqual({
      stop: 'max_results',
    });
  });

  it('stops when the service says there is no more, or a page came back empty', () => {
    expect(nextPage({ ...page, taken: 40, pageRows: 40, hasMore: false })).toEqual({
      stop: 'no_more',
    });
    expect(nextPage({ ...page, taken: 100, pageRows: 0, hasMore: true })).toEqual({
      stop: 'no_more',
    });
  });

  it('never asks for an offset beyond the documented 999', () => {
    const deep = { maxResults: 5_000, pageSize: 100, limit: 100 };
    expect(nextPage({ ...deep, offset: 800, taken: 900, pageRows: 100, hasMore: true })).toEqual({
      offset: 900,
      limit: 100,
    });
    expect(nextPage({ ...deep, offset: 900, taken: 1_000, pageRows: 100, hasMore: true })).toEqual({
      stop: 'offset_limit',
    });
  });

  it('drops the paging fields a caller set, keeping the rest', () => {
    expect(
      withoutPaging({ query: 'cto', limit: 5, offset: 10, page: 2, cursor: 'x', type: 'light' }),
    ).toEqual({ query: 'cto', type: 'light' });
  });
});
