// Person search with paging: submit once, wait for completion, then read rows page by page with
// GET request_id + offset + limit. Each further page is asked for once with a page POST (the
// interface's paging rule; billable) and never replayed to re-read rows. Continues only while
// has_more is true, and stops at the requested maximum, the offset ceiling or a size bound.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { SearchPage } from '../activities/search-pages.js';
import { PcdsBatchId, PcdsEndpoint, PcdsKeyId } from '../temporal/search-attributes.js';
import {
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_POLL_INTERVAL_MS,
  pollActivities,
  setOutcome,
} from './call-steps.js';
import { MAX_SEARCH_OFFSET, resolveSearchPaging } from '../contract/validate.js';
import { callRequester, type Requester } from '../contract/tenant.js';
import {
  SearchView,
  nextPage,
  readPageUntilDone,
  requestFurtherPage,
  submitSearch,
  withoutPaging,
  type PagingStop,
} from './search-paging.js';
import { callStateQuery } from '../calls/signals.js';
import type { CallState } from '../calls/types.js';

export const MAX_PAGE_SIZE = 100;
/** Rows returned in the workflow result are bounded well under Temporal's 2 MB payload limit. */
export const MAX_RETURNED_BYTES = 1_000_000;

export interface PersonSearchInput {
  /** Validated person_search parameters; paging fields (limit, offset, page, cursor) are set here. */
  params: Record<string, unknown>;
  maxResults: number;
  /** Rows per page, 1-100 (default 100). */
  pageSize?: number;
  keyId?: string;
  /** Where rows go; only 'return' (in the workflow result) for now. */
  output?: { kind: 'return' };
  pollIntervalMs?: number;
  maxWaitMs?: number;
  batchId?: string;
  /** Who asks (absent from searches started before requesters: the operator's interactive work). */
  requester?: Requester;
}

export type SearchStop = PagingStop | 'size_limit';

export interface PersonSearchResult {
  requestId: string;
  rows: unknown[];
  returned: number;
  pages: number;
  /** Offset of the first row: the parameters' offset (or legacy page), 0 by default. */
  offset: number;
  /** Whether the search has rows after these (the last page's has_more, or rows left unread). */
  hasMore: boolean;
  /** Where to continue (offset + returned), when hasMore and it is a valid offset. */
  nextOffset?: number;
  /** The service's cursor to that same next row, when the last page read handed one out. */
  nextCursor?: string;
  /** completed, exhausted or stale: the last page's terminal status. */
  lastStatus: string;
  stoppedBy: SearchStop;
}

