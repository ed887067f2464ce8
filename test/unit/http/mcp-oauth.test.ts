// The worker's OAuth grants: the tokens file is sealed (AES-256-GCM, owner-only files), and a
// refresh against a tiny token endpoint runs once for many callers, writes the rotated pair before
// handing the new token out, and a fresh instance (a restarted worker) starts from the newest.
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpAuthError, OAuthGrantTokens, codeOf } from '../../../src/http/mcp-oauth.js';
import {
  EncryptedTokenFile,
  TokenFileError,
  tokenFilePaths,
  type StoredGrant,
} from '../../../src/http/mcp-token-file.js';

let server: Server;
let tokenUrl = '';
/** Refresh tokens the endpoint will still take once; each refresh spends one and issues the next. */
const live = new Set<string>();
const requests: URLSearchParams[] = [];
let issued = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      requests.push(form);
      const rt = form.get('refresh_token') ?? '';
      res.setHeader('content-type', 'application/json');
      if (!live.delete(rt)) {
        res.statusCode = 400;
        return res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'spent' }));
      }
      issued += 1;
      const next = `rt-${issued}`;
      live.add(next);
      // A little latency, so concurrent callers overlap the refresh.
      setTimeout(
        () =>
          res.end(
            JSON.stringify({
              access_token: `at-${issued}`,
              token_type: 'Bearer',
              expires_in: 60,
              refresh_token: next,
            }),
          ),
        50,
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const dir = () => mkdtempSync(join(tmpdir(), 'pcds-tokens-'));
const grant = (over: Partial<StoredGrant> = {}): StoredGrant => ({
  clientId: 'client-1',
  tokenEndpoint: tokenUrl,
  issuer: tokenUrl.replace('/token', ''),
  resource: 'http://127.0.0.1/mcp',
  accessToken: 'at-0',
  refreshToken: 'rt-0',
  expiresAt: Date.now() + 60_000,
  ...over,
});

describe('the tokens file', () => {
  it('keeps no token in clear, in files only the owner can read', async () => {
    const paths = tokenFilePaths(dir());
    const file = new EncryptedTokenFile(paths);
    await file.write({ version: 1, grants: { k1: grant() } });
    const raw = readFileSync(paths.path, 'utf8');
    expect(raw).not.toContain('at-0');
    expect(raw).not.toContain('rt-0');
    expect(statSync(paths.path).mode & 0o777).toBe(0o600);
    expect(statSync(paths.keyPath).mode & 0o777).toBe(0o600);
    expect((await new EncryptedTokenFile(paths).read()).grants.k1.refreshToken).toBe('rt-0');
  });

  it('uses a configured key, and refuses another key or a changed file by name', async () => {
    const paths = tokenFilePaths(dir());
    const key = 'ab'.repeat(32);
    await new EncryptedTokenFile({ ...paths, key }).write({ version: 1, grants: { k: grant() } });
    expect(() => statSync(paths.keyPath)).toThrow();
    const other = new EncryptedTokenFile({ ...paths, key: 'cd'.repeat(32) });
    await expect(other.read()).rejects.toThrow(TokenFileError);
    await expect(other.read()).rejects.toThrow(/cannot be decrypted .*pcds mcp-login/);
    const sealed = JSON.parse(readFileSync(paths.path, 'utf8')) as { data: string };
    sealed.data = Buffer.from('tampered').toString('base64');
    writeFileSync(paths.path, JSON.stringify(sealed));
    await expect(new EncryptedTokenFile({ ...paths, key }).read()).rejects.toThrow(TokenFileError);
    await expect(new EncryptedTokenFile({ ...paths, key: 'short' }).read()).rejects.toThrow(
      /32 bytes/,
    );
  });
});

describe('OAuth grant tokens', () => {
  it('refreshes once for many callers and persists the rotated pair before handing it out', async () => {
    live.clear();
    live.add('rt-0');
    issued = 0;
    requests.length = 0;
    const file = new EncryptedTokenFile(tokenFilePaths(dir()));
    await file.write({ version: 1, grants: { k1: grant() } });
    const tokens = new OAuthGrantTokens(file, 'k1');
    expect(await tokens.accessToken()).toBe('at-0');
    // Five requests were refused with the same token at once.
    const fresh = await Promise.all(Array.from({ length: 5 }, () => tokens.refreshAfter('at-0')));
    expect(new Set(fresh)).toEqual(new Set(['at-1']));
    expect(requests).toHaveLength(1);
    expect(requests[0].get('grant_type')).toBe('refresh_token');
    expect(requests[0].get('client_id')).toBe('client-1');
    expect(requests[0].get('resource')).toBe('http://127.0.0.1/mcp');
    const stored = (await file.read()).grants.k1;
    expect(stored).toMatchObject({ accessToken: 'at-1', refreshToken: 'rt-1' });

    // A restarted worker reads the newest pair: its refresh uses rt-1, which the server takes.
    const restarted = new OAuthGrantTokens(file, 'k1');
    expect(await restarted.refreshAfter('at-1')).toBe('at-2');
    expect(requests.at(-1)?.get('refresh_token')).toBe('rt-1');
    expect((await file.read()).grants.k1.refreshToken).toBe('rt-2');
  });

  it('refreshes once across processes sharing the file: the others read the pair it wrote', async () => {
    live.clear();
    live.add('rt-0');
    issued = 0;
    requests.length = 0;
    const paths = tokenFilePaths(dir());
    await new EncryptedTokenFile(paths).write({ version: 1, grants: { k1: grant() } });
    // Separate instances, as in separate worker processes: only the file and its lock are shared.
    const workers = Array.from(
      { length: 4 },
      () => new OAuthGrantTokens(new EncryptedTokenFile(paths), 'k1'),
    );
    const fresh = await Promise.all(workers.map((w) => w.refreshAfter('at-0')));
    expect(new Set(fresh)).toEqual(new Set(['at-1']));
    expect(requests).toHaveLength(1);
    expect(() => statSync(`${paths.path}.lock`)).toThrow();
  });

  it('refreshes an access token that is about to expire before using it', async () => {
    live.clear();
    live.add('rt-0');
    issued = 0;
    const file = new EncryptedTokenFile(tokenFilePaths(dir()));
    await file.write({ version: 1, grants: { k1: grant({ expiresAt: Date.now() - 1 }) } });
    expect(await new OAuthGrantTokens(file, 'k1').accessToken()).toBe('at-1');
  });

  it('asks for a sign-in, naming the command, when there is no grant or it was refused', async () => {
    const file = new EncryptedTokenFile(tokenFilePaths(dir()));
    await expect(new OAuthGrantTokens(file, 'k9').accessToken()).rejects.toThrow(
      /no OAuth grant for key k9.*pcds mcp-login --key-id k9/,
    );
    live.clear();
    await file.write({ version: 1, grants: { k1: grant() } });
    const err = await new OAuthGrantTokens(file, 'k1').refreshAfter('at-0').catch((e) => e);
    expect(err).toBeInstanceOf(McpAuthError);
    expect((err as Error).message).toMatch(/refused \(invalid_grant\).*pcds mcp-login/);
    expect((err as Error).message).not.toMatch(/rt-0|at-0/);
  });

  it('reads the code from what an operator pastes', () => {
    expect(codeOf('http://127.0.0.1:8789/callback?code=abc&state=x')).toBe('abc');
    expect(codeOf('  abc  ')).toBe('abc');
    expect(() => codeOf('http://127.0.0.1:8789/callback?error=access_denied')).toThrow(
      /refused: access_denied/,
    );
  });
});
