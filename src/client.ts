// The typed entry point for services: validate parameters with the contract, start a durable
// call (or a paged person search) and await its outcome or keep its handle.
import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, type SearchAttributePair } from '@temporalio/common';
import {
  findEndpoint,
  formatProblems,
  validateInput,
  type EndpointDef,
  type InputProblem,
} from './contract/index.js';
import { PcdsEndpoint, PcdsKeyId, PcdsOutcome, PcdsState } from './temporal/search-attributes.js';
import type {
  EndpointCallInput,
  PersonSearchInput,
  PersonSearchResult,
} from './workflows/index.js';
import { callStateQuery } from './workflows/signals.js';
import type { CallOutcome, CallState } from './workflows/types.js';

/** Call outcomes a caller receives; failures are thrown as PcdsCallError. */
export type CallSuccess = Exclude<CallOutcome, { outcome: 'failed' }>;

/** A call ended in failure; `code` is the service's error code (or an orchestrator code such as poll_timeout). */
export class PcdsCallError extends Error {
  override name = 'PcdsCallError';
  constructor(
    readonly code: string,
    message: string,
    readonly workflowId: string,
    readonly httpStatus?: number,
    readonly requestId?: string,
  ) {
    super(message);
  }
}

/** Parameters or options were refused before anything started. */
export class PcdsUsageError extends Error {
  override name = 'PcdsUsageError';
  constructor(
    message: string,
    readonly problems: InputProblem[] = [],
  ) {
    super(message);
  }
}

export interface PcdsClientOptions {
  connection?: Connection;
  /** Default 127.0.0.1:7233; ignored when a connection is given. */
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /** Defaults for every call started by this client (e.g. from the PCDS_ configuration). */
  defaults?: Pick<EndpointCallInput, 'pollIntervalMs' | 'maxWaitMs' | 'webhookFallbackPollMs'>;
}

export interface StartCallOptions {
  /** Makes the workflow id deterministic: a repeated start attaches to (or returns) the same call. Must not contain PII. */
  idempotencyKey?: string;
  keyId?: string;
  webhook?: boolean;
  pollIntervalMs?: number;
  maxWaitMs?: number;
}

export interface CallHandle {
  workflowId: string;
  /** The outcome (found / empty); throws PcdsCallError when the call failed. */
  result(): Promise<CallSuccess>;
  state(): Promise<CallState>;
  workflow: WorkflowHandle;
}

export interface SearchPeopleOptions {
  maxResults: number;
  pageSize?: number;
  keyId?: string;
  idempotencyKey?: string;
  pollIntervalMs?: number;
  maxWaitMs?: number;
}

const KEY_RE = /^[A-Za-z0-9_.:-]{1,128}$/;

export function callWorkflowId(endpoint: string, idempotencyKey?: string): string {
  if (idempotencyKey !== undefined && !KEY_RE.test(idempotencyKey)) {
    throw new PcdsUsageError('idempotency key: 1-128 letters, digits, _ . : - only');
  }
  return `call-${endpoint}-${idempotencyKey ?? randomUUID()}`;
}

export interface PcdsClient {
  temporal: Client;
  startCall(
    endpoint: string,
    params: Record<string, unknown>,
    options?: StartCallOptions,
  ): Promise<CallHandle>;
  call(
    endpoint: string,
    params: Record<string, unknown>,
    options?: StartCallOptions,
  ): Promise<CallSuccess>;
  /** A handle on a call started earlier (by id). */
  getCall(workflowId: string): CallHandle;
  searchPeople(
    params: Record<string, unknown>,
    options: SearchPeopleOptions,
  ): Promise<PersonSearchResult>;
  close(): Promise<void>;
}

export function validatedParams(
  endpointName: string,
  params: Record<string, unknown>,
): { endpoint: EndpointDef; params: Record<string, unknown> } {
  const endpoint = findEndpoint(endpointName);
  if (!endpoint)
    throw new PcdsUsageError(`unknown endpoint "${endpointName}" (see \`pcds call --help\`)`);
  if (endpoint.polling === 'sync') {
    throw new PcdsUsageError(`${endpoint.name} is synchronous: there is no durable call to start`);
  }
  const v = validateInput(endpoint, params);
  if (!v.ok)
    throw new PcdsUsageError(
      `invalid parameters for ${endpoint.name}: ${formatProblems(v.problems)}`,
      v.problems,
    );
  return { endpoint, params: v.value };
}

