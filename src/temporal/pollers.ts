// Whether a worker polls a task queue: one DescribeTaskQueue call, so that a command needing a
// worker says so within seconds instead of waiting in silence. The check never fails a command.
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common';
import proto from '@temporalio/proto';
import { PcdsError } from '../contract/pcds-error.js';

const { TaskQueueType } = proto.temporal.api.enums.v1;

/**
 * A poller seen this recently is a live worker. An idle worker's long poll lasts about a minute
 * and the server keeps a poller listed for minutes after its worker died, so the window is wide.
 */
export const POLLER_FRESH_MS = 90_000;
/** The describe call's own bound: a slow server makes the answer unknown, never a wait. */
export const DESCRIBE_TIMEOUT_MS = 3_000;

export type WorkerPresence =
  | { state: 'polled'; lastPollMsAgo: number }
  | { state: 'none' }
  /** The describe itself failed (permissions, an old server): nothing is claimed. */
  | { state: 'unknown'; reason: string };

export interface PollerSighting {
  lastAccessTime?: { seconds?: unknown; nanos?: number | null } | null;
}

/** Reads the describe's pollers: the freshest one decides. */
export function presenceOf(
  pollers: readonly PollerSighting[] | null | undefined,
  nowMs: number,
  freshMs = POLLER_FRESH_MS,
): WorkerPresence {
  let freshest: number | undefined;
  for (const p of pollers ?? []) {
    const at = optionalTsToMs(p.lastAccessTime as Parameters<typeof optionalTsToMs>[0]);
    if (at !== undefined && (freshest === undefined || at > freshest)) freshest = at;
  }
  if (freshest === undefined) return { state: 'none' };
  const ago = Math.max(0, nowMs - freshest);
  return ago <= freshMs ? { state: 'polled', lastPollMsAgo: ago } : { state: 'none' };
}

/** What the CLI, the client and the MCP tools say when no worker polls. */
export const noWorkerMessage = (taskQueue: string) =>
  `no worker is polling task queue ${taskQueue}: start one with \`pcds worker\``;

/** A command that would only wait for a worker that is not there. */
export class NoWorkerError extends PcdsError {
  override name = 'NoWorkerError';
  constructor(taskQueue: string, hint?: string) {
    super('no_worker', `${noWorkerMessage(taskQueue)}${hint ? ` (${hint})` : ''}`);
  }
}

/** A Client or a WorkflowClient (a workflow handle's). */
export type TaskQueueReader = Pick<Client, 'connection' | 'workflowService'> & {
  options: { namespace: string };
};

/**
 * Asks the server who polls the task queue's workflow tasks (one RPC, bounded). Workflow pollers
 * stand for the worker: `pcds worker` polls workflow and activity tasks on the same queue.
 */
export async function checkWorkers(
  client: TaskQueueReader,
  taskQueue: string,
  opts: { timeoutMs?: number; now?: () => number } = {},
): Promise<WorkerPresence> {
  try {
    const reply = await client.connection.withDeadline(
      Date.now() + (opts.timeoutMs ?? DESCRIBE_TIMEOUT_MS),
      () =>
        client.workflowService.describeTaskQueue({
          namespace: client.options.namespace,
          taskQueue: { name: taskQueue },
          taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        }),
    );
    return presenceOf(reply.pollers, (opts.now ?? Date.now)());
  } catch (err) {
    return { state: 'unknown', reason: err instanceof Error ? err.message : String(err) };
  }
}

/** The warning to print for a presence, or nothing when a worker polls or nobody knows. */
export const noWorkerWarning = (presence: WorkerPresence, taskQueue: string) =>
  presence.state === 'none' ? noWorkerMessage(taskQueue) : undefined;
