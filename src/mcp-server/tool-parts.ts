// What the tool groups of `pcds mcp` share: the client they act through, the argument and
// answer schemas every group uses, and the warning that no worker takes the work yet.
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import type { PcdsClient } from '../client.js';
import { ASYNC_ENDPOINTS, type AsyncEndpointName } from '../contract/index.js';
import { noWorkerWarning } from '../temporal/pollers.js';

/** What a tool group needs of the server's dependencies. */
export interface ToolDeps {
  /** The typed client on Temporal, connected on first use. */
  client(): Promise<PcdsClient>;
}

/** A `warning` field when no worker polls the client's task queue: the work waits for one. */
export async function workerWarning(client: PcdsClient): Promise<{ warning?: string }> {
  const warning = noWorkerWarning(await client.workers(), client.taskQueue);
  return warning ? { warning: `${warning}; it runs when one does` } : {};
}

/**
 * A start tool's answer: the new work's id under `idField`, `running`, and a warning when no
 * worker takes the work yet; `taskId` is the workflow's id (the task that follows it).
 */
export async function startedAnswer(
  client: PcdsClient,
  idField: 'call_id' | 'batch_id' | 'export_id',
  id: string,
  taskId: string,
): Promise<{ doc: Record<string, unknown>; taskId: string }> {
  return { doc: { [idField]: id, state: 'running', ...(await workerWarning(client)) }, taskId };
}

export const ENDPOINT_NAMES = ASYNC_ENDPOINTS.map((e) => e.name) as [
  AsyncEndpointName,
  ...AsyncEndpointName[],
];
export const idArg = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/)
  .describe('letters, digits, _ or -');
/** A refused start or a failed task: every answer of a start tool fits its output schema. */
export const toolError = z.object({ code: z.string(), message: z.string() });
export const readOnly = { readOnlyHint: true, openWorldHint: false };

/** A closed workflow's status from its description; a running one answers queries. */
export async function closed(
  workflow: { describe(): Promise<{ status: { name: string } }> },
  notFound: () => Error,
): Promise<string> {
  try {
    return (await workflow.describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw notFound();
    throw err;
  }
}
