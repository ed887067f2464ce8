// The typed entry point for services: validate parameters with the contract, then start a durable
// call, a paged person search, a search export or a batch, and await its outcome or keep a small
// handle on it. Workflows are started by their function types, so inputs and results are typed.
// The client's shape is in client/api.ts; its parts, by what they do, in the modules beside it.
import type { PcdsClient, PcdsClientOptions } from './client/api.js';
import { openClientContext } from './client/context.js';
import { checkedTenant } from './client/request-checks.js';
import { tenantClient } from './client/tenant-client.js';
import { OPERATOR_TENANT } from './contract/index.js';

export { PcdsCallError, PcdsUsageError } from './client-errors.js';
export type {
  BatchHandle,
  CacheOption,
  CallCacheOption,
  CallHandle,
  CallSuccess,
  FileBatchRequest,
  PcdsClient,
  PcdsClientOptions,
  RowsBatchRequest,
  SearchExportHandle,
  SearchExportOptions,
  SearchPeopleOptions,
  StartCallOptions,
  WorkflowMemo,
} from './client/api.js';
export { MAX_EXPORT_RESULTS } from './client/api.js';
export {
  callCacheUse,
  checkCallParams,
  checkTransport,
  validatedParams,
} from './client/request-checks.js';
export { callWorkflowId, tenantIdempotencyKey } from './client/call-ids.js';
export { searchExportWorkflowId } from './contract/workflow-ids.js';

export async function createPcdsClient(options: PcdsClientOptions = {}): Promise<PcdsClient> {
  // A bad tenant or cache scope is refused before anything connects.
  const rootTenant = checkedTenant(options.tenant ?? (process.env.PCDS_TENANT || OPERATOR_TENANT));
  const { context, close } = await openClientContext(options);
  return tenantClient(context, rootTenant, close);
}
