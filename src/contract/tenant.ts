// Who asks for the shared pool's work: a tenant (a `pcds mcp` token's label, a client's `tenant`
// option, the CLI's `--tenant`, or the operator's own `default`) and the class of what it asks
// for. Every permit names its requester, so the throttle can put interactive work first and share
// the rest by weight. Tenants and requesters are ids, never personal data. Pure: workflow code
// imports this file.

/** The operator's tenant: work started with no tenant (the CLI, an untagged client, stdio MCP). */
export const OPERATOR_TENANT = 'default';

/** Letters, digits, `_ . -`, up to 64 characters, not only dots (ids name folders and keys). */
const TENANT_ID = /^[A-Za-z0-9_.-]{1,64}$/;

/** Why `id` cannot name a tenant (the rule, never the value), or undefined when it can. */
export function tenantIdProblem(id: string): string | undefined {
  if (!TENANT_ID.test(id) || /^\.+$/.test(id))
    return 'a tenant id is 1-64 letters, digits, _ . or -, and not only dots';
  return undefined;
}

/**
 * How a request is served: `interactive` (single calls, search pages and MCP calls a person waits
 * on) goes first; `batch` shares what is left by weight; `background` (credit sampling, usage
 * reads for plans, sweeps) may use the interactive reserve but never goes ahead of a person.
 */
export const REQUEST_CLASSES = ['interactive', 'batch', 'background'] as const;
export type RequestClass = (typeof REQUEST_CLASSES)[number];

export interface Requester {
  class: RequestClass;
  tenant: string;
  /** Batch work: the batch, whose rows are all one requester whatever its window. */
  batchId?: string;
  /** Batch work: the batch's share weight among the tenant's batches (default 1). */
  weight?: number;
}

/** A batch's weight: positive and finite, from 0.001 to 1000 (as Temporal's fairness weights). */
export const MIN_WEIGHT = 0.001;
export const MAX_WEIGHT = 1000;

export function weightProblem(weight: number): string | undefined {
  if (!(Number.isFinite(weight) && weight >= MIN_WEIGHT && weight <= MAX_WEIGHT))
    return `a weight is a number from ${MIN_WEIGHT} to ${MAX_WEIGHT}`;
  return undefined;
}

/** The requester's id among the throttle's requesters: its batch, or its tenant and class. */
export function requesterId(r: Requester): string {
  return r.batchId !== undefined ? `batch:${r.batchId}` : `${r.class}:${r.tenant}`;
}

export function interactiveRequester(tenant: string = OPERATOR_TENANT): Requester {
  return { class: 'interactive', tenant };
}

export function backgroundRequester(tenant: string = OPERATOR_TENANT): Requester {
  return { class: 'background', tenant };
}

export function batchRequester(
  batchId: string,
  tenant: string = OPERATOR_TENANT,
  weight?: number,
): Requester {
  return { class: 'batch', tenant, batchId, ...(weight !== undefined ? { weight } : {}) };
}

/**
 * The requester of a call's requests: the one it was started with, or (calls started before
 * requesters existed) a batch's row as its batch, any other call as the operator's interactive.
 */
export function callRequester(input: { requester?: Requester; batchId?: string }): Requester {
  if (input.requester) return input.requester;
  return input.batchId !== undefined ? batchRequester(input.batchId) : interactiveRequester();
}
