// The package's public surface for services: the typed client, its handles, its errors and the
// types of what it returns. Workers come from `pcds-orchestrator/worker`, the workflows module
// from `pcds-orchestrator/workflows`, the local emulator from `pcds-orchestrator/emulator`.
export {
  createPcdsClient,
  MAX_EXPORT_RESULTS,
  type BatchHandle,
  type CacheOption,
  type CallCacheOption,
  type CallHandle,
  type CallSuccess,
  type PcdsClient,
  type PcdsClientOptions,
  type SearchExportHandle,
  type SearchExportOptions,
  type SearchPeopleOptions,
  type RowsBatchRequest,
  type FileBatchRequest,
  type StartCallOptions,
} from './client.js';
export type {
  AsyncEndpointName,
  EndpointName,
  EndpointParams,
  EndpointResult,
  LookupFieldsResult,
  PersonProfile,
  PhoneNumber,
} from './contract/index.js';
export { PcdsCallError, PcdsUsageError } from './client-errors.js';
export { clientOptionsFromEnv } from './client/options-from-env.js';
export {
  TemporalConnectionError,
  type ConnectionProblem,
  type TemporalTlsOptions,
} from './temporal/connection.js';
export {
  BatchSetupError,
  type BatchOptions,
  type BatchRequest,
  type BatchStatus,
} from './client/batch-launch.js';
export type { WaitKind, WaitReason } from './client/wait-reasons.js';
export type { CheckStatus, DoctorCheck, DoctorReport } from './doctor/checks.js';
export type { BatchPlan } from './batch/plan.js';
export type { PlanLimits } from './client/batch-plan-input.js';
export { PcdsError } from './contract/pcds-error.js';
export { ERROR_CODES, isPcdsErrorCode, type PcdsErrorCode } from './contract/errors.js';
export { TRANSPORTS, type Transport } from './contract/mcp-replies.js';
export {
  MAX_WINDOW,
  type BatchProgress,
  type BatchStateName,
  type BatchSummary,
  type PauseReason,
  type ResultLine,
} from './batch/types.js';
export type { CallOutcome, CallState, CallTiming } from './calls/types.js';
export type { PersonSearchResult } from './workflows/person-search.js';
export type { SearchExportSummary } from './workflows/search-export.js';
export {
  BatchStore,
  lazyBatchStore,
  openStoreFromEnv,
  openStoreFromSettings,
  type LazyBatchStore,
  type StoreRoles,
} from './store/index.js';
export type { BatchResultsQuery, StoreExportFormat, StoredResult } from './store/export.js';
export type { CacheUse } from './calls/cache-policy.js';
export { CACHE_TTL } from './calls/cache-policy.js';
