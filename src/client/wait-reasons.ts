// Why work waits, in words a person can act on: no worker takes its tasks, a key's throttle
// window is full until a time, a budget holds it, it is paused, or a step keeps failing and is
// retried. The CLI, the typed client's status and the MCP task statuses all say it from here, so
// no wait longer than a few seconds goes without its reason.
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { PauseReason } from '../batch/types.js';
import { checkWorkers, noWorkerMessage, type TaskQueueReader } from '../temporal/pollers.js';
import { PcdsState } from '../temporal/search-attributes.js';
import type { KeyWindowUse } from './key-window-use.js';

const { PendingActivityState, PendingWorkflowTaskState } = proto.temporal.api.enums.v1;

/**
 * What holds work back. `fair_share`: other work shares a key and the batch waits its turn;
 * `budget` is a caller's or tenant's spending limit (shown when the throttle reports one). The
 * list is open: a reason of a kind this release does not know is still shown by its message.
 */
export type WaitKind =
  | 'no_worker'
  | 'task_not_taken'
  | 'throttle'
  | 'fair_share'
  | 'budget'
  | 'paused'
  | 'retrying'
  | (string & {});

export interface WaitReason {
  kind: WaitKind;
  /** One line: what waits, why, until when, and what to do about it. */
  message: string;
  /** When the wait should end by itself (epoch ms), when known. */
  until?: number;
  keyId?: string;
}

/** A task (workflow or activity) unclaimed this long means no worker takes it. */
export const TASK_UNTAKEN_MS = 3_000;

const iso = (t: number) => new Date(t).toISOString().replace(/\.\d+Z$/, 'Z');
const secs = (ms: number) => `${Math.max(1, Math.round(ms / 1000))} s`;

/** `waiting: <message>` lines, one a reason. */
export const waitLines = (reasons: readonly WaitReason[]) =>
  reasons.map((r) => `waiting: ${r.message}`);

/** A key's windows as a reason to wait, when they hold requests back now. */
export function keyWaitReason(use: KeyWindowUse, now: number): WaitReason | undefined {
  const { keyId } = use;
  if (use.breakerOpen)
    return {
      kind: 'paused',
      keyId,
      message: `key ${keyId}: credits exhausted (402): its submits wait for an operator (pcds throttle resume ${keyId} once credits are added)`,
    };
  if (use.closedUntil !== undefined && use.closedUntil > now)
    return {
      kind: 'throttle',
      keyId,
      until: use.closedUntil,
      message: `key ${keyId} is closed after a 429 (Retry-After) until about ${iso(use.closedUntil)}`,
    };
  if (use.hour.used >= use.hour.limit)
    return {
      kind: 'throttle',
      keyId,
      ...(use.hourFreesAt !== undefined ? { until: use.hourFreesAt } : {}),
      message:
        `key ${keyId}'s hour window is full (${use.hour.used}/${use.hour.limit} requests in the last hour)` +
        (use.hourFreesAt !== undefined
          ? `: requests go again as it slides, from about ${iso(use.hourFreesAt)}`
          : ''),
    };
  return undefined;
}

/** A batch's pause as a reason. */
export const pausedReason = (paused: PauseReason): WaitReason => ({
  kind: 'paused',
  ...(paused.keyId ? { keyId: paused.keyId } : {}),
  message: `paused (${paused.code}): ${paused.message}; \`pcds batch resume\` once fixed`,
});

/**
 * A permit wait as a workflow shows it in its details (throttle/status-text.ts words it: `...
 * throttled: submit waits for a permit on key k1: <why>, until about <ISO>`).
 */
export function permitWaitReason(details: string | undefined): WaitReason | undefined {
  const at = details?.indexOf('throttled: ') ?? -1;
  if (!details || at < 0) return undefined;
  const message = details
    .slice(at + 'throttled: '.length)
    .replace(/ \(request [^)]*\)$/, '')
    .trim();
  const until = Date.parse(/until about (\S+?Z)/.exec(message)?.[1] ?? '');
  const keyId = /on key (\S+?):/.exec(message)?.[1];
  return {
    kind: /budget/i.test(message) ? 'budget' : 'throttle',
    message,
    ...(Number.isNaN(until) ? {} : { until }),
    ...(keyId ? { keyId } : {}),
  };
}

