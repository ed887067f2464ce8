// How a batch subcommand reaches what it names: the batch's id (scoped by its tenant), its
// workflow handle on a Temporal connection, and the store; their errors as the CLI reports them.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { BatchSetupError, batchHandle, type BatchHandle } from '../../client/batch-launch.js';
import { loadConfig, type Config } from '../../config.js';
import { OPERATOR_TENANT } from '../../contract/index.js';
import {
  BatchStore,
  BatchStoreError,
  openStoreFromSettings,
  type BatchRecords,
  type ResultReader,
} from '../../store/index.js';
import { batchWorkflowId, resolveScopedId } from '../../contract/workflow-ids.js';
import { CliError, UsageError } from '../output.js';
import { connectTemporal, warnWithoutWorker } from '../temporal-connection.js';

/** Runs fn on the store's batches and results; a store's refusal (BatchStoreError) is a usage error. */
export async function withStore<T>(
  config: Config,
  fn: (store: BatchRecords & ResultReader) => Promise<T>,
): Promise<T> {
  const store = await openStoreFromSettings(config);
  try {
    return await fn(new BatchStore(store));
  } catch (err) {
    if (err instanceof BatchStoreError) throw new UsageError(err.message);
    throw err;
  } finally {
    await store.close();
  }
}

/**
 * The batch a command names: its id as the system knows it, or a tenant's own id (after
 * `--tenant`, else PCDS_TENANT) scoped by that tenant. The operator names any batch by its id.
 */
export function batchIdOf(given: string, tenant: string): string {
  const id = resolveScopedId(tenant, given);
  // The id is not echoed: a malformed one may be anything, personal data included.
  if (id === undefined)
    throw new UsageError(
      `not a batch id${tenant !== OPERATOR_TENANT ? ` of tenant ${tenant}` : ''}: 1 to 64 letters, digits, _ or -`,
    );
  return id;
}

/**
 * Runs fn on the batch a command names, over a Temporal connection closed after; no such batch,
 * or a batch that cannot be reached, is the CLI's error.
 */
export async function withBatch(
  given: string,
  tenant: string | undefined,
  fn: (handle: BatchHandle, config: Config, client: Client, id: string) => Promise<void>,
): Promise<void> {
  const config = loadConfig();
  const id = batchIdOf(given, tenant ?? config.PCDS_TENANT);
  const { client, close } = await connectTemporal(config);
  try {
    const handle = batchHandle(client, id);
    try {
      await fn(handle, config, client, id);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError)
        throw new UsageError(`no batch with id ${id} (workflow ${batchWorkflowId(id)})`);
      throw err;
    }
  } catch (err) {
    if (err instanceof BatchSetupError)
      throw err.code === 'no_worker' ? new CliError(err.message) : new UsageError(err.message);
    throw err;
  } finally {
    await close();
  }
}

/** After a signal or a cancel, which the server keeps for the batch: a warning if no worker polls. */
export async function warnLater(handle: BatchHandle, then: string): Promise<void> {
  const { taskQueue } = await handle.describe();
  await warnWithoutWorker(handle.client, taskQueue, then);
}
