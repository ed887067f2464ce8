import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { sleep, start } from './helpers.js';
import { knownSubjects, mcp, pkcePair } from './mcp-helpers.js';

let em: RunningEmulator;
beforeAll(async () => {
  em = await start();
});
afterAll(() => em.stop());

const REDIRECT = 'http://127.0.0.1:33418/callback';

async function register(target = em): Promise<string> {
  const res = await fetch(`${target.url}/mcp/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'test client', redirect_uris: [REDIRECT] }),
  });
  expect(res.status).toBe(201);
  return ((await res.json()) as any).client_id as string;
}

async function authorize(clientId: string, challenge: string, scope?: string, target = em) {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    state: 'st-1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(scope ? { scope } : {}),
  });
  const res = await fetch(`${target.url}/mcp/oauth/authorize?${q.toString()}`, {
    redirect: 'manual',
  });
  return { status: res.status, location: new URL(res.headers.get('location') ?? 'about:blank') };
}

async function token(fields: Record<string, string>, target = em) {
  const res = await fetch(`${target.url}/mcp/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function signIn(scope?: string, target = em) {
  const clientId = await register(target);
  const { verifier, challenge } = pkcePair();
  const { location } = await authorize(clientId, challenge, scope, target);
  const code = location.searchParams.get('code')!;
  const t = await token(
    {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    },
    target,
  );
  expect(t.status).toBe(200);
  return { clientId, ...(t.body as { access_token: string; refresh_token: string }) };
}

describe('MCP OAuth', () => {
  it('rule: the authorization-code flow with PKCE S256 (auto-approved for the dev key) gives a bearer token that runs tools; a wrong or missing verifier, a replayed code and a missing client_id are refused', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkcePair();
    const a = await authorize(clientId, challenge);
    expect(a.status).toBe(302);
    expect(`${a.location.origin}${a.location.pathname}`).toBe(REDIRECT);
    expect(a.location.searchParams.get('state')).toBe('st-1');
    const code = a.location.searchParams.get('code')!;
    expect(code).toBeTruthy();

    const exchange = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT };
    const noClient = await token({ ...exchange, code_verifier: verifier });
    expect(noClient.status).toBe(400);
    expect(noClient.body.error).toBe('invalid_request');
    const wrong = await token({
      ...exchange,
      client_id: clientId,
      code_verifier: pkcePair().verifier,
    });
    expect(wrong.body.error).toBe('invalid_grant');
    const missing = await token({ ...exchange, client_id: clientId });
    expect(missing.body.error).toBe('invalid_request');

    const t = await token({ ...exchange, client_id: clientId, code_verifier: verifier });
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({ token_type: 'Bearer', scope: 'svc.read svc.search svc.answer' });
    expect(t.body.expires_in).toBeGreaterThan(0);
    const replay = await token({ ...exchange, client_id: clientId, code_verifier: verifier });
    expect(replay.body.error).toBe('invalid_grant');

    // Without a challenge there is no code; an unregistered client is not redirected at all.
    const noPkce = await fetch(
      `${em.url}/mcp/oauth/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent(REDIRECT)}`,
      { redirect: 'manual' },
    );
    expect(new URL(noPkce.headers.get('location')!).searchParams.get('error')).toBe(
      'invalid_request',
    );
    const stranger = await authorize('mcp_client_unknown', challenge);
    expect(stranger.status).toBe(400);

    // The replayed code withdrew what it gave; a fresh sign-in works.
    const fresh = await signIn();
    const { email } = knownSubjects(em);
    const run = await mcp(em, { bearer: fresh.access_token }).call('person_enrichment', { email });
    expect(run.doc?.status).toBe('pending');
    const done = await mcp(em, { bearer: fresh.access_token }).waitStatus(run.doc.next_action.args);
    expect(done.doc.status).toBe('complete');
  });

  it('rule: scopes gate tools (svc.search for searches, svc.read for reads, svc.answer for person_ask)', async () => {
    const { email } = knownSubjects(em);
    const searchOnly = mcp(em, { bearer: (await signIn('svc.search')).access_token });
    expect((await searchOnly.call('person_search', { query: 'engineer' })).doc?.status).toBe(
      'pending',
    );
    const read = await searchOnly.call('person_enrichment', { email });
    expect(read.status).toBe(403);
    expect(read.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="svc.search svc.read", resource_metadata="${em.url}/.well-known/oauth-protected-resource"`,
    );
    expect(read.body.error.code).toBe(-32003);
    expect(read.body.error.data.code).toBe('access_denied');
    expect(read.body.error.message).toContain('svc.read');
    const ask = await searchOnly.call('person_ask', { question: 'Title?', email });
    expect(ask.body.error.message).toContain('svc.answer');

    const answerOnly = mcp(em, { bearer: (await signIn('svc.answer')).access_token });
    expect((await answerOnly.call('person_ask', { question: 'Title?', email })).doc?.status).toBe(
      'pending',
    );
    expect((await answerOnly.call('company_search', { industry: 'x' })).body.error.code).toBe(
      -32003,
    );

    const badScope = await authorize(await register(), pkcePair().challenge, 'svc.admin');
    expect(badScope.location.searchParams.get('error')).toBe('invalid_scope');
  });

  it('rule: refresh tokens rotate (an old one is refused) and access tokens are short-lived', async () => {
    const first = await signIn();
    const rotated = await token({
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: first.clientId,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.refresh_token).not.toBe(first.refresh_token);
    const c = mcp(em, { bearer: rotated.body.access_token });
    expect((await c.call('check_status', { request_id: 'abc_1_1' })).body.result).toBeDefined();

    const reused = await token({
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: first.clientId,
    });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');
    // Reuse of a rotated token ends the whole sign-in: the newer refresh token is refused too.
    const after = await token({
      grant_type: 'refresh_token',
      refresh_token: rotated.body.refresh_token,
      client_id: first.clientId,
    });
    expect(after.body.error).toBe('invalid_grant');

    // Access tokens living 100 s before the time scale: 1 s here.
    const shortLived = await start({ mcpOAuth: { accessTokenTtlMs: 100_000 } });
    try {
      const { access_token } = await signIn(undefined, shortLived);
      const live = mcp(shortLived, { bearer: access_token });
      expect(
        (await live.call('check_status', { request_id: 'abc_1_1' })).body.result,
      ).toBeDefined();
      await sleep(1200);
      const expired = await live.call('check_status', { request_id: 'abc_1_1' });
      expect(expired.status).toBe(401);
      expect(expired.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect(expired.body.error.code).toBe(-32001);
      // A token that is sent must be good even for the handshake, so a client refreshes early.
      const list = await live.request('tools/list');
      expect(list.status).toBe(401);
      expect(expired.body.error.data.code).toBe('invalid_credentials');
    } finally {
      await shortLived.stop();
    }
  });

  it('rule: a bearer token made of the key pair is not accepted', async () => {
    const { key, secret } = em.devKey;
    const submitted = em.stats().jobsSubmitted;
    for (const bearer of [
      `${key}:${secret}`,
      Buffer.from(`${key}:${secret}`).toString('base64'),
      key,
      secret,
    ]) {
      const r = await mcp(em, { bearer }).call('person_search', { query: 'engineer' });
      expect(r.body.error?.code).toBe(-32001);
      expect(r.body.error.data.code).toBe('invalid_credentials');
      expect(r.body.error.message).not.toContain(secret);
    }
    const basic = await mcp(em, {
      authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
    }).call('person_search', { query: 'engineer' });
    expect(basic.body.error.code).toBe(-32001);
    expect(em.stats().jobsSubmitted).toBe(submitted);
  });

  it('rule: tokens are bound to their resource (RFC 8707): another resource is refused at authorization and token time, and a token used at another address is refused', async () => {
    const clientId = await register();
    const { verifier, challenge } = pkcePair();
    const q = (resource: string) =>
      new URLSearchParams({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_challenge: challenge,
        resource,
      }).toString();
    const other = await fetch(`${em.url}/mcp/oauth/authorize?${q('https://api.example.com/mcp')}`, {
      redirect: 'manual',
    });
    expect(new URL(other.headers.get('location')!).searchParams.get('error')).toBe(
      'invalid_target',
    );
    const ok = await fetch(`${em.url}/mcp/oauth/authorize?${q(`${em.url}/mcp`)}`, {
      redirect: 'manual',
    });
    const code = new URL(ok.headers.get('location')!).searchParams.get('code')!;
    const exchange = {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    };
    const moved = await token({ ...exchange, resource: 'https://api.example.com/mcp' });
    expect(moved.body.error).toBe('invalid_target');
    const t = await token({ ...exchange, resource: `${em.url}/mcp` });
    expect(t.status).toBe(200);

    // The same server under another name is another resource.
    const elsewhere = new URL(em.url);
    elsewhere.hostname = 'localhost';
    const call = (base: string) =>
      fetch(`${base}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${t.body.access_token}`,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'check_status', arguments: { request_id: 'abc_1_1' } },
        }),
      });
    expect((await call(em.url)).status).toBe(200);
    const refused = await call(elsewhere.origin);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as any).error.message).toContain('another resource');
  });

  it('rule: OAuth errors come in RFC 6749 / RFC 7591 form (error, error_description), never the HTTP API envelope', async () => {
    for (const path of ['/mcp/oauth/register', '/mcp/oauth/token']) {
      const r = await fetch(`${em.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"redirect_uris": [',
      });
      expect(r.status, path).toBe(400);
      const body = (await r.json()) as any;
      expect(Object.keys(body).sort(), path).toEqual(['error', 'error_description']);
      expect(body.error).toBe('invalid_request');
    }
    const noUris = await fetch(`${em.url}/mcp/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'x', redirect_uris: ['not a url'] }),
    });
    expect(((await noUris.json()) as any).error).toBe('invalid_redirect_uri');
    const grant = await token({ grant_type: 'password', client_id: 'x' });
    expect(Object.keys(grant.body).sort()).toEqual(['error', 'error_description']);
  });
});
