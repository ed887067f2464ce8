// Every workflow id the project makes and reads, in one place: batches, their rows, search exports,
// and the ids tenants name. Ids of different kinds cannot collide: a row's id holds a `:` that no
// batch id may hold, and a tenant's ids carry its name, so two tenants' `f2` never meet.
// Workflow code imports this module: it is pure and imports only the contract's tenant ids.
import { OPERATOR_TENANT, tenantIdProblem } from './tenant.js';

/** An id a caller names (a batch or an export): letters, digits, _ and -, never a dot. */
export const LOCAL_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The id of a batch or export as the system knows it: the caller's own id, after its tenant and a
 * dot when the tenant is not the operator's (`alice.f2`). Tenant ids may hold dots, local ids
 * never: the last dot splits them.
 */
export function scopedId(tenant: string, localId: string): string {
  return tenant === OPERATOR_TENANT ? localId : `${tenant}.${localId}`;
}

/** The tenant and local id of a scoped id, or undefined when it is none (or not in its one spelling). */
export function splitScopedId(id: string): { tenant: string; localId: string } | undefined {
  const dot = id.lastIndexOf('.');
  if (dot < 0)
    return LOCAL_ID_PATTERN.test(id) ? { tenant: OPERATOR_TENANT, localId: id } : undefined;
  const tenant = id.slice(0, dot);
  const localId = id.slice(dot + 1);
  // The operator's ids carry no prefix: `default.f2` would be a second name for `f2`.
  if (tenant === OPERATOR_TENANT || tenantIdProblem(tenant) || !LOCAL_ID_PATTERN.test(localId))
    return undefined;
  return { tenant, localId };
}

/** Whether `id` is a batch or export id as the system knows it (scoped or the operator's). */
export const isScopedId = (id: string): boolean => splitScopedId(id) !== undefined;

/**
 * The scoped id a tenant means by `given`: its local id, or the scoped id of its own work. The
 * operator's tenant may name any tenant's work by its scoped id. Undefined: not an id it may use.
 */
export function resolveScopedId(tenant: string, given: string): string | undefined {
  const split = splitScopedId(given);
  if (!split) return undefined;
  if (tenant === OPERATOR_TENANT) return given;
  if (split.tenant === OPERATOR_TENANT) return scopedId(tenant, split.localId);
  return split.tenant === tenant ? given : undefined;
}

/** The id a tenant knows its own work by: the local part of its own scoped ids. */
export function localIdOf(tenant: string, id: string): string {
  const split = splitScopedId(id);
  return split && tenant !== OPERATOR_TENANT && split.tenant === tenant ? split.localId : id;
}

export const batchWorkflowId = (batchId: string) => `batch-${batchId}`;

/** The batch a batch workflow's id names, or undefined for any other id (a row's included). */
export function batchIdOfWorkflowId(workflowId: string): string | undefined {
  const m = /^batch-(.+)$/.exec(workflowId);
  return m && isScopedId(m[1]) ? m[1] : undefined;
}

/**
 * How a batch names its rows' workflows, recorded in its input when it starts (so a batch keeps
 * its scheme for its whole life): `v2` is `batch-<id>:row-<n>`, which no batch id can spell;
 * absent (batches started before it) `batch-<id>-row-<n>`, which a batch id ending in `-row-<n>`
 * could.
 */
export type RowIdScheme = 'v2';
export const CURRENT_ROW_ID_SCHEME: RowIdScheme = 'v2';

/** The workflow id of a batch's row call (and the name a compact row's callback URL carries). */
export const rowWorkflowId = (batchId: string, row: number, scheme?: RowIdScheme) =>
  scheme === 'v2' ? `batch-${batchId}:row-${row}` : `batch-${batchId}-row-${row}`;

/**
 * The batch and row a row's id names, in either scheme; undefined for any other id. In the old
 * scheme the row is the last part, so a batch id that holds "-row-" itself is still read whole.
 */
export function rowOfWorkflowId(workflowId: string): { batchId: string; row: number } | undefined {
  const current = /^batch-(.+):row-([1-9][0-9]{0,9})$/.exec(workflowId);
  if (current)
    return isScopedId(current[1]) ? { batchId: current[1], row: Number(current[2]) } : undefined;
  const old = /^batch-(.+)-row-([1-9][0-9]{0,9})$/.exec(workflowId);
  if (!old || !LOCAL_ID_PATTERN.test(old[1])) return undefined;
  return { batchId: old[1], row: Number(old[2]) };
}

export const searchExportWorkflowId = (exportId: string) => `search-export-${exportId}`;

/** The export a search export's workflow id names, or undefined. */
export function exportIdOfWorkflowId(workflowId: string): string | undefined {
  const m = /^search-export-(.+)$/.exec(workflowId);
  return m && isScopedId(m[1]) ? m[1] : undefined;
}