export async function pcdsPersonSearch(input: PersonSearchInput): Promise<PersonSearchResult> {
  const pageSize = Math.min(MAX_PAGE_SIZE, Math.max(1, input.pageSize ?? MAX_PAGE_SIZE));
  const maxResults = Math.max(1, input.maxResults);
  const maxWaitMs = input.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const requester = callRequester(input);
  const state: CallState = { phase: 'submitting', polls: 0 };
  setHandler(callStateQuery, () => state);
  upsertSearchAttributes([
    { key: PcdsEndpoint, value: 'person_search' },
    ...(input.keyId ? [{ key: PcdsKeyId, value: input.keyId }] : []),
    ...(input.batchId ? [{ key: PcdsBatchId, value: input.batchId }] : []),
  ] as SearchAttributeUpdatePair[]);
  setOutcome('running');
  const view = new SearchView(
    'person_search',
    () => state.phase === 'done',
    () => state.phase,
  );
  view.show('submitting');
  const fail = (err: unknown, timeoutCode: string): never =>
    view.fail(
      err,
      timeoutCode,
      () => (state.phase = 'done'),
      () => setOutcome('failed'),
    );

  const params = withoutPaging(input.params);
  let limit = Math.min(pageSize, maxResults);
  // The search starts where the caller's offset (or legacy page) says.
  const startOffset =
    input.params.offset !== undefined || input.params.page !== undefined
      ? resolveSearchPaging(input.params).offset
      : 0;
  let offset = startOffset;

  const submitted = await submitSearch(
    params,
    { offset, limit },
    input.keyId,
    requester,
    maxWaitMs,
    () => view.show('throttled'),
    fail,
  );
  view.settle();
  const { keyId, requestId } = submitted;
  state.requestId = requestId;
  if (!input.keyId)
    upsertSearchAttributes([{ key: PcdsKeyId, value: keyId }] as SearchAttributeUpdatePair[]);

  const rows = new SearchRows(maxResults);
  let stoppedBy: SearchStop;
  for (;;) {
    const ref = { keyId, requestId, offset, limit, requester };
    if (rows.pages > 0) {
      state.phase = 'submitting';
      view.show('submitting');
      await requestFurtherPage(ref, maxWaitMs, () => view.show('throttled'), fail);
    }
    state.phase = 'polling';
    view.show('polling');
    const read = async () => {
      const page = await pollActivities().readSearchPage(ref);
      view.settle();
      return page;
    };
    const page = await readPageUntilDone(read, {
      maxWaitMs,
      intervalMs: input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
      fail,
      onRead: (p) => {
        state.polls += 1;
        state.lastStatus = p.status;
      },
    });
    if (!rows.take(page, offset + limit)) {
      stoppedBy = 'size_limit';
      break;
    }
    setCurrentDetails(
      `person_search: ${rows.taken.length} rows in ${rows.pages} pages (request ${requestId})`,
    );
    const next = nextPage({
      taken: rows.taken.length,
      maxResults,
      pageSize,
      offset,
      limit,
      pageRows: page.rows.length,
      hasMore: page.hasMore,
    });
    if ('stop' in next) {
      stoppedBy = next.stop;
      break;
    }
    ({ offset, limit } = next);
  }

  state.phase = 'done';
  view.show('done');
  setOutcome(rows.taken.length > 0 ? 'found' : 'empty');
  return rows.result(requestId, startOffset, stoppedBy);
}

/** The rows a search gathers page by page, within its maximum and the size it may return. */
class SearchRows {
  readonly taken: unknown[] = [];
  pages = 0;
  lastStatus = '';
  private bytes = 0;
  /** Whether the last page read said has_more, and rows of it were left out. */
  private lastHasMore = false;
  private leftOut = false;
  /** The cursor a page handed out, and the offset it leads to. */
  private cursorAt: { offset: number; cursor: string } | undefined;

  constructor(private readonly maxResults: number) {}

  /** Takes a page read (it ends at `end`); false when its rows would pass the size bound. */
  take(page: Extract<SearchPage, { kind: 'done' }>, end: number): boolean {
    this.pages += 1;
    this.lastStatus = page.status;
    const pageBytes = JSON.stringify(page.rows).length;
    if (this.bytes + pageBytes > MAX_RETURNED_BYTES) return false;
    this.bytes += pageBytes;
    const rows = page.rows.slice(0, this.maxResults - this.taken.length);
    this.taken.push(...rows);
    this.lastHasMore = page.hasMore;
    this.leftOut = rows.length < page.rows.length;
    this.cursorAt = page.nextCursor ? { offset: end, cursor: page.nextCursor } : undefined;
    return true;
  }

  result(requestId: string, startOffset: number, stoppedBy: SearchStop): PersonSearchResult {
    const hasMore =
      stoppedBy === 'size_limit' || this.leftOut || (stoppedBy !== 'no_more' && this.lastHasMore);
    const next = startOffset + this.taken.length;
    return {
      requestId,
      rows: this.taken,
      returned: this.taken.length,
      pages: this.pages,
      lastStatus: this.lastStatus,
      stoppedBy,
      offset: startOffset,
      hasMore,
      ...(hasMore && next <= MAX_SEARCH_OFFSET ? { nextOffset: next } : {}),
      ...(hasMore && this.cursorAt?.offset === next ? { nextCursor: this.cursorAt.cursor } : {}),
    };
  }
}
