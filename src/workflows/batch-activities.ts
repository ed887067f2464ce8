// The activities a batch runs, each group (activity-groups.ts) with the timeouts its work needs.
import type { Priority } from '@temporalio/common';
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type {
  BatchAccountActivities,
  BatchReopenActivities,
  BatchStoreActivities,
  CompactRowActivities,
  RowOutcomeActivities,
} from './activity-groups.js';
import { COMPACT_ROW_RETRY, STORE_STEP_RETRY } from '../calls/retry-policies.js';

// Short timeouts: a worker killed during a read or an append is noticed within seconds, and the
// retry (idempotent) runs on another worker.
export const files = proxyActivities<BatchStoreActivities>({
  startToCloseTimeout: '30 seconds',
  retry: STORE_STEP_RETRY,
});
/** Reopening a batch's results (a run again for its budget) goes over all of them: it heartbeats. */
export const exporting = proxyActivities<BatchReopenActivities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '30 seconds',
  retry: STORE_STEP_RETRY,
});
/** Reads what a row's earlier call came to: it may still be running, so it heartbeats. */
export const rows = proxyActivities<RowOutcomeActivities>({
  startToCloseTimeout: '2 hours',
  heartbeatTimeout: '30 seconds',
  retry: STORE_STEP_RETRY,
});
/**
 * A compact batch's row: submit, polls and its line in one activity that heartbeats. An attempt
 * lost with its worker is made again and finds where the row stands in the row journal.
 */
const COMPACT_ROW_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '4 hours',
  heartbeatTimeout: '30 seconds',
  retry: COMPACT_ROW_RETRY,
};
/** Compact rows with the batch's task priority and fairness (its rows share one key and weight). */
export const compactRowsWith = (priority: Priority) =>
  proxyActivities<CompactRowActivities>({ ...COMPACT_ROW_OPTIONS, priority });
export const accounts = proxyActivities<BatchAccountActivities>({
  startToCloseTimeout: '1 minute',
  retry: STORE_STEP_RETRY,
});