/** Rethrows a workflow failure as PcdsCallError (the failure type is the error code). */
export async function outcomeOf<T>(workflowId: string, result: Promise<T>): Promise<T> {
  try {
    return await result;
  } catch (err) {
    if (
      err instanceof WorkflowFailedError &&
      err.cause instanceof ApplicationFailure &&
      err.cause.type
    ) {
      const details = (err.cause.details?.[0] ?? {}) as { httpStatus?: number; requestId?: string };
      throw new PcdsCallError(
        err.cause.type,
        err.cause.message,
        workflowId,
        details.httpStatus,
        details.requestId,
      );
    }
    throw err;
  }
}

export async function createPcdsClient(options: PcdsClientOptions = {}): Promise<PcdsClient> {
  const ownsConnection = !options.connection;
  const connection =
    options.connection ??
    (await Connection.connect({ address: options.address ?? '127.0.0.1:7233' }));
  const temporal = new Client({ connection, namespace: options.namespace ?? 'default' });
  const taskQueue = options.taskQueue ?? 'pcds';

  const handleOf = (workflow: WorkflowHandle): CallHandle => ({
    workflowId: workflow.workflowId,
    workflow,
    result: () =>
      outcomeOf(
        workflow.workflowId,
        workflow.result() as Promise<CallOutcome>,
      ) as Promise<CallSuccess>,
    state: () => workflow.query(callStateQuery),
  });

  const startCall: PcdsClient['startCall'] = async (endpointName, rawParams, opts = {}) => {
    const { endpoint, params } = validatedParams(endpointName, rawParams);
    const workflowId = callWorkflowId(endpoint.name, opts.idempotencyKey);
    const input: EndpointCallInput = {
      endpoint: endpoint.name,
      params,
      ...options.defaults,
      ...(opts.keyId ? { keyId: opts.keyId } : {}),
      ...(opts.webhook ? { webhook: true } : {}),
      ...(opts.pollIntervalMs ? { pollIntervalMs: opts.pollIntervalMs } : {}),
      ...(opts.maxWaitMs ? { maxWaitMs: opts.maxWaitMs } : {}),
    };
    const attrs: SearchAttributePair[] = [
      { key: PcdsEndpoint, value: endpoint.name },
      { key: PcdsOutcome, value: 'running' },
      { key: PcdsState, value: 'submitting' },
      ...(opts.keyId ? [{ key: PcdsKeyId, value: opts.keyId }] : []),
    ] as SearchAttributePair[];
    try {
      const workflow = await temporal.workflow.start('endpointCall', {
        taskQueue,
        workflowId,
        args: [input],
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: attrs,
        staticSummary: `${endpoint.name} call`,
      });
      return handleOf(workflow);
    } catch (err) {
      // The same key finished earlier: that call is the answer, not a second one.
      if (err instanceof WorkflowExecutionAlreadyStartedError)
        return handleOf(temporal.workflow.getHandle(workflowId));
      throw err;
    }
  };

  return {
    temporal,
    startCall,
    async call(endpoint, params, opts) {
      const handle = await startCall(endpoint, params, opts);
      return handle.result();
    },
    getCall: (workflowId) => handleOf(temporal.workflow.getHandle(workflowId)),
    async searchPeople(rawParams, opts) {
      const { params } = validatedParams('person_search', rawParams);
      if (!Number.isInteger(opts.maxResults) || opts.maxResults < 1)
        throw new PcdsUsageError('maxResults must be a positive integer');
      if (
        opts.pageSize !== undefined &&
        (!Number.isInteger(opts.pageSize) || opts.pageSize < 1 || opts.pageSize > 100)
      ) {
        throw new PcdsUsageError('pageSize must be an integer from 1 to 100');
      }
      const workflowId = callWorkflowId('person_search', opts.idempotencyKey).replace(
        /^call-/,
        'search-',
      );
      const input: PersonSearchInput = {
        params,
        maxResults: opts.maxResults,
        ...(opts.pageSize ? { pageSize: opts.pageSize } : {}),
        ...(opts.keyId ? { keyId: opts.keyId } : {}),
        pollIntervalMs: opts.pollIntervalMs ?? options.defaults?.pollIntervalMs,
        maxWaitMs: opts.maxWaitMs ?? options.defaults?.maxWaitMs,
        output: { kind: 'return' },
      };
      let workflow: WorkflowHandle;
      try {
        workflow = await temporal.workflow.start('personSearch', {
          taskQueue,
          workflowId,
          args: [input],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          workflowIdConflictPolicy: 'USE_EXISTING',
          typedSearchAttributes: [
            { key: PcdsEndpoint, value: 'person_search' },
            { key: PcdsOutcome, value: 'running' },
          ],
          staticSummary: `person_search, up to ${opts.maxResults} rows`,
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        workflow = temporal.workflow.getHandle(workflowId);
      }
      return outcomeOf(workflowId, workflow.result() as Promise<PersonSearchResult>);
    },
    async close() {
      if (ownsConnection) await connection.close();
    },
  };
}
