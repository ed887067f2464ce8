// The page a person_search call reads back and the paging fields it returns: from the POST's own
// offset, legacy page or defaults; a cursor alone names no page the call could read.
import { describe, expect, it } from 'vitest';
import { searchCallProblem, searchPageInfo, searchPageOf } from '../../../src/contract/index.js';

describe('searchPageOf', () => {
  it('takes the offset and limit, converts a legacy page, and defaults like the service', () => {
    expect(searchPageOf({ query: 'x', offset: 20, limit: 5 })).toEqual({ offset: 20, limit: 5 });
    expect(searchPageOf({ query: 'x', page: 2, limit: 5 })).toEqual({ offset: 5, limit: 5 });
    expect(searchPageOf({ request_id: 'r' })).toEqual({ offset: 0, limit: 10 });
  });

  it('names no page for a cursor, and the call refuses it without echoing it', () => {
    expect(searchPageOf({ cursor: 'c-secret-ish' })).toBeUndefined();
    const problem = searchCallProblem({ cursor: 'c-secret-ish' });
    expect(problem).toMatch(/^cursor: /);
    expect(problem).not.toContain('c-secret-ish');
    expect(searchCallProblem({ query: 'x', offset: 3 })).toBeUndefined();
  });
});

describe('searchPageInfo', () => {
  it('gives has_more, next_cursor, total and where the next page starts', () => {
    expect(
      searchPageInfo(
        { results: [], has_more: true, next_cursor: 'n', total: 30 },
        { offset: 20, limit: 5 },
      ),
    ).toEqual({
      offset: 20,
      limit: 5,
      has_more: true,
      next_cursor: 'n',
      next_offset: 25,
      total: 30,
    });
  });

  it('has no next offset on the last page, nor past the service offset ceiling', () => {
    expect(
      searchPageInfo({ has_more: false, next_cursor: null }, { offset: 25, limit: 5 }),
    ).toEqual({ offset: 25, limit: 5, has_more: false, next_cursor: null });
    expect(
      searchPageInfo({ has_more: true }, { offset: 950, limit: 100 }).next_offset,
    ).toBeUndefined();
  });
});
