// The start tools of the built `pcds mcp --transport http` as MCP tasks, driven by the official
// SDK client's task API: the task is the workflow, so it follows the work across a restart of
// `pcds mcp`, cancels it, and stays the caller's own. A real worker runs the work against the
// emulator on the dev server.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type GetTaskResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRows } from '../../src/emulator/index.js';
import { tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import { startCallEnv, withCallWorker, type CallEnv } from '../calls/call-env.js';
import { temporalAddress, testNamespace } from '../harness/temporal.js';
import { mcpServiceEnv, startMcp as startMcpProcess, type McpProcess } from './mcp-http.js';
const ALICE = 'alice-token-0123456789abcdef0123456789';
const BOB = 'bob-token-0123456789abcdef0123456789ab';

let env: CallEnv;
const dir = tempDir('pcds-mcp-tasks');
const rows = sampleRows({ rows: 5, withName: true });
const input = writeCsv(dir, 'people.csv', rows as unknown as Record<string, string>[], [
  'email',
  'name',
]);
// A batch that usually outlasts a restart of `pcds mcp`: 16 rows, one at a time.
const longRows = sampleRows({ rows: 16, withName: true });
const longInput = writeCsv(
  dir,
  'people-long.csv',
  longRows as unknown as Record<string, string>[],
  ['email', 'name'],
);
for (const who of ['alice', 'bob']) {
  mkdirSync(join(dir, who), { recursive: true, mode: 0o700 });
  copyFileSync(input, join(dir, who, 'people.csv'));
  copyFileSync(longInput, join(dir, who, 'people-long.csv'));
}

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

/** The built `pcds mcp --transport http` on a free port, Alice's and Bob's tokens. */
const startMcp = (taskQueue: string): Promise<McpProcess> =>
  startMcpProcess({
    ...mcpServiceEnv(env.emulator, dir),
    // The tasks' batches run their rows (the result cache would answer them at once).
    PCDS_CACHE: 'off',
    PCDS_MCP_TOKENS: `alice:${ALICE},bob:${BOB}`,
    PCDS_TEMPORAL_ADDRESS: temporalAddress(),
    PCDS_TEMPORAL_NAMESPACE: testNamespace(),
    PCDS_TASK_QUEUE: taskQueue,
  });

async function sdkClient(url: URL, token: string): Promise<Client> {
  const client = new Client(
    { name: 'test-assistant', version: '1.0.0' },
    { capabilities: { tasks: { list: {}, cancel: {} } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}

type Doc = Record<string, any>;
const structured = (r: object) => (r as { structuredContent?: unknown }).structuredContent as Doc;

/** Creates a task with the SDK's task API; resolves with the task as soon as it exists. */
async function startTask(client: Client, name: string, args: Record<string, unknown>) {
  const stream = client.experimental.tasks.callToolStream(
    { name, arguments: args },
    CallToolResultSchema,
    { task: { ttl: 3_600_000 } },
  );
  const first = await stream.next();
  await stream.return(undefined);
  if (first.done || first.value.type !== 'taskCreated')
    throw new Error(`no task: ${JSON.stringify(first.value)}`);
  return first.value.task;
}

/** tasks/get until `done` holds (the statuses seen on the way). */
async function taskUntil(client: Client, taskId: string, done: (t: GetTaskResult) => boolean) {
  const seen: GetTaskResult[] = [];
  const deadline = Date.now() + 60_000;
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId);
    seen.push(task);
    if (done(task)) return seen;
    if (Date.now() > deadline) throw new Error(`task never settled: ${JSON.stringify(task)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function tool(client: Client, name: string, args: Record<string, unknown>) {
  return structured(await client.callTool({ name, arguments: args }));
}

describe('pcds mcp tasks', () => {
  it('rule: a task-augmented start_batch returns its task at once (the workflow id), tasks/get goes from working with the rows done to completed, tasks/result gives the summary and a link to the output; without a task, start_batch answers as before', async () => {
    await withCallWorker(env, async (_pcds, taskQueue) => {
      const mcp = await startMcp(taskQueue);
      const alice = await sdkClient(mcp.url, ALICE);
      try {
        const tools = (await alice.listTools()).tools;
        const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport]));
        expect(support).toMatchObject({
          start_call: 'optional',
          start_batch: 'optional',
          start_search_export: 'optional',
        });
        expect(support.batch_status).toBe('forbidden');

        const batchId = uniqueBatchId('task');
        const startedAt = Date.now();
        const task = await startTask(alice, 'start_batch', {
          input: 'people.csv',
          output: `${batchId}.jsonl`,
          batch_id: batchId,
          window: 1,
          key_ids: [env.emulator.devKey.id],
        });
        // At once: a batch of five rows at ~1.5 s each takes far longer.
        expect(Date.now() - startedAt).toBeLessThan(5_000);
        // The task is the batch's workflow, under the caller's own (tenant-scoped) id.
        expect(task).toMatchObject({
          taskId: `batch-alice.${batchId}`,
          status: 'working',
          ttl: 3_600_000,
        });
        expect(task.pollInterval).toBeGreaterThanOrEqual(2_000);

        const seen = await taskUntil(alice, task.taskId, (t) => t.status !== 'working');
        expect(seen.at(-1)!.status).toBe('completed');
        expect(seen.at(-1)!.statusMessage).toMatch(/^done: rows 5 of 5 done \(5 found/);
        const progress = seen
          .filter((t) => t.status === 'working')
          .map((t) => t.statusMessage ?? '');
        expect(progress.some((m) => /rows [0-4] of 5 done/.test(m))).toBe(true);
        for (const t of seen.filter((s) => s.status === 'working'))
          expect(t.pollInterval).toBeGreaterThanOrEqual(2_000);

        const result = await alice.experimental.tasks.getTaskResult(
          task.taskId,
          CallToolResultSchema,
        );
        expect(result.isError).toBeFalsy();
        expect(structured(result)).toMatchObject({
          batch_id: batchId,
          state: 'done',
          summary: { total: 5, done: 5, found: 5 },
        });
        expect(result.content).toContainEqual(
          expect.objectContaining({
            type: 'resource_link',
            // Named in the caller's file root, never by the server's absolute path.
            uri: `pcds-files:${batchId}.jsonl`,
          }),
        );
        expect(JSON.stringify(result)).not.toContain(dir);

        // The same tool without a task: the id at once, as before.
        const plainId = uniqueBatchId('plain');
        const plain = await alice.callTool({
          name: 'start_batch',
          arguments: { input: 'people.csv', output: `${plainId}.jsonl`, batch_id: plainId },
        });
        expect(structured(plain)).toEqual({ batch_id: plainId, state: 'running' });
        // A refused start is no task: a JSON-RPC error naming the code.
        await expect(
          startTask(alice, 'start_batch', { input: '../people.csv', output: 'x.jsonl' }),
        ).rejects.toThrow(/path_not_allowed/);
        await tool(alice, 'cancel_batch', { batch_id: plainId });
      } finally {
        await alice.close();
        await mcp.kill();
      }
    });
  });

  it('rule: a call and a search export run as tasks to their results through callToolStream', async () => {
    await withCallWorker(env, async (_pcds, taskQueue) => {
      const mcp = await startMcp(taskQueue);
      const alice = await sdkClient(mcp.url, ALICE);
      try {
        const kinds: string[] = [];
        let last: Doc | undefined;
        for await (const m of alice.experimental.tasks.callToolStream(
          {
            name: 'start_call',
            arguments: { endpoint: 'person_enrichment', params: { email: rows[0].email } },
          },
          CallToolResultSchema,
          { task: {} },
        )) {
          kinds.push(m.type);
          if (m.type === 'result') last = structured(m.result);
          if (m.type === 'error') throw m.error;
        }
        expect(kinds[0]).toBe('taskCreated');
        expect(kinds.at(-1)).toBe('result');
        expect(last).toMatchObject({ state: 'done', outcome: 'found' });
        expect(last!.call_id).toMatch(/^call-person_enrichment-/);

        const exportId = uniqueBatchId('taskexport');
        const task = await startTask(alice, 'start_search_export', {
          params: { query: 'engineer' },
          max_results: 7,
          page_size: 5,
          output: `${exportId}.jsonl`,
          export_id: exportId,
        });
        expect(task.taskId).toBe(`search-export-alice.${exportId}`);
        const result = await alice.experimental.tasks.getTaskResult(
          task.taskId,
          CallToolResultSchema,
        );
        expect(structured(result)).toMatchObject({ export_id: exportId, summary: { rows: 7 } });
        expect((await alice.experimental.tasks.getTask(task.taskId)).status).toBe('completed');
      } finally {
        await alice.close();
        await mcp.kill();
      }
    });
  });

  it('rule: tasks/cancel cancels the batch’s workflow (its summary says cancelled); a second token can neither see, list nor cancel the first one’s task', async () => {
    await withCallWorker(env, async (pcds, taskQueue) => {
      const mcp = await startMcp(taskQueue);
      const alice = await sdkClient(mcp.url, ALICE);
      const bob = await sdkClient(mcp.url, BOB);
      try {
        const batchId = uniqueBatchId('taskcancel');
        const task = await startTask(alice, 'start_batch', {
          input: 'people.csv',
          output: `${batchId}.jsonl`,
          batch_id: batchId,
          window: 1,
          key_ids: [env.emulator.devKey.id],
        });
        expect((await alice.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(
          task.taskId,
        );

        // Bob: the same answers as for an id that names nothing.
        const unknown = `batch-${uniqueBatchId('none')}`;
        for (const id of [task.taskId, unknown]) {
          await expect(bob.experimental.tasks.getTask(id)).rejects.toThrow(/not found/i);
          await expect(bob.experimental.tasks.cancelTask(id)).rejects.toThrow(/not found/i);
          await expect(
            bob.experimental.tasks.getTaskResult(id, CallToolResultSchema),
          ).rejects.toThrow(/not found/i);
        }
        expect((await bob.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).not.toContain(
          task.taskId,
        );
        // Mid-batch: a row written, others still to come.
        await taskUntil(alice, task.taskId, (t) =>
          /rows [1-4] of 5 done/.test(t.statusMessage ?? ''),
        );

        const cancelled = await alice.experimental.tasks.cancelTask(task.taskId);
        expect(cancelled.status).toBe('cancelled');
        // Alice's batch, as the operator names it: her tenant's id.
        const summary = await pcds.getBatch(`alice.${batchId}`).result();
        expect(summary.state).toBe('cancelled');
        expect(summary.done).toBeGreaterThanOrEqual(1);
        expect(summary.done).toBeLessThan(5);
        // What finished is written, as when cancel_batch cancels it.
        const lines = readFileSync(join(dir, 'alice', `${batchId}.jsonl`), 'utf8')
          .trim()
          .split('\n');
        expect(lines.length).toBeGreaterThanOrEqual(1);
        const result = await alice.experimental.tasks.getTaskResult(
          task.taskId,
          CallToolResultSchema,
        );
        expect(structured(result)).toMatchObject({ batch_id: batchId, state: 'cancelled' });
        expect((await alice.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');
      } finally {
        await alice.close();
        await bob.close();
        await mcp.kill();
      }
    });
  });

  it('rule: `pcds mcp` killed mid-task and started again: the client gets the task and its result from the new process', async () => {
    await withCallWorker(env, async (_pcds, taskQueue) => {
      const first = await startMcp(taskQueue);
      const batchId = uniqueBatchId('taskrestart');
      let taskId: string;
      const before = await sdkClient(first.url, ALICE);
      try {
        const task = await startTask(before, 'start_batch', {
          input: 'people-long.csv',
          output: `${batchId}.jsonl`,
          batch_id: batchId,
          window: 1,
          key_ids: [env.emulator.devKey.id],
        });
        taskId = task.taskId;
      } finally {
        await before.close();
        await first.kill('SIGKILL');
      }

      const second = await startMcp(taskQueue);
      const after = await sdkClient(second.url, ALICE);
      try {
        // Usually still working; on a loaded machine the batch may end before the new process
        // is up. Either way the new process knows the task and gives its result.
        const now = await after.experimental.tasks.getTask(taskId);
        expect(['working', 'completed']).toContain(now.status);
        expect((await after.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(
          taskId,
        );
        // tasks/result waits for the end, then gives the summary.
        const result = await after.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, {
          timeout: 60_000,
        });
        expect(structured(result)).toMatchObject({
          batch_id: batchId,
          state: 'done',
          summary: { total: 16, done: 16 },
        });
      } finally {
        await after.close();
        await second.kill();
      }
    });
  }, 120_000);
});
