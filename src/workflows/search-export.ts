// Person search export: one search paged through up to a maximum into a JSONL file. Rows are read
// from stored pages by GET and written by the activity itself, so they never enter history; each
// further page is asked for once by POST (billable) and never replayed.
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import {
  proxyActivities,
  setCurrentDetails,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { MAX_SEARCH_OFFSET } from '../contract/validate';
import { PcdsBatchId, PcdsEndpoint, PcdsState } from '../temporal/search-attributes';
import {
  DEFAULT_MAX_POLL_INTERVAL_MS,
  DEFAULT_MAX_WAIT_MS,
  DEFAULT_POLL_BACKOFF,
  DEFAULT_POLL_INTERVAL_MS,
  callFailure,
  failureCode,
  nextPollInterval,
  pollActivities,
  submitActivities,
  submitOnce,
} from './call-steps';

export interface SearchExportInput {
  /** Validated person_search parameters; paging fields are set here. */
  params: Record<string, unknown>;
  maxResults: number;
  /** Absolute path of the JSONL output: one line `{row, result}` per search result. */
  output: string;
  pageSize?: number;
  keyId?: string;
  /** Id shown in search attributes, like a batch id. */
  exportId: string;
  pollIntervalMs?: number;
  maxWaitMs?: number;
}

export interface SearchExportSummary {
  exportId: string;
  requestId: string;
  rows: number;
  pages: number;
  stoppedBy: 'max_results' | 'no_more' | 'offset_limit';
  lastStatus: string;
  output: string;
}

const files = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

const PAGING_FIELDS = ['limit', 'offset', 'page', 'cursor'];

export async function searchExport(input: SearchExportInput): Promise<SearchExportSummary> {
  const pageSize = Math.min(100, Math.max(1, input.pageSize ?? 100));
  const maxResults = Math.max(1, Math.floor(input.maxResults));
  const deadline = Date.now() + (input.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
  upsertSearchAttributes([
    { key: PcdsEndpoint, value: 'person_search' },
    { key: PcdsBatchId, value: input.exportId },
    { key: PcdsState, value: 'running' },
  ] as SearchAttributeUpdatePair[]);
  await files.resetBatchOutput({ path: input.output });

  const params: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input.params)) if (!PAGING_FIELDS.includes(k)) params[k] = v;
  let offset = 0;
  let limit = Math.min(pageSize, maxResults);
  const fail = (err: unknown, code: string): never => {
    const f = failureCode(err, code);
    upsertSearchAttributes([{ key: PcdsState, value: 'failed' }] as SearchAttributeUpdatePair[]);
    throw callFailure(f.code, f.message, f.details);
  };

  let submitted;
  try {
    submitted = await submitOnce(
      () =>
        submitActivities.submitCall({
          endpoint: 'person_search',
          params: { ...params, limit, offset },
          ...(input.keyId ? { keyId: input.keyId } : {}),
        }),
      deadline,
      () => undefined,
    );
  } catch (err) {
    return fail(err, 'submit_outcome_unknown');
  }
  const { keyId, requestId } = submitted;

  let rows = 0;
  let pages = 0;
  let lastStatus = submitted.status;
  let stoppedBy: SearchExportSummary['stoppedBy'];
  for (;;) {
    if (pages > 0) {
      try {
        await submitOnce(
          () => submitActivities.requestSearchPage({ keyId, requestId, offset, limit }),
          deadline,
          () => undefined,
        );
      } catch (err) {
        return fail(err, 'submit_outcome_unknown');
      }
    }
    // Read the page by GET until it is terminal; the activity appends its rows to the file.
    let interval = input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
    let page;
    for (let first = true; ; first = false) {
      const left = deadline - Date.now();
      if (left <= 0)
        return fail(
          callFailure(
            'poll_timeout',
            'poll_timeout: the search did not finish within the maximum wait',
          ),
          'poll_timeout',
        );
      if (!first) {
        await sleep(Math.min(interval, left));
        interval = nextPollInterval(interval, DEFAULT_POLL_BACKOFF, DEFAULT_MAX_POLL_INTERVAL_MS);
      }
      try {
        page = await pollActivities(left).exportSearchPage({
          ref: { keyId, requestId, offset, limit },
          path: input.output,
          firstRow: rows + 1,
          take: maxResults - rows,
        });
      } catch (err) {
        return fail(err, 'poll_timeout');
      }
      lastStatus = page.status;
      if (page.kind === 'done') break;
    }
    pages += 1;
    rows += page.rows;
    setCurrentDetails(
      `person_search export: ${rows} rows in ${pages} pages (request ${requestId})`,
    );
    if (rows >= maxResults) {
      stoppedBy = 'max_results';
      break;
    }
    if (!page.hasMore || page.rows === 0) {
      stoppedBy = 'no_more';
      break;
    }
    offset += limit;
    if (offset > MAX_SEARCH_OFFSET) {
      stoppedBy = 'offset_limit';
      break;
    }
    limit = Math.min(pageSize, maxResults - rows);
  }
  upsertSearchAttributes([{ key: PcdsState, value: 'done' }] as SearchAttributeUpdatePair[]);
  const summary: SearchExportSummary = {
    exportId: input.exportId,
    requestId,
    rows,
    pages,
    stoppedBy,
    lastStatus,
    output: input.output,
  };
  await files.writeBatchSummary({ path: input.output, summary });
  return summary;
}
