import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_DATA_TOOLS } from '../../src/contract/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { start } from './helpers.js';
import { knownSubjects, mcp } from './mcp-helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

describe('MCP endpoint: JSON-RPC and discovery', () => {
  it('rule: initialize reports protocol version 2025-06-18, server version 0.1.0 and listChanged false for prompts, resources and tools', async () => {
    for (const path of ['/mcp', '/mcp/message']) {
      const r = await mcp(em, em.devKey, path).request('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'test', version: '1' },
      });
      expect(r.status, path).toBe(200);
      expect(r.body.jsonrpc).toBe('2.0');
      expect(r.body.id).toBe(1);
      expect(r.body.result.protocolVersion).toBe('2025-06-18');
      expect(r.body.result.serverInfo.version).toBe('0.1.0');
      expect(r.body.result.capabilities).toEqual({
        prompts: { listChanged: false },
        resources: { listChanged: false },
        tools: { listChanged: false },
      });
    }
    const lists = mcp(em);
    expect((await lists.request('resources/list')).body.result).toEqual({ resources: [] });
    expect((await lists.request('prompts/list')).body.result).toEqual({ prompts: [] });
  });

  it('rule: tools/list names the seven tools and check_status, with exactly the arguments the interface allows', async () => {
    const r = await mcp(em).request('tools/list');
    const tools = r.body.result.tools as any[];
    expect(tools.map((t) => t.name)).toEqual([...MCP_DATA_TOOLS, 'check_status']);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe('object');
      expect(t.inputSchema.additionalProperties, t.name).toBe(false);
      expect(t.annotations).toEqual({ readOnlyHint: true, idempotentHint: true });
    }
    const search = Object.keys(byName.person_search.inputSchema.properties);
    expect(search).toContain('query');
    expect(search).toContain('show_emails');
    expect(search).not.toContain('type');
    expect(search).not.toContain('high_freshness');
    const enrichment = Object.keys(byName.person_enrichment.inputSchema.properties);
    expect(enrichment).toContain('email');
    expect(enrichment).not.toContain('lookup_mode');
    expect(byName.check_status.inputSchema.required).toEqual(['request_id']);
    // Presence rules, formats and defaults are stated, not only enforced.
    const ask = byName.person_ask.inputSchema;
    expect(ask.required).toEqual(['question']);
    expect(ask.anyOf).toEqual([
      { required: ['email'] },
      { required: ['phone'] },
      { required: ['social_media_url'] },
      { required: ['linkedin_url'] },
    ]);
    expect(ask.properties.email.format).toBe('email');
    expect(ask.properties.social_media_url.format).toBe('uri');
    expect(byName.person_search.inputSchema.anyOf).toContainEqual({ required: ['keywords'] });
    expect(byName.person_search.inputSchema.properties.limit).toMatchObject({
      minimum: 1,
      maximum: 100,
      default: 10,
    });
    const feed = byName.person_newsfeed.inputSchema;
    expect(feed.anyOf).toEqual([
      { required: ['social_media_url'] },
      { required: ['linkedin_url'] },
    ]);
    expect(feed.properties.posts_after.format).toBe('date');
    expect(feed.properties.callback_url.format).toBe('uri');
    expect(byName.check_status.inputSchema.properties.endpoint.enum).toEqual([...MCP_DATA_TOOLS]);
  });

  it('rule: no tool accepts an argument outside its list (unknown ones, and type, high_freshness or lookup_mode), and nothing is submitted', async () => {
    const { email, linkedin, company } = knownSubjects(em);
    const valid: Record<string, Record<string, unknown>> = {
      person_search: { query: 'engineer' },
      person_enrichment: { email },
      person_lookup_fields: { email },
      person_newsfeed: { social_media_url: linkedin },
      person_ask: { question: 'Where does this person work?', email },
      company_search: { industry: company.industry },
      company_enrichment: { domain: company.domain },
      check_status: { request_id: 'abc_1_1' },
    };
    const before = em.stats().jobsSubmitted;
    const client = mcp(em);
    for (const [tool, args] of Object.entries(valid)) {
      const r = await client.call(tool, { ...args, verbose: true });
      expect(r.body.error?.code, tool).toBe(-32602);
      expect(r.body.error.message, tool).toContain('verbose');
    }
    for (const [tool, extra] of [
      ['person_search', { type: 'light' }],
      ['person_search', { high_freshness: true }],
      ['person_enrichment', { lookup_mode: 'fast' }],
    ] as const) {
      const r = await client.call(tool, { ...valid[tool], ...extra });
      expect(r.body.error?.code, `${tool} ${Object.keys(extra)[0]}`).toBe(-32602);
      expect(r.body.error.message).toContain(Object.keys(extra)[0]);
    }
    expect(em.stats().jobsSubmitted).toBe(before);
  });

  it('rule: discovery (GET /mcp with a date-shaped version, /.well-known/*) works without credentials; tools/call, check_status and GET /mcp/status do not', async () => {
    const manifest = await fetch(`${em.url}/mcp`);
    expect(manifest.status).toBe(200);
    const m = (await manifest.json()) as any;
    expect(m.version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(m.tools.map((t: any) => t.name)).toEqual([...MCP_DATA_TOOLS, 'check_status']);

    const wk = (await (await fetch(`${em.url}/.well-known/mcp`)).json()) as any;
    expect(wk.endpoints.message).toBe(`${em.url}/mcp`);
    const as = (await (
      await fetch(`${em.url}/.well-known/oauth-authorization-server`)
    ).json()) as any;
    expect(as.authorization_endpoint).toBe(`${em.url}/mcp/oauth/authorize`);
    expect(as.token_endpoint).toBe(`${em.url}/mcp/oauth/token`);
    expect(as.scopes_supported).toEqual(['svc.read', 'svc.search', 'svc.answer']);
    expect(as.code_challenge_methods_supported).toEqual(['S256']);
    const pr = (await (
      await fetch(`${em.url}/.well-known/oauth-protected-resource`)
    ).json()) as any;
    expect(pr.resource).toBe(`${em.url}/mcp`);
    expect(pr.authorization_servers).toEqual([em.url]);

    const anonymous = mcp(em, null);
    const init = {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'test', version: '1' },
    };
    expect((await anonymous.request('initialize', init)).body.result.protocolVersion).toBe(
      '2025-06-18',
    );
    expect((await anonymous.request('tools/list')).body.result.tools).toHaveLength(8);
    // Refusals are HTTP 401 with the challenge an OAuth client follows, the JSON-RPC error inside.
    const call = await anonymous.call('person_search', { query: 'engineer' });
    expect(call.status).toBe(401);
    expect(call.body.error.code).toBe(-32001);
    expect(call.body.error.data.code).toBe('missing_credentials');
    const challenge = `Bearer error="invalid_token", resource_metadata="${em.url}/.well-known/oauth-protected-resource"`;
    expect(call.headers.get('www-authenticate')).toBe(challenge);
    const status = await anonymous.call('check_status', { request_id: 'abc_1_1' });
    expect(status.status).toBe(401);
    expect(status.body.error.data.code).toBe('missing_credentials');
    const legacy = await fetch(`${em.url}/mcp/status?request_id=abc_1_1`);
    expect(legacy.status).toBe(401);
    expect(legacy.headers.get('www-authenticate')).toBe(challenge);
    expect(em.stats().jobsSubmitted).toBe(0);
  });

  it('rule: the OpenAPI document describes the MCP message endpoint at version 0.1.0, with the key pair and OAuth as alternatives', async () => {
    const doc = (await (await fetch(`${em.url}/openapi.json`)).json()) as any;
    expect(doc.info.version).toBe('0.1.0');
    for (const path of ['/mcp', '/mcp/message']) {
      const post = doc.paths[path].post;
      expect(
        post.requestBody.content['application/json'].schema.properties.method.examples,
      ).toEqual([
        'initialize',
        'tools/list',
        'tools/call',
        'resources/list',
        'prompts/list',
        'ping',
      ]);
      // The key pair or OAuth as alternatives; none needed for the handshake and listings.
      expect(post.security).toEqual([
        { apiKey: [], apiSecret: [] },
        { mcpOAuth: ['svc.read', 'svc.search', 'svc.answer'] },
        {},
      ]);
      expect(Object.keys(post.responses)).toEqual(
        expect.arrayContaining(['200', '202', '400', '401', '403']),
      );
    }
    expect(doc.components.securitySchemes.mcpOAuth.flows.authorizationCode.tokenUrl).toBe(
      '/mcp/oauth/token',
    );
  });

  it('rule: JSON-RPC errors: -32600 (HTTP 400) for a wrong jsonrpc version, a bad id or a batch, -32700 (HTTP 400) for malformed JSON, -32601 (in a 200) for an unknown method', async () => {
    const c = mcp(em);
    const version = await c.raw(JSON.stringify({ jsonrpc: '1.0', id: 7, method: 'tools/list' }));
    expect(version.status).toBe(400);
    expect(version.body).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32600 } });
    expect(typeof version.body.error.message).toBe('string');

    const badId = await c.raw(JSON.stringify({ jsonrpc: '2.0', id: 1.5, method: 'tools/list' }));
    expect(badId.status).toBe(400);
    expect(badId.body).toMatchObject({ id: null, error: { code: -32600 } });
    const batch = await c.raw(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'tools/list' }]));
    expect(batch.body.error.code).toBe(-32600);

    const unknown = await c.raw(JSON.stringify({ jsonrpc: '2.0', id: 'a', method: 'tools/run' }));
    expect(unknown.status).toBe(200);
    expect(unknown.body).toMatchObject({ id: 'a', error: { code: -32601 } });

    const malformed = await c.raw('{"jsonrpc": "2.0", "id": 1,');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });

    const badParams = await c.raw(
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: [1] }),
    );
    expect(badParams.body.error.code).toBe(-32602);
    const unknownTool = await c.call('person_osint', { email: 'a@b.co' });
    expect(unknownTool.body.error.code).toBe(-32602);

    // A notification (no id) gets no JSON-RPC reply.
    const note = await c.raw(
      JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    );
    expect(note.status).toBe(202);
    expect(note.body).toBeUndefined();
  });

  it('rule: ping answers an empty result; a notification or a posted JSON-RPC response gets 202 and no body', async () => {
    const c = mcp(em, null);
    const ping = await c.request('ping');
    expect(ping.status).toBe(200);
    expect(ping.body).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    for (const message of [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 3 } },
      { jsonrpc: '2.0', id: 5, result: {} },
      { jsonrpc: '2.0', id: 6, error: { code: -32601, message: 'no' } },
    ]) {
      const r = await c.raw(JSON.stringify(message));
      expect(r.status, JSON.stringify(message)).toBe(202);
      expect(r.body).toBeUndefined();
    }
  });

  it('rule: GET /mcp and /mcp/message answer the manifest to a JSON request and 405 to one that accepts only an event stream; DELETE is 405', async () => {
    for (const path of ['/mcp', '/mcp/message']) {
      const json = await fetch(em.url + path, { headers: { accept: 'application/json' } });
      expect(json.status, path).toBe(200);
      expect(((await json.json()) as any).tools).toHaveLength(8);
      const sse = await fetch(em.url + path, { headers: { accept: 'text/event-stream' } });
      expect(sse.status, path).toBe(405);
      expect(sse.headers.get('allow')).toContain('POST');
      expect(((await sse.json()) as any).error.code).toBe(-32600);
      expect((await fetch(em.url + path, { method: 'DELETE' })).status).toBe(405);
    }
  });

  it('rule: an unsupported MCP-Protocol-Version is 400; a foreign Origin is refused (403); the same origin and loopback pages are served', async () => {
    const post = (headers: Record<string, string>) =>
      fetch(`${em.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    const future = await post({ 'mcp-protocol-version': '2099-01-01' });
    expect(future.status).toBe(400);
    expect(((await future.json()) as any).error.message).toContain('2025-06-18');
    expect((await post({ 'mcp-protocol-version': '2025-06-18' })).status).toBe(200);

    const foreign = await post({ origin: 'https://attacker.example.com' });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as any).error.code).toBe(-32600);
    expect((await post({ origin: em.url })).status).toBe(200);
    expect((await post({ origin: 'http://localhost:5173' })).status).toBe(200);
  });

  it('rule: a request the emulator cannot read at all is a JSON-RPC error, never a 500', async () => {
    const wrongType = await fetch(`${em.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(wrongType.status).toBe(415);
    expect(((await wrongType.json()) as any).jsonrpc).toBe('2.0');
    const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    const nested = await mcp(em).raw(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 9,
        method: 'tools/call',
        params: { name: 'person_search', arguments: { query: 'x', custom_filters: 'DEEP' } },
      }).replace('"DEEP"', deep),
    );
    expect(nested.status).toBe(200);
    expect(nested.body).toMatchObject({ jsonrpc: '2.0', id: 9, error: { code: -32602 } });
  });
});