/** The parts of a workflow's description the reasons are read from. */
export interface PendingWork {
  /** The workflow task, while one is pending. */
  workflowTask?: { scheduledAt: number; started: boolean };
  activities: {
    type: string;
    scheduledAt?: number;
    started: boolean;
    attempt: number;
    lastFailure?: string;
    nextAttemptAt?: number;
    /** When the running attempt started, last heartbeated, and on which worker. */
    startedAt?: number;
    heartbeatAt?: number;
    worker?: string;
  }[];
}

/** Reads a description's pending workflow task and activities. */
export function pendingWorkOf(raw: {
  pendingWorkflowTask?: {
    state?: number | null;
    scheduledTime?: unknown;
    originalScheduledTime?: unknown;
  } | null;
  pendingActivities?:
    | {
        activityType?: { name?: string | null } | null;
        state?: number | null;
        scheduledTime?: unknown;
        attempt?: number | null;
        lastFailure?: { message?: string | null } | null;
        nextAttemptScheduleTime?: unknown;
        lastStartedTime?: unknown;
        lastHeartbeatTime?: unknown;
        lastWorkerIdentity?: string | null;
      }[]
    | null;
}): PendingWork {
  const ms = (t: unknown) => optionalTsToMs(t as Parameters<typeof optionalTsToMs>[0]);
  const wt = raw.pendingWorkflowTask;
  const wtAt = wt ? (ms(wt.originalScheduledTime) ?? ms(wt.scheduledTime)) : undefined;
  return {
    ...(wt && wtAt !== undefined
      ? {
          workflowTask: {
            scheduledAt: wtAt,
            started: wt.state === PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_STARTED,
          },
        }
      : {}),
    activities: (raw.pendingActivities ?? []).map((a) => {
      const scheduledAt = ms(a.scheduledTime);
      const nextAttemptAt = ms(a.nextAttemptScheduleTime);
      const startedAt = ms(a.lastStartedTime);
      const heartbeatAt = ms(a.lastHeartbeatTime);
      return {
        ...(startedAt !== undefined ? { startedAt } : {}),
        ...(heartbeatAt !== undefined ? { heartbeatAt } : {}),
        ...(a.lastWorkerIdentity ? { worker: a.lastWorkerIdentity } : {}),
        type: a.activityType?.name ?? 'activity',
        ...(scheduledAt !== undefined ? { scheduledAt } : {}),
        started: a.state === PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
        attempt: a.attempt ?? 1,
        ...(a.lastFailure?.message ? { lastFailure: a.lastFailure.message } : {}),
        ...(nextAttemptAt !== undefined ? { nextAttemptAt } : {}),
      };
    }),
  };
}

/** How long the oldest task of the workflow has waited for a worker to take it (ms), if one has. */
export function untakenForMs(work: PendingWork, now: number): number | undefined {
  const waits: number[] = [];
  if (work.workflowTask && !work.workflowTask.started)
    waits.push(now - work.workflowTask.scheduledAt);
  for (const a of work.activities)
    if (!a.started && a.scheduledAt !== undefined && (a.nextAttemptAt ?? 0) <= now)
      waits.push(now - a.scheduledAt);
  return waits.length ? Math.max(...waits) : undefined;
}

/** A running step not heard of this long: its worker may have stopped. */
export const STEP_SILENT_MS = 10_000;

/**
 * Steps running with no word from their worker for a while (no heartbeat, not finished): when
 * that worker stopped, the step waits for its timeout before another worker retries it.
 */
export function silentStepReasons(work: PendingWork, now: number): WaitReason[] {
  return work.activities
    .filter((a) => a.started && a.startedAt !== undefined)
    .filter((a) => now - Math.max(a.startedAt!, a.heartbeatAt ?? 0) >= STEP_SILENT_MS)
    .map((a) => ({
      kind: 'task_not_taken',
      message: `its ${a.type} step started ${secs(now - a.startedAt!)} ago${a.worker ? ` on worker ${a.worker}` : ''} and has given no word for ${secs(now - Math.max(a.startedAt!, a.heartbeatAt ?? 0))}: if that worker stopped, another retries the step after its timeout (is a worker running? \`pcds worker\`)`,
    }));
}

