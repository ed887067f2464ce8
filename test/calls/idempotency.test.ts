// Idempotency keys against the real dev server and the emulator: the same key with the same
// parameters gives back the one call (running or finished); with other parameters it is refused
// with idempotency_conflict, from the client and from the `start_call` tool of `pcds mcp` (driven
// by the MCP SDK's client), and nothing new is submitted. Ids and memos hold keyed HMACs only.
import { randomUUID } from 'node:crypto';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callWorkflowId, PcdsUsageError } from '../../src/client.js';
import { sampleRows } from '../../src/emulator/index.js';
import { createPcdsMcpServer } from '../../src/mcp-server/tools.js';
import { startCallEnv, withCallWorker, type CallEnv } from './call-env.js';

let env: CallEnv;
const [first, second] = sampleRows({ rows: 2 });
const ENRICH = 'POST /person/enrichment';

beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

async function refusalOf(p: Promise<unknown>): Promise<PcdsUsageError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PcdsUsageError);
  return err as PcdsUsageError;
}

describe('idempotency keys', () => {
  it('rule: the same key and parameters give the same call, running or finished; other parameters are refused with idempotency_conflict and start nothing', async () => {
    await withCallWorker(env, async (client) => {
      const key = `lead-${randomUUID()}`;
      const submits = () => env.proxy.seen(ENRICH).length;
      const before = submits();
      const a = await client.startCall(
        'person_enrichment',
        { email: first.email },
        { idempotencyKey: key },
      );
      expect(a.workflowId).toBe(callWorkflowId('person_enrichment', key));
      expect(a.workflowId).not.toContain(key);

      // While it runs.
      const again = await client.startCall(
        'person_enrichment',
        { email: first.email },
        { idempotencyKey: key },
      );
      expect(again.workflowId).toBe(a.workflowId);
      const running = await refusalOf(
        client.startCall('person_enrichment', { email: second.email }, { idempotencyKey: key }),
      );
      expect(running.code).toBe('idempotency_conflict');
      for (const value of [first.email, second.email, key])
        expect(running.message).not.toContain(value);

      // Once it finished.
      expect((await a.result()).outcome).toBe('found');
      expect(
        await client.call('person_enrichment', { email: first.email }, { idempotencyKey: key }),
      ).toMatchObject({ outcome: 'found' });
      const finished = await refusalOf(
        client.startCall('person_enrichment', { email: second.email }, { idempotencyKey: key }),
      );
      expect(finished.code).toBe('idempotency_conflict');
      // Another endpoint under the same key is another workflow id: no conflict there.
      expect(submits() - before).toBe(1);

      // The memo holds a keyed fingerprint, never a value.
      const { memo } = await a.workflow.describe();
      const memoText = JSON.stringify(memo);
      expect(memoText).toMatch(/[0-9a-f]{64}/);
      expect(memoText).not.toContain(first.email);
    });
  });

  it('rule: two starts racing under one key with different parameters: one call, the other refused', async () => {
    await withCallWorker(env, async (client) => {
      const key = `race-${randomUUID()}`;
      const results = await Promise.allSettled([
        client.startCall('person_enrichment', { email: first.email }, { idempotencyKey: key }),
        client.startCall('person_enrichment', { email: second.email }, { idempotencyKey: key }),
      ]);
      const started = results.filter((r) => r.status === 'fulfilled');
      expect(started).toHaveLength(1);
      expect((await started[0].value.result()).outcome).toBe('found');
      const rejected = results.filter((r) => r.status === 'rejected');
      expect(rejected).toHaveLength(1);
      expect(rejected[0].reason).toMatchObject({
        code: 'idempotency_conflict',
      });
    });
  });

  it('rule: a person search under a reused key with another query is refused too', async () => {
    await withCallWorker(env, async (client) => {
      const key = `search-${randomUUID()}`;
      const found = await client.searchPeople(
        { query: 'engineer' },
        { maxResults: 3, idempotencyKey: key },
      );
      expect(
        await client.searchPeople({ query: 'engineer' }, { maxResults: 3, idempotencyKey: key }),
      ).toEqual(found);
      const refused = await refusalOf(
        client.searchPeople({ query: 'designer' }, { maxResults: 3, idempotencyKey: key }),
      );
      expect(refused.code).toBe('idempotency_conflict');
      expect(refused.message).not.toContain('designer');
    });
  });

  it('rule: the start_call tool answers a reused key with other parameters with the idempotency_conflict code, no values', async () => {
    await withCallWorker(env, async (pcds) => {
      const server = createPcdsMcpServer({
        version: '0.1.0',
        client: () => Promise.resolve(pcds),
        usage: () => Promise.reject(new Error('not used')),
      });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const assistant = new McpClient({ name: 'test-assistant', version: '1.0.0' });
      await assistant.connect(clientSide);
      try {
        const key = `mcp-${randomUUID()}`;
        const start = async (email: string) => {
          const r = await assistant.callTool({
            name: 'start_call',
            arguments: { endpoint: 'person_enrichment', params: { email }, idempotency_key: key },
          });
          const text = (r.content as { text: string }[])[0].text;
          return {
            doc: JSON.parse(text) as Record<string, any>,
            text,
            isError: r.isError === true,
          };
        };
        const a = await start(first.email);
        expect(a.isError).toBe(false);
        const b = await start(first.email);
        expect(b.doc.call_id).toBe(a.doc.call_id);
        const c = await start(second.email);
        expect(c.isError).toBe(true);
        expect(c.doc.error.code).toBe('idempotency_conflict');
        for (const value of [first.email, second.email, key]) expect(c.text).not.toContain(value);
        expect((await pcds.getCall(a.doc.call_id).result()).outcome).toBe('found');
      } finally {
        await assistant.close();
        await server.close();
      }
    });
  });
});
