// Activities of person-search paging. A page is asked for once with a POST (request_id + offset +
// limit; billable) and its rows are read with GET request_id + offset + limit (free). A page POST
// is never replayed to re-read rows.
import { callRequester, classifyPoll, getEndpoint, type Requester } from '../contract/index.js';
import { TransportError } from '../http/errors.js';
import type { ActivityDeps } from './deps.js';
import { terminalFailure, transientFailure } from './failures.js';
import { guardedRequest } from './guarded-request.js';
import { withinResultBound } from './result-size.js';
import { permitWaitReporter } from './permit-wait-report.js';
import { sendSubmit } from './submit.js';
import { workflowLedger } from './submit-intent.js';

export interface SearchPageRef {
  keyId: string;
  requestId: string;
  offset: number;
  limit: number;
  /** Who asks; absent from searches started before requesters: the operator's interactive work. */
  requester?: Requester;
}

export type SearchPage =
  | { kind: 'running'; status: string }
  | {
      kind: 'done';
      /** completed, exhausted or stale. */
      status: string;
      rows: unknown[];
      hasMore: boolean;
      nextCursor?: string;
    };

const personSearch = getEndpoint('person_search');

/** One page, as big as it is: for callers that write its rows out instead of returning them. */
export async function fetchSearchPage(deps: ActivityDeps, ref: SearchPageRef): Promise<SearchPage> {
  let reply;
  try {
    // Its workflow (a person search or a search export) shows a long wait for the permit.
    reply = await guardedRequest(deps, {
      keyId: ref.keyId,
      kind: 'page',
      requester: callRequester(ref),
      send: (c) => c.readSearchPage(ref.requestId, ref.offset, ref.limit),
      onWait: permitWaitReporter(),
    });
  } catch (err) {
    if (err instanceof TransportError) throw transientFailure({ code: 'transport_error' });
    throw err;
  }
  const outcome = classifyPoll(personSearch, reply);
  switch (outcome.kind) {
    case 'running':
      return { kind: 'running', status: outcome.status };
    case 'retry':
      throw transientFailure(outcome.failure, outcome.retryAfterMs);
    case 'failed':
      throw terminalFailure(outcome.failure, ref.requestId);
    case 'found':
    case 'empty': {
      const data = outcome.data;
      const rows = Array.isArray(data.results) ? data.results : [];
      const page: SearchPage = {
        kind: 'done',
        status: outcome.status,
        rows,
        hasMore: data.has_more === true,
      };
      if (typeof data.next_cursor === 'string') page.nextCursor = data.next_cursor;
      return page;
    }
  }
}

export function createSearchPageActivities(deps: ActivityDeps) {
  return {
    /**
     * POSTs the request for a further page of an existing search. Same no-replay rule as a
     * submit: only a refused connection or an explicit 429 / 503 is repeated.
     */
    async requestSearchPage(
      ref: SearchPageRef & { intentToken?: string },
    ): Promise<{ status: string }> {
      const sent = await sendSubmit(deps, {
        keyId: ref.keyId,
        requester: callRequester(ref),
        endpoint: personSearch,
        params: { request_id: ref.requestId, offset: ref.offset, limit: ref.limit },
        ledger: workflowLedger(ref.intentToken, { reportAccepted: false }),
        onWait: permitWaitReporter(),
      });
      switch (sent.kind) {
        case 'refused':
          throw sent.retryable
            ? transientFailure(sent.failure, sent.retryAfterMs)
            : terminalFailure(sent.failure, ref.requestId);
        case 'unknown':
        case 'earlier':
          throw terminalFailure({ code: 'submit_outcome_unknown' }, ref.requestId);
        case 'accepted':
          if (sent.immediate?.kind === 'failed')
            throw terminalFailure(sent.immediate.failure, ref.requestId);
          return { status: sent.job.status };
      }
    },

    /**
     * GETs one page (request_id + offset + limit): its state while running, its rows when done.
     * A page too large to carry ends the read (result_too_large).
     */
    async readSearchPage(ref: SearchPageRef): Promise<SearchPage> {
      return withinResultBound(
        await fetchSearchPage(deps, ref),
        deps.config.PCDS_MAX_RESULT_BYTES,
        ref.requestId,
      );
    },
  };
}
