// Batches through the client: starting one over a file or rows from code (with the client's
// defaults and its tenant), planning one without starting it, and the handle that reads, steers,
// and exports a batch by its id. Another tenant's batch reads as not found.
import { resolve } from 'node:path';
import type { BatchHandle, FileBatchRequest, RowsBatchRequest, WorkflowMemo } from './api.js';
import {
  BatchSetupError,
  batchHandle,
  batchNotFound,
  batchResult,
  batchStatus,
  prepareBatch,
  prepareRowsBatch,
  resumeBatch,
  startBatchWorkflow,
  type BatchWorkflowHandle,
} from './batch-launch.js';
import { planPreparedBatch, type PlanLimits } from './batch-plan-input.js';
import type { ClientContext } from './context.js';
import { callCacheUse, isIntIn } from './request-checks.js';
import { pauseBatchSignal, setBatchWindowSignal } from '../batch/messages.js';
import type { BatchPlan } from '../batch/plan.js';
import { MAX_WINDOW } from '../batch/types.js';
import { orNotFound, PcdsUsageError } from '../client-errors.js';
import type { AsyncEndpointName, EndpointResult } from '../contract/index.js';
import { batchResultPages, exportBatchFromStore, type StoredResult } from '../store/export.js';
import { outputsOf, writeBatchOutputs, type BatchOutputs } from '../store/outputs.js';
import { isScopedId, localIdOf, resolveScopedId } from '../contract/workflow-ids.js';

/** A batch by its id as the system knows it (the store's), shown to its caller by its own id. */
export function batchHandleOf<R = unknown>(
  { temporal, store }: ClientContext,
  workflow: BatchWorkflowHandle,
  scoped: string,
  shownId: string,
  outputs?: BatchOutputs,
): BatchHandle<R> {
  const batchId = scoped;
  const notFound = () => batchNotFound(shownId);
  return {
    batchId: shownId,
    workflowId: workflow.workflowId,
    workflow,
    status: () => batchStatus(workflow),
    pause: (reason) =>
      orNotFound(() => workflow.signal(pauseBatchSignal, reason ? { reason } : {}), notFound),
    resume: async (options = {}) => {
      await resumeBatch(temporal, batchId, options);
    },
    async setWindow(width) {
      if (!isIntIn(width, 1, MAX_WINDOW))
        throw new PcdsUsageError(
          'invalid_options',
          `the window must be an integer from 1 to ${MAX_WINDOW}`,
        );
      await orNotFound(() => workflow.signal(setBatchWindowSignal, width), notFound);
    },
    async cancel() {
      await orNotFound(() => workflow.cancel(), notFound);
    },
    async result() {
      const summary = await batchResult(workflow);
      if (!outputs) return summary;
      return (await writeBatchOutputs(await store.get(), batchId, outputs, summary)) ?? summary;
    },
    async writeOutputs() {
      const status = await batchStatus(workflow);
      const named = status.ended ? status.summary : status.progress;
      if (!named?.stored || !named.output) return undefined;
      const files = outputs ?? outputsOf(named);
      return writeBatchOutputs(
        await store.get(),
        batchId,
        files,
        status.ended ? status.summary : undefined,
      );
    },
    async *results(query = {}) {
      for await (const page of batchResultPages(await store.get(), batchId, query))
        yield* page.lines as StoredResult<R>[];
    },
    async export({ format, output, rawCells }) {
      const ended = await workflow
        .describe()
        .then((d) => d.status.name !== 'RUNNING' && d.status.name !== 'CONTINUED_AS_NEW');
      return exportBatchFromStore(await store.get(), {
        batchId,
        format,
        target: resolve(output),
        noLine: ended ? 'not_run' : 'pending',
        ...(rawCells ? { rawCells: true } : {}),
      });
    },
  };
}

/** Checks the request, then starts the batch for `tenant` (unless the request names another). */
export async function startBatch<E extends AsyncEndpointName = 'person_enrichment'>(
  context: ClientContext,
  tenant: string,
  { memo, ...request }: (FileBatchRequest<E> | RowsBatchRequest<E>) & { memo?: WorkflowMemo },
): Promise<BatchHandle<EndpointResult<E>>> {
  const { temporal, taskQueue, store, defaults, cacheScope } = context;
  const withDefaults = {
    ...request,
    tenant: request.tenant ?? tenant,
    pollIntervalMs: request.pollIntervalMs ?? defaults.pollIntervalMs,
    maxWaitMs: request.maxWaitMs ?? defaults.maxWaitMs,
    webhookFallbackPollMs: request.webhookFallbackPollMs ?? defaults.webhookFallbackPollMs,
    ...((request.transport ?? defaults.transport)
      ? { transport: request.transport ?? defaults.transport }
      : {}),
  };
  const rows =
    'rows' in request
      ? (request.rows as Iterable<Record<string, unknown>> | AsyncIterable<Record<string, unknown>>)
      : undefined;
  const prepared =
    'rows' in withDefaults ? prepareRowsBatch(withDefaults) : await prepareBatch(withDefaults);
  await startBatchWorkflow(temporal, taskQueue, prepared, {
    store: await store.get(),
    ...(rows ? { rows } : {}),
    ...(memo ? { memo } : {}),
    cache: callCacheUse(request.cache ?? defaults.cache),
    cacheScope,
  });
  // A handle bound to the batch's id, not to this execution: a batch resumed with a higher
  // budget after it ended runs again as a new execution under the same id.
  const { batchId, output, csvOutput, csvRawCells } = prepared.input;
  return batchHandleOf<EndpointResult<E>>(
    context,
    batchHandle(temporal, batchId),
    batchId,
    localIdOf(withDefaults.tenant, batchId),
    output
      ? {
          output,
          ...(csvOutput ? { csvOutput } : {}),
          ...(csvRawCells ? { csvRawCells } : {}),
        }
      : undefined,
  );
}

/** A handle on a batch of `tenant`'s, by the id it gave it. */
export function getBatch<R>(
  context: ClientContext,
  tenant: string,
  batchId: string,
): BatchHandle<R> {
  const { temporal } = context;
  const scoped = resolveScopedId(tenant, batchId);
  // Another tenant's batch is not found, as an id that names nothing.
  if (scoped === undefined && isScopedId(batchId)) throw batchNotFound(batchId);
  // The id is not echoed: a malformed one may be anything, personal data included.
  if (scoped === undefined)
    throw new BatchSetupError(
      'invalid_batch_id',
      'not a batch id: 1 to 64 letters, digits, _ or -',
    );
  return batchHandleOf<R>(
    context,
    batchHandle(temporal, scoped),
    scoped,
    localIdOf(tenant, scoped),
  );
}

/** What the batch would take, after the checks startBatch makes; starts nothing. */
export async function planBatch(
  tenant: string,
  request: FileBatchRequest,
  limits: PlanLimits,
): Promise<BatchPlan> {
  return planPreparedBatch(
    await prepareBatch({ ...request, tenant: request.tenant ?? tenant }, { dryRun: true }),
    limits,
  );
}
