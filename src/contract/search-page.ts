// The page a person_search call reads, and the paging fields it returns with the rows. The rows of
// a page are read with GET request_id + the page POST's own offset and limit (a GET with only
// request_id reads offset 0), so a call knows its page from its parameters.
import { MAX_SEARCH_OFFSET, resolveSearchPaging } from './validate.js';

export interface SearchPageRequest {
  offset: number;
  limit: number;
}

/** Where a page of a person search stands: the page read, and how to continue. */
export interface SearchPageInfo {
  offset: number;
  limit: number;
  /** The completed page's own word: continue only while it is true. */
  has_more: boolean;
  /** The service's cursor to the next page (a POST), or null when there is none. */
  next_cursor: string | null;
  /** Where the next page starts (offset + limit), given when has_more and it is a valid offset. */
  next_offset?: number;
  /** Matches of the whole search, when the service says. */
  total?: number;
}

/**
 * The page a person_search POST asks for: its offset (or legacy `page`, converted) and limit,
 * defaults as the service's. Undefined for a cursor alone: the cursor's page is the service's
 * secret, so its rows could not be read back.
 */
export function searchPageOf(params: Record<string, unknown>): SearchPageRequest | undefined {
  if (typeof params.cursor === 'string') return undefined;
  return resolveSearchPaging(params);
}

/** Why a person_search call cannot take these parameters (no value is echoed), if it cannot. */
export function searchCallProblem(params: Record<string, unknown>): string | undefined {
  if (typeof params.cursor !== 'string') return undefined;
  return 'cursor: a call reads its page back by request_id, offset and limit, which a cursor does not name; pass request_id with offset and limit instead';
}

/** The paging fields of a completed page's data, for the page that was read. */
export function searchPageInfo(
  data: Record<string, unknown>,
  page: SearchPageRequest,
): SearchPageInfo {
  const hasMore = data.has_more === true;
  return {
    offset: page.offset,
    limit: page.limit,
    has_more: hasMore,
    next_cursor: typeof data.next_cursor === 'string' ? data.next_cursor : null,
    ...(hasMore && page.offset + page.limit <= MAX_SEARCH_OFFSET
      ? { next_offset: page.offset + page.limit }
      : {}),
    ...(typeof data.total === 'number' ? { total: data.total } : {}),
  };
}
