// The paging steps person search and search export share: one search, its pages asked for once by
// POST (billable, never replayed) and read by GET request_id + offset + limit until terminal.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { setCurrentDetails, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { SubmitCallResult } from '../activities/calls.js';
import type { SearchPageRef } from '../activities/search-pages.js';
import { MAX_SEARCH_OFFSET } from '../contract/validate.js';
import type { Requester } from '../contract/tenant.js';
import { callFailure, failureCode, submitActivities, submitOnce } from './call-steps.js';
import { showPermitWaits, type PermitWaitView } from './permit-waits.js';
import { PcdsState } from '../temporal/search-attributes.js';
import { CallEngine } from '../calls/engine.js';
import { callPolicyOf } from '../calls/policy.js';
import { getEndpoint } from '../contract/catalogue.js';

/** Set by the workflow for each page; a caller's own values are dropped. */
const PAGING_FIELDS = new Set(['limit', 'offset', 'page', 'cursor']);

export function withoutPaging(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([k]) => !PAGING_FIELDS.has(k)));
}

/** Ends the workflow with the failure's code (a timeout of the step gets `timeoutCode`). */
export type Fail = (err: unknown, timeoutCode: string) => never;

/**
 * What a search workflow shows operators: PcdsState, one upsert per change, and `throttled` while
 * one of its requests waits for a permit long enough to matter (until the step that waited ends:
 * a search makes few requests, so one change each way per long wait), with why in its details.
 */
export class SearchView {
  private throttled = false;
  private readonly waits: PermitWaitView;

  constructor(
    private readonly label: string,
    ended: () => boolean,
    /** What PcdsState shows when a step ends a wait it showed. */
    private readonly resting: () => string,
  ) {
    this.waits = showPermitWaits({
      label,
      ended,
      shown: () => this.throttled,
      enter: (details) => {
        this.show('throttled');
        setCurrentDetails(`${label}: ${details}`);
      },
    });
  }

  show(attr: string): void {
    this.throttled = attr === 'throttled';
    if (!this.throttled) this.waits.reset();
    upsertSearchAttributes([{ key: PcdsState, value: attr }] as SearchAttributeUpdatePair[]);
  }

  /** A step ended: a wait it showed is over. */
  settle(): void {
    if (this.throttled) this.show(this.resting());
  }

  /**
   * Ends the workflow with the failure's code: `ending` marks it ended, then PcdsState shows
   * `failed`, then `shown` adds what else the workflow shows of a failure.
   */
  fail(err: unknown, timeoutCode: string, ending: () => void, shown?: () => void): never {
    const f = failureCode(err, timeoutCode);
    ending();
    this.show('failed');
    shown?.();
    setCurrentDetails(`${this.label}: failed: ${f.code}`);
    throw callFailure(f.code, f.message, f.details);
  }
}

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
 * Reads a page until its status is terminal, on the call engine's schedule: the first read at
 * once (a stored page is usually ready, so it is not counted as a poll), then at growing
 * intervals. The maximum wait counts from now (the page was just accepted): a page the service
 * still calls running after it has timed out. Reads themselves are retried without bound, so a
 * wait of our own throttle never loses a page already paid for.
 */
export async function readPageUntilDone<P extends { kind: string; status: string }>(
  read: () => Promise<P>,
  o: { maxWaitMs: number; intervalMs: number; fail: Fail; onRead?: (page: P) => void },
): Promise<Extract<P, { kind: 'done' }>> {
  const engine = new CallEngine({
    endpoint: getEndpoint('person_search'),
    policy: callPolicyOf({ maxWaitMs: o.maxWaitMs, pollIntervalMs: o.intervalMs }),
    now: () => Date.now(),
  });
  let step = engine.accepted(Date.now(), { firstLookNow: true });
  for (;;) {
    if (step.kind === 'fail')
      return o.fail(callFailure(step.code, step.message ?? step.code), 'poll_timeout');
    // A page read neither waits for deliveries nor ends but by its own reply.
    if (step.kind !== 'poll') throw new Error(`a page read cannot take the step ${step.kind}`);
    if (step.afterMs > 0) await sleep(step.afterMs);
    engine.pollBegins();
    let page: P;
    try {
      page = await read();
    } catch (err) {
      return o.fail(err, 'poll_timeout');
    }
    o.onRead?.(page);
    if (page.kind === 'done') return page as Extract<P, { kind: 'done' }>;
    step = engine.afterReply({ kind: 'running' });
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