/** A step failing again and again (the service unreachable, say): retried, and why. */
export function retryReasons(work: PendingWork, now: number): WaitReason[] {
  return work.activities
    .filter((a) => a.attempt > 1 && a.lastFailure)
    .map((a) => ({
      kind: 'retrying',
      message:
        `${a.type} failed ${a.attempt - 1} time${a.attempt > 2 ? 's' : ''} (${a.lastFailure!.slice(0, 200)})` +
        (a.nextAttemptAt !== undefined && a.nextAttemptAt > now
          ? `; next attempt in ${secs(a.nextAttemptAt - now)}`
          : '; trying again'),
      ...(a.nextAttemptAt !== undefined ? { until: a.nextAttemptAt } : {}),
    }));
}

/**
 * No worker takes the workflow's tasks: none polls the queue (say so and how to start one), or
 * one was seen polling but the task still waits (it stopped, or every worker is busy).
 */
export async function untakenReason(
  client: TaskQueueReader,
  taskQueue: string,
  waitedMs: number,
): Promise<WaitReason> {
  const presence = await checkWorkers(client, taskQueue);
  if (presence.state === 'none') return { kind: 'no_worker', message: noWorkerMessage(taskQueue) };
  const seen =
    presence.state === 'polled'
      ? `; task queue ${taskQueue} was last polled ${secs(presence.lastPollMsAgo)} ago`
      : '';
  return {
    kind: 'task_not_taken',
    message: `no worker has taken its next task for ${secs(waitedMs)}${seen}: the workers stopped or are all busy (start one with \`pcds worker\`, PCDS_TASK_QUEUE=${taskQueue})`,
  };
}

/** The SDK's query that answers a workflow's current details (the Web UI's). */
const WORKFLOW_METADATA_QUERY = '__temporal_workflow_metadata';

/** A running workflow's wait: what it shows in PcdsState, and what holds it back. */
export interface WorkflowWaits {
  running: boolean;
  /** PcdsState as last published (submitting, polling, waiting_for_webhook, throttled, ...). */
  state?: string;
  reasons: WaitReason[];
}

/**
 * Why a running call (or search) waits now: its tasks untaken by any worker, its permit wait
 * (PcdsState throttled, with its details), steps retried after failures. No reason while nothing
 * holds it back (it is being worked on, or waits for the service's job) or once it ended.
 */
export async function describeWaits(
  client: Client,
  workflowId: string,
  opts: { now?: number; timeoutMs?: number } = {},
): Promise<WorkflowWaits> {
  const now = opts.now ?? Date.now();
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe();
  if (described.status.name !== 'RUNNING') return { running: false, reasons: [] };
  const state = described.typedSearchAttributes.get(PcdsState);
  const work = pendingWorkOf(described.raw);
  const reasons: WaitReason[] = [];
  const untaken = untakenForMs(work, now);
  if (untaken !== undefined && untaken >= TASK_UNTAKEN_MS)
    reasons.push(await untakenReason(client, described.taskQueue, untaken));
  else if (state === 'throttled') {
    const details = await client
      .withDeadline(now + (opts.timeoutMs ?? 3_000), () =>
        handle.query<{ currentDetails?: string }>(WORKFLOW_METADATA_QUERY),
      )
      .then((m) => m.currentDetails)
      .catch(() => undefined);
    reasons.push(
      permitWaitReason(details) ?? {
        kind: 'throttle',
        message: 'a request waits for a permit of the shared throttle',
      },
    );
  } else reasons.push(...silentStepReasons(work, now));
  reasons.push(...retryReasons(work, now));
  return { running: true, ...(state !== undefined ? { state } : {}), reasons };
}

/** Why a running call (or search) waits now (see describeWaits). */
export async function workflowWaitReasons(
  client: Client,
  workflowId: string,
  opts: { now?: number; timeoutMs?: number } = {},
): Promise<WaitReason[]> {
  return (await describeWaits(client, workflowId, opts)).reasons;
}
