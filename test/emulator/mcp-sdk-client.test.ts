// The emulator's MCP endpoint driven by the official MCP TypeScript SDK: its Client over the
// Streamable HTTP transport, with the SDK's OAuth support running discovery, dynamic
// registration, PKCE, the token exchange, refresh on expiry and scope step-up by itself. The test
// plays only the user agent: it follows the authorization URL (the emulator approves at once)
// and hands the code back with finishAuth, as an application does after the browser returns.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  UnauthorizedError,
  type OAuthClientProvider,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_DATA_TOOLS } from '../../src/contract/index.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { sleep, start } from './helpers.js';
import { knownSubjects } from './mcp-helpers.js';

const REDIRECT = 'http://127.0.0.1:33418/callback';

/** An in-memory OAuth client of the SDK; the user agent approves what it is asked for, or less. */
class TestOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  stored?: OAuthTokens;
  verifier = '';
  /** The code the last authorization redirected back with. */
  code?: string;
  /** Every authorization URL the SDK sent the user agent to. */
  readonly visited: URL[] = [];

  constructor(
    private readonly opts: {
      /** A client may keep no refresh token (it signs in again instead). */
      keepRefreshToken?: boolean;
    } = {},
    /** The scope the user consents to, when narrower than the one asked. */
    public consent?: string,
  ) {}

  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'sdk test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.stored;
  }
  saveTokens(tokens: OAuthTokens) {
    if (this.opts.keepRefreshToken === false) {
      const { refresh_token: _dropped, ...rest } = tokens;
      this.stored = rest;
    } else this.stored = tokens;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  async redirectToAuthorization(url: URL) {
    this.visited.push(new URL(url));
    if (this.consent) url.searchParams.set('scope', this.consent);
    const res = await fetch(url, { redirect: 'manual' });
    const back = new URL(res.headers.get('location') ?? 'about:blank');
    const error = back.searchParams.get('error');
    if (error) throw new Error(`authorization refused: ${error}`);
    this.code = back.searchParams.get('code') ?? undefined;
  }
}

async function connect(em: RunningEmulator, provider: TestOAuthProvider) {
  const transport = new StreamableHTTPClientTransport(new URL(`${em.url}/mcp`), {
    authProvider: provider,
  });
  const client = new Client({ name: 'sdk-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

/** A tool call; when the SDK has sent the user agent to sign in, finish it and call again. */
async function callSigningIn(
  c: { client: Client; transport: StreamableHTTPClientTransport },
  provider: TestOAuthProvider,
  name: string,
  args: Record<string, unknown>,
) {
  try {
    return await c.client.callTool({ name, arguments: args });
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
    expect(provider.code).toBeTruthy();
    await c.transport.finishAuth(provider.code!);
    return c.client.callTool({ name, arguments: args });
  }
}

const docOf = (r: Awaited<ReturnType<Client['callTool']>>) =>
  JSON.parse((r.content as { type: string; text: string }[])[0].text);

async function waitComplete(client: Client, args: Record<string, unknown>) {
  for (let i = 0; i < 500; i++) {
    const doc = docOf(await client.callTool({ name: 'check_status', arguments: args }));
    if (doc.status !== 'pending') return doc;
    await sleep(10);
  }
  throw new Error('check_status stayed pending');
}

let em: RunningEmulator;
beforeAll(async () => {
  // Access tokens living 100 s before the time scale: 1 s here.
  em = await start({ mcpOAuth: { accessTokenTtlMs: 100_000 } });
});
afterAll(() => em.stop());

describe('MCP endpoint with the official SDK client', () => {
  it('rule: the SDK client connects without credentials (initialize, ping, tools/list at 2025-06-18, no event stream kept open) and lists the tools with their required fields', async () => {
    const provider = new TestOAuthProvider();
    const { client } = await connect(em, provider);
    try {
      expect(client.getServerVersion()).toMatchObject({ version: '0.1.0' });
      expect(await client.ping()).toEqual({});
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual([...MCP_DATA_TOOLS, 'check_status']);
      const ask = tools.find((t) => t.name === 'person_ask')!;
      expect(ask.inputSchema.required).toEqual(['question']);
      expect(provider.visited).toHaveLength(0);
    } finally {
      await client.close();
    }
  });

  it('rule: a tool call without credentials makes the SDK sign in by itself (discovery, dynamic registration, PKCE, token for this resource), and the call then runs', async () => {
    const provider = new TestOAuthProvider();
    const c = await connect(em, provider);
    try {
      const { email } = knownSubjects(em);
      const started = docOf(await callSigningIn(c, provider, 'person_enrichment', { email }));
      expect(started.status).toBe('pending');
      expect(provider.client?.client_id).toMatch(/^mcp_client_/);
      const asked = provider.visited[0];
      expect(asked.searchParams.get('code_challenge_method')).toBe('S256');
      expect(asked.searchParams.get('resource')).toBe(`${em.url}/mcp`);
      expect(provider.stored?.access_token).toBeTruthy();
      const done = await waitComplete(c.client, started.next_action.args);
      expect(done.status).toBe('complete');
      expect(done.data.best_business_email ?? done.data.altemails).toBeDefined();
    } finally {
      await c.client.close();
    }
  });

  it('rule: an expired access token is refreshed by the SDK on the 401 (the refresh token rotates; the old one is then refused)', async () => {
    const provider = new TestOAuthProvider();
    const c = await connect(em, provider);
    try {
      await callSigningIn(c, provider, 'check_status', { request_id: 'abc_1_1' });
      const first = provider.stored!;
      await sleep(1200);
      const r = await c.client.callTool({
        name: 'check_status',
        arguments: { request_id: 'abc_1_1' },
      });
      expect(docOf(r).code).toBe('request_not_found');
      expect(provider.visited).toHaveLength(1);
      expect(provider.stored!.access_token).not.toBe(first.access_token);
      expect(provider.stored!.refresh_token).not.toBe(first.refresh_token);
      const replay = await fetch(`${em.url}/mcp/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: first.refresh_token!,
          client_id: provider.client!.client_id,
        }).toString(),
      });
      expect(replay.status).toBe(400);
      expect(await replay.json()).toMatchObject({ error: 'invalid_grant' });
    } finally {
      await c.client.close();
    }
  });

  it('rule: a token without the scope a tool needs gets 403 insufficient_scope, and the SDK steps up (authorizes the wider scope) by itself', async () => {
    // The user consents to searches only; the client keeps no refresh token (SDK 1.x steps up
    // by a new authorization only then: with one it refreshes, and a refresh cannot widen scope).
    const provider = new TestOAuthProvider({ keepRefreshToken: false }, 'svc.search');
    const c = await connect(em, provider);
    try {
      const search = docOf(
        await callSigningIn(c, provider, 'person_search', { query: 'engineer' }),
      );
      expect(search.status).toBe('pending');
      expect(provider.stored?.scope).toBe('svc.search');

      const { email } = knownSubjects(em);
      // The step-up asks for what is held plus what is missing; the user now consents to it.
      provider.consent = undefined;
      const read = docOf(await callSigningIn(c, provider, 'person_enrichment', { email }));
      expect(read.status).toBe('pending');
      expect(provider.visited).toHaveLength(2);
      expect(provider.visited[1].searchParams.get('scope')).toBe('svc.search svc.read');
      expect(provider.stored?.scope).toBe('svc.search svc.read');
    } finally {
      await c.client.close();
    }
  });
});
