// The activities each workflow proxy may call, by group: a proxy is typed with its group alone, so
// an activity cannot be called through a proxy whose timeouts and retry policy are another's (tsc
// refuses it). Names only: the options live with the proxies (call-steps.ts, batch-activities.ts,
// search-export.ts), the retry policies in calls/retry-policies.ts.
import type { Activities } from '../activities/index.js';

/** Requests that may cost credits: never retried by Temporal (SUBMIT_RETRY). */
export const SUBMIT_GROUP = ['submitCall', 'requestSearchPage'] as const;
/** Reads of the service, free and safe to repeat (SERVICE_READ_RETRY), bounded by a wait. */
export const SERVICE_READ_GROUP = ['pollCall', 'readSearchPage', 'exportSearchPage'] as const;
/** A search export's file steps on the worker (5 minutes each). */
export const EXPORT_FILE_GROUP = ['resetBatchOutput', 'writeBatchSummary'] as const;
/** A batch's store steps (30 seconds each: a lost worker is noticed at once). */
export const BATCH_STORE_GROUP = [
  'storedBatchInput',
  'readStoredRows',
  'writeStoredResults',
  'saveStoredSummary',
] as const;
/** Reopening all of a batch's results (heartbeats, up to 30 minutes). */
export const BATCH_REOPEN_GROUP = ['reopenStoredResults'] as const;
/** What a row's earlier call came to: it may still run (heartbeats, up to 2 hours). */
export const ROW_OUTCOME_GROUP = ['existingRowOutcome'] as const;
/** The batch's keys and their credit breakers, and the row calls that ended (1 minute). */
export const BATCH_ACCOUNT_GROUP = [
  'batchKeyPool',
  'resetCreditBreakers',
  'endedRowCalls',
] as const;
/** A compact batch's row in one heartbeating activity (up to 4 hours, at most 20 attempts). */
export const COMPACT_ROW_GROUP = ['runBatchRow'] as const;

type Group<Names extends readonly (keyof Activities)[]> = Pick<Activities, Names[number]>;

export type SubmitActivities = Group<typeof SUBMIT_GROUP>;
export type ServiceReadActivities = Group<typeof SERVICE_READ_GROUP>;
export type ExportFileActivities = Group<typeof EXPORT_FILE_GROUP>;
export type BatchStoreActivities = Group<typeof BATCH_STORE_GROUP>;
export type BatchReopenActivities = Group<typeof BATCH_REOPEN_GROUP>;
export type RowOutcomeActivities = Group<typeof ROW_OUTCOME_GROUP>;
export type BatchAccountActivities = Group<typeof BATCH_ACCOUNT_GROUP>;
export type CompactRowActivities = Group<typeof COMPACT_ROW_GROUP>;

/** Every group, by the proxy's name, for the test that they are disjoint. */
export const ACTIVITY_GROUPS = {
  submit: SUBMIT_GROUP,
  serviceRead: SERVICE_READ_GROUP,
  exportFiles: EXPORT_FILE_GROUP,
  batchStore: BATCH_STORE_GROUP,
  batchReopen: BATCH_REOPEN_GROUP,
  rowOutcome: ROW_OUTCOME_GROUP,
  batchAccounts: BATCH_ACCOUNT_GROUP,
  compactRow: COMPACT_ROW_GROUP,
} as const;
