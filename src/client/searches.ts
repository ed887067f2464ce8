// A person search, as one awaited answer or as an export the worker pages into a file, and the
// handle on an export: ids are the tenant's own, another tenant's export reads as not found.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import {
  MAX_EXPORT_RESULTS,
  type SearchExportHandle,
  type SearchExportOptions,
  type SearchPeopleOptions,
} from './api.js';
import { checkExportOutput, newBatchId } from './batch-launch.js';
import { callWorkflowId, startOrFind, tenantIdempotencyKey } from './call-ids.js';
import type { ClientContext } from './context.js';
import { checkPaging, validatedParams } from './request-checks.js';
import { BATCH_ID_PATTERN } from '../batch/types.js';
import { orNotFound, outcomeOf, PcdsUsageError } from '../client-errors.js';
import { interactiveRequester } from '../contract/index.js';
import { requestFingerprint } from '../codec/idempotency.js';
import { PcdsBatchId, PcdsEndpoint, PcdsOutcome } from '../temporal/search-attributes.js';
import { taskPriorityOf } from '../temporal/task-priority.js';
import {
  isScopedId,
  localIdOf,
  resolveScopedId,
  scopedId,
  searchExportWorkflowId,
} from '../contract/workflow-ids.js';
import {
  pcdsPersonSearch,
  pcdsSearchExport,
  type PersonSearchInput,
  type PersonSearchResult,
  type SearchExportInput,
} from '../workflows/index.js';

/** An export by its id as the system knows it, shown to its caller by its own id. */
export function exportHandleOf(
  temporal: Client,
  scoped: string,
  exportId: string,
): SearchExportHandle {
  const workflowId = searchExportWorkflowId(scoped);
  const workflow = temporal.workflow.getHandle<typeof pcdsSearchExport>(workflowId);
  return {
    exportId,
    workflowId,
    workflow,
    result: () =>
      orNotFound(
        () => outcomeOf(workflowId, workflow.result()),
        () => new PcdsUsageError('export_not_found', `no search export with id ${exportId}`),
      ),
  };
}

/** Pages one person search for `tenant` and returns every page's results at once. */
export async function searchPeople(
  context: ClientContext,
  tenant: string,
  rawParams: Record<string, unknown>,
  opts: SearchPeopleOptions,
): Promise<PersonSearchResult> {
  const { temporal, taskQueue, defaults, idSecret } = context;
  const { params } = validatedParams('person_search', rawParams);
  checkPaging(opts.maxResults, opts.pageSize, Number.MAX_SAFE_INTEGER);
  const idempotencyKey =
    opts.idempotencyKey !== undefined
      ? tenantIdempotencyKey(tenant, opts.idempotencyKey)
      : undefined;
  const workflowId = callWorkflowId(
    'person_search',
    idempotencyKey,
    opts.idempotencyKeyPrefix,
    idSecret,
  ).replace(/^call-/, 'search-');
  const requester = interactiveRequester(tenant);
  const input: PersonSearchInput = {
    params,
    maxResults: opts.maxResults,
    ...(opts.pageSize ? { pageSize: opts.pageSize } : {}),
    ...(opts.keyId ? { keyId: opts.keyId } : {}),
    pollIntervalMs: opts.pollIntervalMs ?? defaults.pollIntervalMs,
    maxWaitMs: opts.maxWaitMs ?? defaults.maxWaitMs,
    output: { kind: 'return' },
    requester,
  };
  const workflow = await startOrFind(
    temporal,
    pcdsPersonSearch,
    {
      taskQueue,
      workflowId,
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: PcdsEndpoint, value: 'person_search' },
        { key: PcdsOutcome, value: 'running' },
      ],
      priority: taskPriorityOf(requester),
      staticSummary: `person_search, up to ${opts.maxResults} rows`,
    },
    opts.idempotencyKey !== undefined
      ? {
          endpoint: 'person_search',
          value: requestFingerprint(idSecret!, 'person_search', {
            params,
            maxResults: opts.maxResults,
          }),
        }
      : undefined,
  );
  return outcomeOf(workflowId, workflow.result());
}

/** Starts a search export for `tenant`; its output is checked (and must be new) before it starts. */
export async function startSearchExport(
  context: ClientContext,
  tenant: string,
  rawParams: Record<string, unknown>,
  opts: SearchExportOptions,
): Promise<SearchExportHandle> {
  const { temporal, taskQueue, defaults } = context;
  const { params } = validatedParams('person_search', rawParams);
  checkPaging(opts.maxResults, opts.pageSize, MAX_EXPORT_RESULTS);
  const exportId = opts.exportId ?? `s${newBatchId().slice(1)}`;
  if (!BATCH_ID_PATTERN.test(exportId))
    throw new PcdsUsageError('invalid_batch_id', 'export id: 1 to 64 letters, digits, _ or -');
  // The tenant's own id: another tenant's export of the same name is another export.
  const scoped = scopedId(tenant, exportId);
  const requester = interactiveRequester(tenant);
  checkExportOutput(opts.output);
  const output = resolve(opts.output);
  const existing = await stat(output).catch(() => undefined);
  if (existing && existing.size > 0 && !opts.overwrite) {
    throw new PcdsUsageError(
      'output_exists',
      `the output file ${opts.output} exists and is not empty: choose another output or overwrite it`,
    );
  }
  const pollIntervalMs = opts.pollIntervalMs ?? defaults.pollIntervalMs;
  const maxWaitMs = opts.maxWaitMs ?? defaults.maxWaitMs;
  const input: SearchExportInput = {
    params,
    maxResults: opts.maxResults,
    output,
    exportId: scoped,
    requester,
    ...(opts.pageSize ? { pageSize: opts.pageSize } : {}),
    ...(opts.keyId ? { keyId: opts.keyId } : {}),
    ...(pollIntervalMs ? { pollIntervalMs } : {}),
    ...(maxWaitMs ? { maxWaitMs } : {}),
  };
  try {
    await temporal.workflow.start(pcdsSearchExport, {
      taskQueue,
      workflowId: searchExportWorkflowId(scoped),
      args: [input],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      priority: taskPriorityOf(requester),
      typedSearchAttributes: [
        { key: PcdsBatchId, value: scoped },
        { key: PcdsEndpoint, value: 'person_search' },
      ],
      ...(opts.memo ? { memo: opts.memo } : {}),
      staticSummary: `person search export of up to ${opts.maxResults} rows`,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      throw new PcdsUsageError(
        'export_exists',
        `a search export with id ${exportId} already exists: choose another id`,
      );
    throw err;
  }
  return exportHandleOf(temporal, scoped, exportId);
}

/** A handle on an export of `tenant`'s, by the id it gave it. */
export function getSearchExport(
  temporal: Client,
  tenant: string,
  exportId: string,
): SearchExportHandle {
  const scoped = resolveScopedId(tenant, exportId);
  // Another tenant's export is not found, as an id that names nothing.
  if (scoped === undefined && isScopedId(exportId))
    throw new PcdsUsageError('export_not_found', `no search export with id ${exportId}`);
  if (scoped === undefined)
    throw new PcdsUsageError('invalid_batch_id', 'export id: 1 to 64 letters, digits, _ or -');
  return exportHandleOf(temporal, scoped, localIdOf(tenant, scoped));
}
