// The package's public surface for services: the typed client, its errors and the types of what
// it returns. Workers come from `pcds-orchestrator/worker`, the workflows module from
// `pcds-orchestrator/workflows`, the local emulator from `pcds-orchestrator/emulator`.
export {
  createPcdsClient,
  PcdsCallError,
  PcdsUsageError,
  type CallHandle,
  type CallSuccess,
  type PcdsClient,
  type PcdsClientOptions,
  type SearchPeopleOptions,
  type StartCallOptions,
} from './client.js';
export type { CallOutcome, CallState } from './workflows/types.js';
export type { PersonSearchResult } from './workflows/person-search.js';
