// Person search with paging: submit once, wait for completion, then read rows page by page with
// GET request_id + offset + limit. Each further page is asked for once with a page POST (the
// interface's paging rule; billable) and never replayed to re-read rows. Continues only while
// has_more is true, and stops at the requested maximum, the offset ceiling or a size bound.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { setCurrentDetails, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import { PcdsBatchId, PcdsEndpoint, PcdsKeyId } from '../temporal/search-attributes.js';
import {
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_POLL_INTERVAL_MS,
  callFailure,
  failureCode,
  pollActivities,
  setOutcome,
  setState,
  type CallStateAttr,
} from './call-steps.js';
import { MAX_SEARCH_OFFSET, resolveSearchPaging } from '../contract/validate.js';
import { callRequester, type Requester } from '../contract/tenant.js';
import { showPermitWaits } from './permit-waits.js';
import {
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
  /** Whether PcdsState shows `throttled` now. */
  let throttled = false;
  const show = (attr: CallStateAttr) => {
    throttled = attr === 'throttled';
    if (!throttled) waits.reset();
    setState(attr);
  };
  // A request waiting for a permit long enough to matter shows `throttled` and why, until the
  // step that waited ends (a search makes few requests: one change each way per long wait).
  const waits = showPermitWaits({
    label: 'person_search',
    ended: () => state.phase === 'done',
    shown: () => throttled,
    enter: (details) => {
      show('throttled');
      setCurrentDetails(`person_search: ${details}`);
    },
  });
  /** A step ended: a wait it showed is over. */
  const settle = () => {
    if (throttled) show(state.phase);
  };
  show('submitting');

  const fail = (err: unknown, timeoutCode: string): never => {
    const f = failureCode(err, timeoutCode);
    state.phase = 'done';
    show('failed');
    setOutcome('failed');
    setCurrentDetails(`person_search: failed: ${f.code}`);
    throw callFailure(f.code, f.message, f.details);
  };

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
    () => show('throttled'),
    fail,
  );
  settle();
  const { keyId, requestId } = submitted;
  state.requestId = requestId;
  if (!input.keyId)
    upsertSearchAttributes([{ key: PcdsKeyId, value: keyId }] as SearchAttributeUpdatePair[]);

  const rows: unknown[] = [];
  let bytes = 0;
  let pages = 0;
  let stoppedBy: SearchStop;
  let lastStatus: string;
  /** Whether the last page read said has_more, and rows of it were left out. */
  let lastHasMore = false;
  let leftOut = false;
  /** The cursor a page handed out, and the offset it leads to. */
  let cursorAt: { offset: number; cursor: string } | undefined;
  for (;;) {
    const ref = { keyId, requestId, offset, limit, requester };
    if (pages > 0) {
      state.phase = 'submitting';
      show('submitting');
      await requestFurtherPage(ref, maxWaitMs, () => show('throttled'), fail);
    }
    state.phase = 'polling';
    show('polling');
    const read = async () => {
      const page = await pollActivities().readSearchPage(ref);
      settle();
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
    pages += 1;
    lastStatus = page.status;
    const pageBytes = JSON.stringify(page.rows).length;
    if (bytes + pageBytes > MAX_RETURNED_BYTES) {
      stoppedBy = 'size_limit';
      break;
    }
    bytes += pageBytes;
    const taken = page.rows.slice(0, maxResults - rows.length);
    rows.push(...taken);
    lastHasMore = page.hasMore;
    leftOut = taken.length < page.rows.length;
    cursorAt = page.nextCursor ? { offset: offset + limit, cursor: page.nextCursor } : undefined;
    setCurrentDetails(
      `person_search: ${rows.length} rows in ${pages} pages (request ${requestId})`,
    );
    const next = nextPage({
      taken: rows.length,
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
  show('done');
  setOutcome(rows.length > 0 ? 'found' : 'empty');
  const hasMore = stoppedBy === 'size_limit' || leftOut || (stoppedBy !== 'no_more' && lastHasMore);
  const next = startOffset + rows.length;
  return {
    requestId,
    rows,
    returned: rows.length,
    pages,
    lastStatus,
    stoppedBy,
    offset: startOffset,
    hasMore,
    ...(hasMore && next <= MAX_SEARCH_OFFSET ? { nextOffset: next } : {}),
    ...(hasMore && cursorAt?.offset === next ? { nextCursor: cursorAt.cursor } : {}),
  };
}
