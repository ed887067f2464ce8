// A person_search call reads the page its POST asked for (GET request_id + the same offset and
// limit), returns the paging fields with the rows, and can be continued until has_more is false:
// through the client's call (HTTP and MCP transports), searchPeople and the `pcds mcp` tools,
// each compared with what the emulator itself answers over HTTP for the same page.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPcdsMcpHttp } from '../../src/mcp-server/http.js';
import { createPcdsMcpServer } from '../../src/mcp-server/tools.js';
import type { CallSuccess } from '../../src/client.js';
import { startCallEnv, withCallWorker, type CallEnv } from './call-env.js';

const QUERY = 'data engineers in Berlin';

let env: CallEnv;
beforeAll(async () => {
  env = await startCallEnv();
});
afterAll(async () => {
  await env?.stop();
});

type Data = Record<string, unknown> & { results?: unknown[]; has_more?: boolean; total?: number };

/** The emulator's own answer for one page of a fresh search: POST, then GET until completed. */
async function emulatorPage(offset: number, limit: number): Promise<Data> {
  const { key, secret } = env.emulator.devKey;
  const headers = { 'content-type': 'application/json', 'x-api-key': key, 'x-api-secret': secret };
  const posted = (await (
    await fetch(`${env.emulator.url}/person/search`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ query: QUERY, limit, offset }),
    })
  ).json()) as { data: { request_id: string } };
  const id = posted.data.request_id;
  for (const deadline = Date.now() + 20_000; Date.now() < deadline;) {
    const got = (await (
      await fetch(
        `${env.emulator.url}/person/search?request_id=${id}&offset=${offset}&limit=${limit}`,
        { headers },
      )
    ).json()) as { data: Data & { completed?: boolean } };
    if (got.data.completed) return got.data;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the emulator never completed the search');
}

const rowsOf = (o: CallSuccess) => (o.outcome === 'found' ? (o.result as unknown[]) : []);

