// Where one callback delivery goes, and what the receiver checks it against: a compact batch row
// (known by its entry in the store's submit journal) keeps it in the store; any other id is a
// call workflow, signalled, whose own request_id a query tells.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { callStateQuery } from '../calls/signals.js';
import type { DeliveryInbox, SubmitJournalReader } from '../store/roles.js';
import { rowOfWorkflowId } from '../contract/workflow-ids.js';

/** What the receiver needs of the store: a row's journal entry, and the row's kept deliveries. */
export type RowDeliveryStore = SubmitJournalReader & DeliveryInbox;

/** Where one delivery goes: a workflow's signal, or the store for a compact row. */
export type DeliveryTarget =
  | { kind: 'workflow' }
  | { kind: 'compact'; store: RowDeliveryStore; batchId: string; row: number; requestId?: string }
  /** The id has a row's shape and the store could not say whether it is a compact row. */
  | { kind: 'store_unreachable' };

/**
 * Where a delivery goes. Only a compact row has an entry in the store's submit journal (made
 * before its POST, so before any delivery): an id of a row's shape with an entry is a compact
 * row, any other id a workflow. The journal also gives the row's request_id once accepted.
 */
export async function deliveryTarget(
  store: { get(): Promise<RowDeliveryStore> } | undefined,
  workflowId: string,
): Promise<DeliveryTarget> {
  const row = store ? rowOfWorkflowId(workflowId) : undefined;
  if (!store || !row) return { kind: 'workflow' };
  try {
    const opened = await store.get();
    const entry = await opened.rowEntry(row.batchId, row.row);
    if (!entry) return { kind: 'workflow' };
    return {
      kind: 'compact',
      store: opened,
      ...row,
      ...(entry.state === 'accepted' && entry.requestId ? { requestId: entry.requestId } : {}),
    };
  } catch {
    return { kind: 'store_unreachable' };
  }
}

/**
 * The call's own request_id (undefined while it has none or did not answer within `queryMs`);
 * gone: no such call.
 */
export async function callRequestId(
  client: Client,
  workflowId: string,
  queryMs: number,
): Promise<{ gone: true } | { gone: false; requestId: string | undefined }> {
  try {
    const state = await client.withDeadline(Date.now() + queryMs, () =>
      client.workflow.getHandle(workflowId).query(callStateQuery),
    );
    return { gone: false, requestId: state.requestId };
  } catch (err) {
    return err instanceof WorkflowNotFoundError
      ? { gone: true }
      : { gone: false, requestId: undefined };
  }
}
