// `pcds mcp`'s tools when no worker polls the task queue: the start tools start the work and say
// so, and the status tools answer at once (what a batch last published, a call's warning)
// instead of waiting for a worker.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { expect, it } from 'vitest';
import { createPcdsClient } from '../../src/client.js';
import { startPcdsMcpHttp } from '../../src/mcp-server/http.js';
import { createPcdsMcpServer } from '../../src/mcp-server/tools.js';
import { noWorkerMessage } from '../../src/temporal/pollers.js';
import { tempDir, uniqueBatchId, writeCsv } from '../batch/fixtures.js';
import {
  connectClient,
  testDataConverter,
  testNamespace,
  uniqueTaskQueue,
} from '../harness/temporal.js';

/** A generous bound for "at once" on a loaded machine: a check, not a benchmark. */
const SOON_MS = 20_000;
const dir = tempDir('mcp-no-worker');
const TOKEN = 'pcds-mcp-no-worker-token-0123456789abcdef';

it('rule: with no worker, start tools warn and status tools answer within seconds', async () => {
  const taskQueue = uniqueTaskQueue('mcp-noworker');
  const { connection } = await connectClient();
  const pcds = await createPcdsClient({
    connection,
    namespace: testNamespace(),
    taskQueue,
    dataConverter: testDataConverter(),
  });
  const http = await startPcdsMcpHttp(
    () =>
      createPcdsMcpServer({
        version: '0.1.0',
        files: dir,
        client: () => Promise.resolve(pcds),
        usage: () => Promise.resolve({}),
      }),
    { port: 0, tokens: [{ id: 'default', token: TOKEN }] },
  );
  const mcp = new Client({ name: 'test-assistant', version: '1.0.0' });
  const started: string[] = [];
  const tool = async (name: string, args: Record<string, unknown>) => {
    const began = Date.now();
    const r = await mcp.callTool({ name, arguments: args });
    expect(Date.now() - began).toBeLessThan(SOON_MS);
    expect(r.isError).not.toBe(true);
    return JSON.parse((r.content as { text: string }[])[0].text) as Record<string, any>;
  };
  const warning = `${noWorkerMessage(taskQueue)}; it runs when one does`;
  try {
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(http.url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    const call = await tool('start_call', {
      endpoint: 'person_enrichment',
      params: { email: 'someone@example.com' },
    });
    started.push(call.call_id as string);
    expect(call).toMatchObject({ state: 'running', warning });
    expect(await tool('call_status', { call_id: call.call_id })).toEqual({
      call_id: call.call_id,
      state: 'running',
      warning,
    });

    const batchId = uniqueBatchId('mcp-noworker');
    const input = writeCsv(dir, 'in.csv', [{ email: 'someone@example.com' }], ['email']);
    const batch = await tool('start_batch', {
      input,
      output: `${dir}/out.jsonl`,
      batch_id: batchId,
    });
    started.push(`batch-${batchId}`);
    expect(batch).toEqual({ batch_id: batchId, state: 'running', warning });
    const status = await tool('batch_status', { batch_id: batchId });
    expect(status).toMatchObject({
      batch_id: batchId,
      state: 'running',
      last_published: {
        batchId,
        taskQueue,
        summary: 'batch of 1 person_enrichment rows',
        reason: noWorkerMessage(taskQueue),
      },
    });
  } finally {
    await mcp.close();
    await http.close();
    for (const id of started)
      await pcds.temporal.workflow
        .getHandle(id)
        .terminate('test over')
        .catch(() => undefined);
    await pcds.close();
    await connection.close();
  }
}, 90_000);