describe('person_search through a call', () => {
  it('rule: offset 20 limit 5, page 2 and offset 20 with force_new read their own page, not offset 0, with the paging fields', async () => {
    const [at0, at20, at5] = await Promise.all([
      emulatorPage(0, 5),
      emulatorPage(20, 5),
      emulatorPage(5, 5),
    ]);
    expect(at20.results).toHaveLength(5);
    expect(at20.results).not.toEqual(at0.results);
    await withCallWorker(env, async (client) => {
      const byOffset = await client.call('person_search', { query: QUERY, limit: 5, offset: 20 });
      expect(rowsOf(byOffset)).toEqual(at20.results);
      expect(byOffset.outcome === 'found' && byOffset.page).toEqual({
        offset: 20,
        limit: 5,
        has_more: true,
        next_cursor: expect.any(String) as string,
        next_offset: 25,
        total: at20.total,
      });

      const byPage = await client.call('person_search', { query: QUERY, limit: 5, page: 2 });
      expect(rowsOf(byPage)).toEqual(at5.results);
      expect(byPage.outcome === 'found' && byPage.page).toMatchObject({ offset: 5, limit: 5 });

      const fresh = await client.call('person_search', {
        query: QUERY,
        limit: 5,
        offset: 20,
        force_new: true,
      });
      expect(rowsOf(fresh)).toEqual(at20.results);
      expect(fresh.requestId).not.toBe(byOffset.requestId);

      // A cursor names no page the call could read back: refused before anything starts.
      await expect(
        client.call('person_search', {
          cursor: String(byOffset.outcome === 'found' && byOffset.page?.next_cursor),
        }),
      ).rejects.toMatchObject({ code: 'invalid_params' });
    });
  });

  it('rule: continuing with request_id and next_offset until has_more is false yields every row once', async () => {
    const all = await emulatorPage(0, 100);
    expect(all.has_more).toBe(false);
    await withCallWorker(env, async (client) => {
      const rows: unknown[] = [];
      let outcome = await client.call('person_search', { query: QUERY, limit: 5 });
      let pages = 1;
      for (;;) {
        rows.push(...rowsOf(outcome));
        const page = outcome.outcome === 'found' ? outcome.page : undefined;
        expect(page).toBeDefined();
        if (!page!.has_more) {
          expect(page!.next_cursor).toBeNull();
          break;
        }
        // The next page of the same search: a page POST with request_id, offset and limit.
        outcome = await client.call('person_search', {
          request_id: outcome.requestId,
          offset: page!.next_offset,
          limit: page!.limit,
        });
        pages += 1;
        expect(pages).toBeLessThanOrEqual(10);
      }
      expect(rows).toEqual(all.results);
      expect(new Set(rows.map((r) => JSON.stringify(r))).size).toBe(all.results!.length);
    });
  });

  it('rule: over the MCP transport a call with offset 20 returns the rows of offset 20 and the paging fields', async () => {
    const at20 = await emulatorPage(20, 5);
    await withCallWorker(env, async (client) => {
      const o = await client.call(
        'person_search',
        { query: QUERY, limit: 5, offset: 20 },
        { transport: 'mcp' },
      );
      expect(rowsOf(o)).toEqual(at20.results);
      expect(o.outcome === 'found' && o.page).toMatchObject({
        offset: 20,
        limit: 5,
        has_more: true,
        next_offset: 25,
      });
    });
  });

  it('rule: searchPeople starts at the offset given and says where to continue', async () => {
    const [at20, at25] = await Promise.all([emulatorPage(20, 5), emulatorPage(25, 5)]);
    await withCallWorker(env, async (client) => {
      const first = await client.searchPeople(
        { query: QUERY, offset: 20 },
        { maxResults: 5, pageSize: 5 },
      );
      expect(first.rows).toEqual(at20.results);
      expect(first).toMatchObject({ offset: 20, hasMore: true, nextOffset: 25 });
      expect(typeof first.nextCursor).toBe('string');
      const rest = await client.searchPeople(
        { query: QUERY, offset: first.nextOffset },
        { maxResults: 100, pageSize: 5 },
      );
      expect(rest.rows).toEqual(at25.results);
      expect(rest).toMatchObject({ offset: 25, hasMore: false, stoppedBy: 'no_more' });
      expect(rest.nextOffset).toBeUndefined();
    });
  });

  const MCP_TOKEN = 'pcds-mcp-paging-token-0123456789abcdef';

  it('rule: the pcds mcp tools start_call and call_status return the page asked for with its paging fields', async () => {
    const at20 = await emulatorPage(20, 5);
    await withCallWorker(env, async (pcds) => {
      const http = await startPcdsMcpHttp(
        () =>
          createPcdsMcpServer({
            version: '0.1.0',
            client: () => Promise.resolve(pcds),
            usage: (q, keyId) => env.clients.get(keyId).usage(q),
          }),
        { port: 0, tokens: [{ id: 'default', token: MCP_TOKEN }] },
      );
      const client = new Client({ name: 'test-assistant', version: '1.0.0' });
      try {
        await client.connect(
          new StreamableHTTPClientTransport(new URL(http.url), {
            requestInit: { headers: { authorization: `Bearer ${MCP_TOKEN}` } },
          }),
        );
        const text = async (name: string, args: Record<string, unknown>) => {
          const r = await client.callTool({ name, arguments: args });
          return JSON.parse((r.content as { text: string }[])[0].text) as Record<string, any>;
        };
        const started = await text('start_call', {
          endpoint: 'person_search',
          params: { query: QUERY, limit: 5, offset: 20 },
        });
        let status: Record<string, any>;
        for (const deadline = Date.now() + 30_000; ;) {
          status = await text('call_status', { call_id: started.call_id });
          if (status.state !== 'running' || Date.now() > deadline) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(status).toMatchObject({ state: 'done', outcome: 'found' });
        expect(status.result).toEqual(at20.results);
        expect(status.page).toMatchObject({
          offset: 20,
          limit: 5,
          has_more: true,
          next_offset: 25,
        });
        expect(typeof status.page.next_cursor).toBe('string');
      } finally {
        await client.close();
        await http.close();
      }
    });
  });
});
