// The MCP task store of `pcds mcp`, kept by Temporal itself: a task is the workflow of the work an
// assistant started (its id is the workflow id), so tasks survive a restart of `pcds mcp` and any
// of its processes answers for them. What Temporal does not hold (the time to live) is in the memo.
import type {
  CreateTaskOptions,
  TaskStore,
} from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { CallToolResult, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { sep } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { decodeMapFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { PcdsClient } from '../client.js';
import { PcdsError } from '../contract/pcds-error.js';
import { noWorkerWarning } from '../temporal/pollers.js';
import { PcdsState } from '../temporal/search-attributes.js';
import { batchIdOfWorkflowId, exportIdOfWorkflowId } from '../contract/workflow-ids.js';
import { BATCH_WORKFLOW_TYPE } from '../temporal/workflow-types.js';
import { answer } from './answers.js';
import type { FileRoot } from './file-root.js';
import { withShownPaths } from './shown-paths.js';
import {
  batchTaskView,
  closedTaskStatus,
  permitWaitOf,
  type PermitWaitShown,
  runningCallView,
  waitingView,
  type TaskStatus,
  type TaskView,
} from './task-status.js';

/** Memo fields of work started as a task: its time to live (ms) and when it was created. */
export const TASK_TTL_MEMO = 'pcdsMcpTaskTtl';
export const TASK_CREATED_MEMO = 'pcdsMcpTaskCreatedAt';

/** Time to live of a task: asked by the client, kept within these bounds (ms). */
export const TASK_TTL_MS = { default: 7 * 86_400_000, min: 60_000, max: 30 * 86_400_000 };
/** The query every workflow answers with its current details (the Web UI's). */
const WORKFLOW_METADATA_QUERY = '__temporal_workflow_metadata';
/** tasks/list looks at this many recent workflows at most and answers this many tasks. */
const LIST_SCAN = 1000;
const LIST_PAGE = 50;

export const taskTtl = (asked: number | null | undefined): number =>
  asked === undefined || asked === null
    ? TASK_TTL_MS.default
    : Math.min(TASK_TTL_MS.max, Math.max(TASK_TTL_MS.min, Math.round(asked)));

/** The memo that makes a start a task (set at start, kept across a batch's runs). */
export const taskMemo = (ttl: number, now = new Date()): Record<string, string> => ({
  [TASK_TTL_MEMO]: String(ttl),
  [TASK_CREATED_MEMO]: now.toISOString(),
});

type TaskKind = 'call' | 'batch' | 'export';

/** What a task id names: a call, a batch or a search export, by its workflow id. */
export function taskTarget(taskId: string): { kind: TaskKind; id: string } | undefined {
  if (/^call-[A-Za-z0-9_.:-]+$/.test(taskId)) return { kind: 'call', id: taskId };
  // Batch and export ids as the system knows them (scoped by tenant): a caller's client takes its own.
  const batch = batchIdOfWorkflowId(taskId);
  if (batch !== undefined) return { kind: 'batch', id: batch };
  const exp = exportIdOfWorkflowId(taskId);
  if (exp !== undefined) return { kind: 'export', id: exp };
  return undefined;
}

interface Described {
  status: { name: string };
  startTime: Date;
  closeTime?: Date;
  memo?: Record<string, unknown>;
  typedSearchAttributes: { get(key: typeof PcdsState): string | undefined };
  raw: { workflowExtendedInfo?: { cancelRequested?: boolean | null } | null };
}

/** The scheme of a link to a file in the caller's file root: its path relative to the root. */
export const FILE_ROOT_SCHEME = 'pcds-files';

/**
 * A result's link to a file the work wrote, named relative to the caller's file root (`shown`, as
 * the tools take paths): never the server's absolute path.
 */
const fileLink = (shown: string, name: string): CallToolResult['content'][number] => ({
  type: 'resource_link',
  uri: `${FILE_ROOT_SCHEME}:${shown.split(sep).map(encodeURIComponent).join('/')}`,
  name,
  mimeType: shown.endsWith('.csv') ? 'text/csv' : 'application/jsonl',
});

const isNotFound = (err: unknown) =>
  err instanceof WorkflowNotFoundError ||
  (err instanceof Error && /_not_found$/.test(String((err as PcdsError).code)));

export interface TemporalTaskStoreDeps {
  /** The client of the caller (caller-scoped over HTTP): another caller's work is not found. */
  client(): Promise<PcdsClient>;
  /** Whether a listed workflow's memo makes it the caller's. */
  visible(memo: Record<string, unknown> | undefined): boolean;
  /** The caller's file root: answers name files relative to it. */
  files: Pick<FileRoot, 'shown'>;
  now?: () => number;
}

export class TemporalTaskStore implements TaskStore {
  constructor(private readonly deps: TemporalTaskStoreDeps) {}

  private now() {
    return this.deps.now?.() ?? Date.now();
  }

  /**
   * The task of work a start tool has just started: `context.taskId` names its workflow, which
   * Temporal accepted (the start tools create their tasks only then).
   */
  async createTask(params: CreateTaskOptions): Promise<Task> {
    const taskId = params.context?.taskId;
    if (typeof taskId !== 'string') throw new Error('a task is created by starting its work');
    const task = await this.getTask(taskId);
    if (!task) throw new Error('the started work is not found');
    return task;
  }

  private async describe(kind: TaskKind, id: string): Promise<Described> {
    const client = await this.deps.client();
    const workflow =
      kind === 'call'
        ? client.getCall(id).workflow
        : kind === 'batch'
          ? client.getBatch(id).workflow
          : client.getSearchExport(id).workflow;
    const described: Described = await workflow.describe();
    return described;
  }

  async getTask(taskId: string): Promise<Task | null> {
    const target = taskTarget(taskId);
    if (!target) return null;
    let described: Described;
    try {
      described = await this.describe(target.kind, target.id);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
    const ttl = taskTtl(Number(described.memo?.[TASK_TTL_MEMO]) || undefined);
    const memoCreated = described.memo?.[TASK_CREATED_MEMO];
    const created =
      typeof memoCreated === 'string' ? memoCreated : described.startTime.toISOString();
    const closed = described.closeTime !== undefined;
    // An ended task is kept for its time to live (and no longer than Temporal keeps its workflow).
    if (closed && Date.parse(created) + ttl < this.now()) return null;
    const view = await this.view(target.kind, target.id, described);
    return {
      taskId,
      status: view.status,
      ttl,
      createdAt: created,
      lastUpdatedAt: (described.closeTime ?? new Date(this.now())).toISOString(),
      ...(view.pollInterval !== undefined ? { pollInterval: view.pollInterval } : {}),
      statusMessage: view.statusMessage,
    };
  }

  /** Status, message and poll interval from the workflow (its queries while it runs). */
  private async view(kind: TaskKind, id: string, d: Described): Promise<TaskView> {
    const client = await this.deps.client();
    const running = d.status.name === 'RUNNING';
    // A cancel asked for is final: the work ends cancelled (a batch writes what finished first).
    if (d.raw.workflowExtendedInfo?.cancelRequested)
      return {
        status: 'cancelled',
        statusMessage: running ? 'cancelling: the work ends as soon as it can' : 'cancelled',
      };
    if (kind === 'batch') {
      try {
        const status = await client.getBatch(id).status();
        const throttled = status.progress ? await this.throttledRows(client, id) : undefined;
        return batchTaskView(status, throttled, this.now());
      } catch (err) {
        if (err instanceof PcdsError) return failedView(err);
        throw err;
      }
    }
    if (running) {
      const missing = noWorkerWarning(await client.workers(), client.taskQueue);
      if (kind === 'export')
        return missing
          ? runningCallView({ noWorker: missing })
          : { status: 'working', statusMessage: 'pages are written', pollInterval: 5_000 };
      if (missing) return runningCallView({ noWorker: missing });
      const call = client.getCall(id);
      // Its tasks untaken by any worker, a step retried after failures: said before any query,
      // which only a worker answers.
      const reasons = (await call.waiting().catch(() => [])).filter(
        (r) => r.kind !== 'throttle' && r.kind !== 'budget',
      );
      if (reasons.length) return waitingView(reasons, this.now());
      const state = await call.state();
      const shownState = d.typedSearchAttributes.get(PcdsState);
      // Why it is throttled is in its current details (the SDK's metadata query).
      const details =
        shownState === 'throttled'
          ? await call.workflow
              .query<{ currentDetails?: string }>(WORKFLOW_METADATA_QUERY)
              .then((m) => m.currentDetails)
              .catch(() => undefined)
          : undefined;
      return runningCallView({
        shownState,
        phase: state.phase,
        polls: state.polls,
        details,
        now: this.now(),
      });
    }
    const status: TaskStatus = closedTaskStatus(d.status.name);
    if (status === 'cancelled') return { status, statusMessage: 'cancelled' };
    // Its result says how it ended, or why it failed (the error's code and message).
    try {
      if (kind === 'export') {
        const s = await client.getSearchExport(id).result();
        return { status, statusMessage: `done: ${s.rows} rows in ${s.pages} pages` };
      }
      const r = await client.getCall(id).result();
      return { status, statusMessage: `done: ${r.outcome}` };
    } catch (err) {
      if (err instanceof PcdsError) return failedView(err);
      if (status === 'failed') return { status, statusMessage: d.status.name.toLowerCase() };
      throw err;
    }
  }

  /**
   * A running batch's rows held by the throttle (PcdsState throttled, a visibility count) and the
   * wait one of them shows; nothing when visibility cannot say (the task still answers).
   */
  private async throttledRows(
    client: PcdsClient,
    batchId: string,
  ): Promise<{ rows: number; wait?: PermitWaitShown } | undefined> {
    const query =
      `PcdsBatchId = "${batchId}" AND PcdsState = "throttled" AND ` +
      `ExecutionStatus = "Running" AND WorkflowType IN ("pcdsEndpointCall", "endpointCall")`;
    try {
      const { count } = await client.temporal.workflow.count(query);
      if (count === 0) return { rows: 0 };
      for await (const row of client.temporal.workflow.list({ query, pageSize: 1 })) {
        const details = await client.temporal.workflow
          .getHandle(row.workflowId)
          .query<{ currentDetails?: string }>(WORKFLOW_METADATA_QUERY)
          .then((m) => m.currentDetails)
          .catch(() => undefined);
        return { rows: count, ...(details ? { wait: permitWaitOf(details) } : {}) };
      }
      return { rows: count };
    } catch {
      return undefined;
    }
  }

  /** The start tool's result once the work ended: what its status tool says of it then. */
  async getTaskResult(taskId: string): Promise<Result> {
    const target = taskTarget(taskId);
    if (!target) throw new Error('Task not found');
    const client = await this.deps.client();
    const { kind, id } = target;
    if (kind === 'batch')
      return answerWith(async () => {
        const batch = client.getBatch(id);
        const ended = await batch.result();
        // The files the links name are written here, in the file root, from the store.
        const summary = await withShownPaths(
          (await batch.writeOutputs()) ?? ended,
          this.deps.files,
        );
        // Named as the caller named it (its own id, without its tenant).
        const shown = batch.batchId;
        const doc = { batch_id: shown, state: summary.state, summary };
        return {
          doc,
          links: [
            fileLink(summary.output, `results of batch ${shown}`),
            ...(summary.csvOutput ? [fileLink(summary.csvOutput, `CSV of batch ${shown}`)] : []),
          ],
        };
      });
    if (kind === 'export')
      return answerWith(async () => {
        const handle = client.getSearchExport(id);
        const summary = await withShownPaths(await handle.result(), this.deps.files);
        const doc = { export_id: handle.exportId, state: 'done', summary };
        return {
          doc,
          links: [fileLink(summary.output, `results of search export ${handle.exportId}`)],
        };
      });
    return answer(async () => ({
      call_id: id,
      state: 'done',
      ...(await client.getCall(id).result()),
    }));
  }

  /** Results are the workflows' own: nothing is stored beside them. */
  storeTaskResult(): Promise<void> {
    return Promise.reject(new Error('task results are the results of their workflows'));
  }

  /** `cancelled` (tasks/cancel) cancels the workflow; no other status is set from outside. */
  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    const target = taskTarget(taskId);
    if (!target) throw new Error('Task not found');
    if (status !== 'cancelled')
      throw new Error(`a task's status comes from its work, not ${status}`);
    const client = await this.deps.client();
    if (target.kind === 'batch') return client.getBatch(target.id).cancel();
    const workflow =
      target.kind === 'call'
        ? client.getCall(target.id).workflow
        : client.getSearchExport(target.id).workflow;
    await workflow.cancel();
  }

  /**
   * The caller's tasks, newest first: the work it started as tasks (its memo says so) among the
   * most recent workflows of its task queue. One page; `cursor` is not used. A memo that does not
   * open (written under a key this process lacks) is someone else's: skipped, not an error.
   */
  async listTasks(): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const client = await this.deps.client();
    const { temporal } = client;
    const types = ['pcdsEndpointCall', BATCH_WORKFLOW_TYPE, 'pcdsSearchExport'];
    const query =
      `WorkflowType IN (${types.map((t) => `"${t}"`).join(', ')}) AND ` +
      `TaskQueue = "${client.taskQueue}" AND ExecutionStatus != "ContinuedAsNew"`;
    const ids: string[] = [];
    let nextPageToken: Uint8Array | undefined;
    let scanned = 0;
    do {
      const page = await temporal.workflowService.listWorkflowExecutions({
        namespace: temporal.options.namespace,
        query,
        pageSize: 200,
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const e of page.executions ?? []) {
        if (++scanned > LIST_SCAN || ids.length >= LIST_PAGE) break;
        const id = e.execution?.workflowId;
        if (!id || ids.includes(id) || !e.memo?.fields) continue;
        const memo = await decodeMapFromPayloads(
          temporal.options.loadedDataConverter,
          e.memo.fields,
        ).catch(() => undefined);
        if (memo?.[TASK_TTL_MEMO] !== undefined && this.deps.visible(memo)) ids.push(id);
      }
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken && scanned < LIST_SCAN && ids.length < LIST_PAGE);
    const tasks: Task[] = [];
    for (const id of ids) {
      const task = await this.getTask(id);
      if (task) tasks.push(task);
    }
    return { tasks };
  }
}

const failedView = (err: PcdsError): TaskView => ({
  status: 'failed',
  statusMessage: `failed (${String(err.code)}): ${err.message}`,
});

/** A tool answer with resource links after the JSON document. */
async function answerWith(
  work: () => Promise<{ doc: Record<string, unknown>; links: CallToolResult['content'] }>,
): Promise<CallToolResult> {
  let links: CallToolResult['content'] = [];
  const r = await answer(async () => {
    const done = await work();
    links = done.links;
    return done.doc;
  });
  return r.isError ? r : { ...r, content: [...r.content, ...links] };
}
