// One durable call of an endpoint: checked against the contract, started under its tenant's
// idempotency key and cache, and the handle that reads its outcome, its state and why it waits.
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import type { CallHandle, CallSuccess, StartCallOptions } from './api.js';
import { callWorkflowId, startOrFind, tenantIdempotencyKey } from './call-ids.js';
import type { ClientContext } from './context.js';
import {
  callCacheUse,
  checkCallParams,
  checkTransport,
  validatedParams,
} from './request-checks.js';
import { workflowWaitReasons } from './wait-reasons.js';
import { scopedCacheUse } from '../calls/cache-policy.js';
import { callStateQuery } from '../calls/signals.js';
import { orNotFound, outcomeOf, PcdsCallError, PcdsUsageError } from '../client-errors.js';
import {
  interactiveRequester,
  pcdsErrorCode,
  type AsyncEndpointName,
  type EndpointParams,
  type EndpointResult,
} from '../contract/index.js';
import { requestFingerprint } from '../codec/idempotency.js';
import { PcdsEndpoint, firstPhaseAttributes } from '../temporal/search-attributes.js';
import { taskPriorityOf } from '../temporal/task-priority.js';
import { pcdsEndpointCall, type EndpointCallInput } from '../workflows/index.js';

// A call's result is typed by its endpoint (contract/result-types.ts): what the service returns
// at the endpoint's result path, as the interface documents it.
export function callHandleOf<R = unknown>(
  temporal: Client,
  workflow: WorkflowHandle<typeof pcdsEndpointCall>,
): CallHandle<R> {
  const { workflowId } = workflow;
  const notFound = () =>
    new PcdsUsageError('call_not_found', `no call with workflow id ${workflowId}`);
  return {
    workflowId,
    workflow,
    async result() {
      const outcome = await orNotFound(() => outcomeOf(workflowId, workflow.result()), notFound);
      // Failures end the workflow with their code; a returned failure is reported the same way.
      if (outcome.outcome === 'failed')
        throw new PcdsCallError(
          pcdsErrorCode(outcome.code),
          outcome.message,
          workflowId,
          outcome.httpStatus,
          outcome.requestId,
        );
      return outcome as CallSuccess<R>;
    },
    state: () => orNotFound(() => workflow.query(callStateQuery), notFound),
    waiting: () => orNotFound(() => workflowWaitReasons(temporal, workflowId), notFound),
  };
}

/**
 * Starts one call for `tenant`. The parameters are checked at run time too: a caller in
 * JavaScript, or one that casts, gets a clear refusal.
 */
export async function startCall<E extends AsyncEndpointName>(
  context: ClientContext,
  tenant: string,
  endpointName: E,
  rawParams: EndpointParams<E>,
  opts: StartCallOptions = {},
): Promise<CallHandle<EndpointResult<E>>> {
  const { temporal, taskQueue, defaults, idSecret, cacheScope } = context;
  const { endpoint, params } = validatedParams(endpointName, rawParams as Record<string, unknown>);
  checkCallParams(endpoint, params);
  const transport = opts.transport ?? defaults.transport ?? 'http';
  checkTransport(endpoint, params, transport, opts.webhook === true);
  const idempotencyKey =
    opts.idempotencyKey !== undefined
      ? tenantIdempotencyKey(tenant, opts.idempotencyKey)
      : undefined;
  const workflowId = callWorkflowId(
    endpoint.name,
    idempotencyKey,
    opts.idempotencyKeyPrefix,
    idSecret,
  );
  const cache = scopedCacheUse(callCacheUse(opts.cache ?? defaults.cache), tenant, cacheScope);
  // A single call is a person's (or a service's) waiting: interactive, the tenant's.
  const requester = interactiveRequester(tenant);
  const { transport: _defaultTransport, cache: _defaultCache, ...tuning } = defaults;
  const input: EndpointCallInput = {
    endpoint: endpoint.name,
    params,
    ...tuning,
    cache,
    ...(transport === 'mcp' ? { transport } : {}),
    ...(opts.keyId ? { keyId: opts.keyId } : {}),
    ...(opts.webhook ? { webhook: true } : {}),
    ...(opts.pollIntervalMs ? { pollIntervalMs: opts.pollIntervalMs } : {}),
    ...(opts.maxWaitMs ? { maxWaitMs: opts.maxWaitMs } : {}),
    requester,
    // Started with the attributes below: the call does not upsert them again.
    startedShowing: true,
  };
  const attrs: SearchAttributePair[] = [
    { key: PcdsEndpoint, value: endpoint.name },
    ...firstPhaseAttributes(opts.keyId),
  ];
  const workflow = await startOrFind(
    temporal,
    pcdsEndpointCall,
    {
      taskQueue,
      workflowId,
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: attrs,
      ...(opts.memo ? { memo: opts.memo } : {}),
      priority: taskPriorityOf(requester),
      staticSummary: `${endpoint.name} call`,
    },
    // idSecret is set: callWorkflowId refused the key otherwise.
    opts.idempotencyKey !== undefined
      ? {
          endpoint: endpoint.name,
          value: requestFingerprint(idSecret!, endpoint.name, params),
        }
      : undefined,
  );
  return callHandleOf<EndpointResult<E>>(temporal, workflow);
}
