// The paging steps person search and search export share: one search, its pages asked for once by
// POST (billable, never replayed) and read by GET request_id + offset + limit until terminal.
import { sleep } from '@temporalio/workflow';
import type { SubmitCallResult } from '../activities/calls.js';
import type { SearchPageRef } from '../activities/search-pages.js';
import { MAX_SEARCH_OFFSET } from '../contract/validate.js';
import type { Requester } from '../contract/tenant.js';
import {
  DEFAULT_MAX_POLL_INTERVAL_MS,
  DEFAULT_POLL_BACKOFF,
  callFailure,
  submitActivities,
  submitOnce,
} from './call-steps.js';
import { pollDelayMs } from '../calls/poll-schedule.js';

/** Set by the workflow for each page; a caller's own values are dropped. */
const PAGING_FIELDS = new Set(['limit', 'offset', 'page', 'cursor']);

export function withoutPaging(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([k]) => !PAGING_FIELDS.has(k)));
}

/** Ends the workflow with the failure's code (a timeout of the step gets `timeoutCode`). */
export type Fail = (err: unknown, timeoutCode: string) => never;

/** Submits the search itself, its first page at `offset` / `limit` (the no-replay rule of submitOnce). */
export async function submitSearch(
  params: Record<string, unknown>,
  page: { offset: number; limit: number },
  keyId: string | undefined,
  requester: Requester,
  serviceWaitMs: number,
  onThrottled: () => void,
  fail: Fail,
): Promise<SubmitCallResult> {
  try {
    return await submitOnce(
      (intentToken) =>
        submitActivities.submitCall({
          endpoint: 'person_search',
          params: { ...params, ...page },
          ...(keyId ? { keyId } : {}),
          requester,
          intentToken,
        }),
      serviceWaitMs,
      onThrottled,
    );
  } catch (err) {
    return fail(err, 'submit_outcome_unknown');
  }
}

/** Asks the service once for a further page of the search (a POST; repeated only when not accepted). */
export async function requestFurtherPage(
  ref: SearchPageRef,
  serviceWaitMs: number,
  onThrottled: () => void,
  fail: Fail,
): Promise<void> {
  try {
    await submitOnce(
      (intentToken) => submitActivities.requestSearchPage({ ...ref, intentToken }),
      serviceWaitMs,
      onThrottled,
    );
  } catch (err) {
    fail(err, 'submit_outcome_unknown');
  }
}

/**
 * Reads a page until its status is terminal: the first read at once (a stored page is usually
 * ready), then at growing intervals. The maximum wait counts from now (the page was just
 * accepted): a page the service still calls running after it has timed out. Reads themselves are
 * retried without bound, so a wait of our own throttle never loses a page already paid for.
 */
export async function readPageUntilDone<P extends { kind: string; status: string }>(
  read: () => Promise<P>,
  o: { maxWaitMs: number; intervalMs: number; fail: Fail; onRead?: (page: P) => void },
): Promise<Extract<P, { kind: 'done' }>> {
  const schedule = {
    intervalMs: o.intervalMs,
    backoff: DEFAULT_POLL_BACKOFF,
    maxIntervalMs: DEFAULT_MAX_POLL_INTERVAL_MS,
  };
  const deadline = Date.now() + o.maxWaitMs;
  for (let reads = 0; ; reads++) {
    if (reads > 0)
      await sleep(Math.max(1, Math.min(pollDelayMs(reads, schedule), deadline - Date.now())));
    let page: P;
    try {
      page = await read();
    } catch (err) {
      return o.fail(err, 'poll_timeout');
    }
    o.onRead?.(page);
    if (page.kind === 'done') return page as Extract<P, { kind: 'done' }>;
    if (Date.now() >= deadline)
      return o.fail(
        callFailure(
          'poll_timeout',
          'poll_timeout: the search page was still running at the end of the maximum wait',
        ),
        'poll_timeout',
      );
  }
}

export type PagingStop = 'max_results' | 'no_more' | 'offset_limit';

/** After a page was read: why paging stops, or where the next page starts and how long it is. */
export function nextPage(p: {
  /** Rows taken so far, this page included. */
  taken: number;
  maxResults: number;
  pageSize: number;
  offset: number;
  limit: number;
  pageRows: number;
  hasMore: boolean;
}): { stop: PagingStop } | { offset: number; limit: number } {
  if (p.taken >= p.maxResults) return { stop: 'max_results' };
  if (!p.hasMore || p.pageRows === 0) return { stop: 'no_more' };
  const offset = p.offset + p.limit;
  if (offset > MAX_SEARCH_OFFSET) return { stop: 'offset_limit' };
  return { offset, limit: Math.min(p.pageSize, p.maxResults - p.taken) };
}
