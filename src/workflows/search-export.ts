// Person search export: one search paged through up to a maximum into a JSONL file. Rows are read
// from stored pages by GET and written by the activity itself, so they never enter history; each
// further page is asked for once by POST (billable) and never replayed.
import { STORE_STEP_RETRY } from '../calls/retry-policies.js';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { proxyActivities, setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type { ExportFileActivities } from './activity-groups.js';
import { PcdsBatchId, PcdsEndpoint, PcdsState } from '../temporal/search-attributes.js';
import { callRequester, type Requester } from '../contract/tenant.js';
import { DEFAULT_MAX_WAIT_MS, DEFAULT_POLL_INTERVAL_MS, pollActivities } from './call-steps.js';
import {
  SearchView,
  nextPage,
  readPageUntilDone,
  requestFurtherPage,
  submitSearch,
  withoutPaging,
  type PagingStop,
} from './search-paging.js';

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
  /** Who asks (absent from exports started before requesters: the operator's interactive work). */
  requester?: Requester;
}

export interface SearchExportSummary {
  exportId: string;
  requestId: string;
  rows: number;
  pages: number;
  stoppedBy: PagingStop;
  lastStatus: string;
  output: string;
}

const files = proxyActivities<ExportFileActivities>({
  startToCloseTimeout: '5 minutes',
  retry: STORE_STEP_RETRY,
});

export async function pcdsSearchExport(input: SearchExportInput): Promise<SearchExportSummary> {
  const pageSize = Math.min(100, Math.max(1, input.pageSize ?? 100));
  const maxResults = Math.max(1, Math.floor(input.maxResults));
  const maxWaitMs = input.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  const requester = callRequester(input);
  upsertSearchAttributes([
    { key: PcdsEndpoint, value: 'person_search' },
    { key: PcdsBatchId, value: input.exportId },
    { key: PcdsState, value: 'running' },
  ] as SearchAttributeUpdatePair[]);
  await files.resetBatchOutput({ path: input.output });

  const params = withoutPaging(input.params);
  let offset = 0;
  let limit = Math.min(pageSize, maxResults);
  let ended = false;
  const view = new SearchView(
    'person_search export',
    () => ended,
    () => 'running',
  );
  const fail = (err: unknown, code: string): never => view.fail(err, code, () => (ended = true));

  const submitted = await submitSearch(
    params,
    { offset, limit },
    input.keyId,
    requester,
    maxWaitMs,
    () => undefined,
    fail,
  );
  view.settle();
  const { keyId, requestId } = submitted;

  let rows = 0;
  let pages = 0;
  let lastStatus = submitted.status;
  let stoppedBy: SearchExportSummary['stoppedBy'];
  for (;;) {
    const ref = { keyId, requestId, offset, limit, requester };
    if (pages > 0) {
      await requestFurtherPage(ref, maxWaitMs, () => undefined, fail);
      view.settle();
    }
    // Read the page by GET until it is terminal; the activity appends its rows to the file.
    const page = await readPageUntilDone(
      async () => {
        const read = await pollActivities().exportSearchPage({
          ref,
          path: input.output,
          firstRow: rows + 1,
          take: maxResults - rows,
        });
        view.settle();
        return read;
      },
      { maxWaitMs, intervalMs: input.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, fail },
    );
    lastStatus = page.status;
    pages += 1;
    rows += page.rows;
    setCurrentDetails(
      `person_search export: ${rows} rows in ${pages} pages (request ${requestId})`,
    );
    const next = nextPage({
      taken: rows,
      maxResults,
      pageSize,
      offset,
      limit,
      pageRows: page.rows,
      hasMore: page.hasMore,
    });
    if ('stop' in next) {
      stoppedBy = next.stop;
      break;
    }
    ({ offset, limit } = next);
  }
  ended = true;
  view.show('done');
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
