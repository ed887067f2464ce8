// The client of one tenant over the shared context: every client createPcdsClient gives, and
// every withTenant view of it, is one of these. Each method is the tenant's own use of a module
// beside this one (calls, searches, batches); views share the connection and store of their root.
import type { PcdsClient } from './api.js';
import { getBatch, planBatch, startBatch } from './batches.js';
import { callHandleOf, startCall } from './calls.js';
import type { ClientContext } from './context.js';
import { checkedTenant } from './request-checks.js';
import { getSearchExport, searchPeople, startSearchExport } from './searches.js';
import { runDoctor } from '../doctor/checks.js';
import { checkWorkers } from '../temporal/pollers.js';
import type { pcdsEndpointCall } from '../workflows/index.js';

/**
 * The client of `tenant`. `close` is the root client's (it closes what the context opened); a
 * view from withTenant closes nothing.
 */
export function tenantClient(
  context: ClientContext,
  tenant: string,
  close: () => Promise<void> = async () => {},
): PcdsClient {
  const { temporal, taskQueue } = context;
  const client: PcdsClient = {
    temporal,
    tenant,
    withTenant: (other) => tenantClient(context, checkedTenant(other)),
    taskQueue,
    workers: () => checkWorkers(temporal, taskQueue),
    startCall: (endpoint, params, opts) => startCall(context, tenant, endpoint, params, opts),
    async call(endpoint, params, opts) {
      const handle = await client.startCall(endpoint, params, opts);
      return handle.result();
    },
    getCall: <R>(workflowId: string) =>
      callHandleOf<R>(temporal, temporal.workflow.getHandle<typeof pcdsEndpointCall>(workflowId)),
    searchPeople: (params, opts) => searchPeople(context, tenant, params, opts),
    startSearchExport: (params, opts) => startSearchExport(context, tenant, params, opts),
    getSearchExport: (exportId) => getSearchExport(temporal, tenant, exportId),
    startBatch: (request) => startBatch(context, tenant, request),
    getBatch: <R>(batchId: string) => getBatch<R>(context, tenant, batchId),
    planBatch: (request, limits) => planBatch(tenant, request, limits),
    doctor: (env = process.env) => runDoctor(env),
    close,
  };
  return client;
}
