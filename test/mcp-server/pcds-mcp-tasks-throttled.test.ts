// Calls started as MCP tasks while the shared throttle holds them back: tasks/get says they are
// throttled and why (the call's current details), and asks to be polled when the permit is due.
// A real worker on the throttle of a rate-limited emulator key, the server in-process over HTTP.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type GetTaskResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { startPcdsMcpHttp } from '../../src/mcp-server/http.js';
import { POLL_MS } from '../../src/mcp-server/task-status.js';
import { createPcdsMcpServer } from '../../src/mcp-server/tools.js';
import { tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import { uniqueTaskQueue } from '../harness/temporal.js';
import {
  emails,
  pcdsClient,
  startLimitedEmulator,
  throttledConfig,
  withThrottledWorker,
} from '../throttle/env.js';

/** 20 times faster than the service: a "minute" of 3 s. */
const SCALE = 20;
const LIMITS = { perMinute: 4, perHour: 400 };
const TOKEN = 'pcds-mcp-tasks-throttled-0123456789abcdef';
const dir = tempDir('pcds-mcp-tasks-throttled');
const input = writeCsv(
  dir,
  'people.csv',
  emails(10).map((email) => ({ email })),
  ['email'],
);

let emulator: RunningEmulator;
beforeAll(async () => {
  emulator = await startLimitedEmulator(LIMITS, SCALE);
});
afterAll(async () => {
  await emulator?.stop();
});

describe('pcds mcp tasks under the throttle', () => {
  it('rule: a call task held back by the throttle reports throttled, the wait and its reason, and a poll interval until the permit (2-60 s); a batch task counts its throttled rows with one’s wait', async () => {
    const taskQueue = uniqueTaskQueue('mcp-task-throttled');
    const keyId = `key-${taskQueue}`;
    const config = throttledConfig(emulator, LIMITS, keyId, SCALE);
    await withThrottledWorker(config, taskQueue, async () => {
      const { client: pcds, close } = await pcdsClient(taskQueue, {
        pollIntervalMs: 100,
        maxWaitMs: 120_000,
      });
      const http = await startPcdsMcpHttp(
        () =>
          createPcdsMcpServer({
            version: '0.1.0',
            client: () => Promise.resolve(pcds),
            files: dir,
            usage: () => Promise.reject(new Error('not needed')),
          }),
        { port: 0, tokens: [{ id: 'default', token: TOKEN }] },
      );
      const client = new Client({ name: 'test-assistant', version: '1.0.0' });
      try {
        await client.connect(
          new StreamableHTTPClientTransport(new URL(http.url), {
            requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
          }),
        );
        const taskIds: string[] = [];
        for (const email of emails(10)) {
          const stream = client.experimental.tasks.callToolStream(
            { name: 'start_call', arguments: { endpoint: 'person_enrichment', params: { email } } },
            CallToolResultSchema,
            { task: {} },
          );
          const first = await stream.next();
          await stream.return(undefined);
          if (first.done || first.value.type !== 'taskCreated') throw new Error('no task');
          taskIds.push(first.value.task.taskId);
        }
        let throttled: GetTaskResult | undefined;
        await expect
          .poll(
            async () => {
              for (const id of taskIds) {
                const t = await client.experimental.tasks.getTask(id);
                if (t.status === 'working' && t.statusMessage?.startsWith('throttled: ')) {
                  throttled = t;
                  return true;
                }
              }
              return false;
            },
            { timeout: 30_000, interval: 100 },
          )
          .toBe(true);
        expect(throttled!.statusMessage).toMatch(
          new RegExp(
            `^throttled: (submit|poll) waits for a permit on key ${keyId}: ` +
              `(the key's (minute|hour) window is full|the key is closed after a 429), until about `,
          ),
        );
        expect(throttled!.pollInterval).toBeGreaterThanOrEqual(POLL_MS.min);
        expect(throttled!.pollInterval).toBeLessThanOrEqual(POLL_MS.max);
        // Every call still ends found, and its task completed.
        for (const h of taskIds) await pcds.getCall(h).result();
        for (const id of taskIds)
          expect((await client.experimental.tasks.getTask(id)).status).toBe('completed');

        // A batch of as many rows, all in flight at once: its task counts the held rows.
        const batchId = uniqueBatchId('taskthrottled');
        const stream = client.experimental.tasks.callToolStream(
          {
            name: 'start_batch',
            arguments: {
              input,
              output: `${batchId}.jsonl`,
              batch_id: batchId,
              window: 10,
              key_ids: [keyId],
            },
          },
          CallToolResultSchema,
          { task: {} },
        );
        const first = await stream.next();
        await stream.return(undefined);
        if (first.done || first.value.type !== 'taskCreated') throw new Error('no task');
        const batchTask = first.value.task.taskId;
        let held: GetTaskResult | undefined;
        await expect
          .poll(
            async () => {
              held = await client.experimental.tasks.getTask(batchTask);
              return held.statusMessage ?? '';
            },
            { timeout: 30_000, interval: 200 },
          )
          .toMatch(
            new RegExp(
              `; \\d+ rows? throttled: (submit|poll) waits for a permit on key ${keyId}: ` +
                `(the key's (minute|hour) window is full|the key is closed after a 429), until about `,
            ),
          );
        expect(held!.status).toBe('working');
        expect(held!.pollInterval).toBeGreaterThanOrEqual(POLL_MS.min);
        expect(held!.pollInterval).toBeLessThanOrEqual(POLL_MS.max);
        const result = await client.experimental.tasks.getTaskResult(
          batchTask,
          CallToolResultSchema,
          { timeout: 120_000 },
        );
        expect(result.structuredContent).toMatchObject({ state: 'done', summary: { done: 10 } });
      } finally {
        await client.close();
        await http.close();
        await close();
      }
    });
  });
});
