// Who may use `pcds mcp --transport http`, without a server: the bearer check, the Host and
// Origin names, the token settings and the token generated into the data folder.
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allowedHosts,
  bearerCaller,
  configuredTokens,
  isLoopbackHost,
  resolveMcpTokens,
  TOKEN_FILE_NAME,
} from '../../../src/mcp-server/access.js';

const A = 'a'.repeat(32);
const B = 'b'.repeat(40);
const tokens = [
  { id: 'alpha', token: A },
  { id: 'beta', token: B },
];

describe('bearerCaller', () => {
  it('names the caller of a known token, whatever the case of the scheme', () => {
    expect(bearerCaller(tokens, `Bearer ${B}`)).toEqual({ tokenId: 'beta' });
    expect(bearerCaller(tokens, `bearer ${A}`)).toEqual({ tokenId: 'alpha' });
  });
  it('tells a missing credential from a wrong one', () => {
    expect(bearerCaller(tokens, undefined)).toBe('missing');
    expect(bearerCaller(tokens, `Bearer ${A}x`)).toBe('invalid');
    expect(bearerCaller(tokens, `Bearer ${A.slice(1)}`)).toBe('invalid');
    expect(bearerCaller(tokens, `Basic ${A}`)).toBe('invalid');
    expect(bearerCaller(tokens, 'Bearer')).toBe('invalid');
  });
});

describe('allowedHosts', () => {
  const names = allowedHosts({ listenHost: '127.0.0.1', port: 8790, extra: ['mcp.example.org'] });
  it('accepts the loopback names on the port and the extra names', () => {
    for (const h of ['127.0.0.1:8790', 'localhost:8790', 'LOCALHOST:8790', '[::1]:8790'])
      expect(names.host(h), h).toBe(true);
    expect(names.host('mcp.example.org')).toBe(true);
    expect(names.host('mcp.example.org:443')).toBe(true);
  });
  it('refuses a rebound name, another port, an absent or malformed Host', () => {
    for (const h of ['rebind.attacker.example:8790', 'localhost:3000', 'localhost', '', 'a b'])
      expect(names.host(h), h).toBe(false);
    expect(names.host(undefined)).toBe(false);
  });
  it('accepts an absent Origin and this server’s own pages only', () => {
    expect(names.origin(undefined)).toBe(true);
    expect(names.origin('http://localhost:8790')).toBe(true);
    expect(names.origin('https://mcp.example.org')).toBe(true);
    // Equal to a rebound Host is not enough: the name itself must be allowed.
    expect(names.origin('http://rebind.attacker.example:8790')).toBe(false);
    expect(names.origin('http://localhost:3000')).toBe(false);
    expect(names.origin('null')).toBe(false);
    expect(names.origin('file:///etc')).toBe(false);
  });
  it('adds the listening address and a name:port entry for that port only', () => {
    const wide = allowedHosts({ listenHost: '10.0.0.5', port: 9000, extra: ['box.lan:9000'] });
    expect(wide.host('10.0.0.5:9000')).toBe(true);
    expect(wide.host('box.lan:9000')).toBe(true);
    expect(wide.host('box.lan:9001')).toBe(false);
    expect(allowedHosts({ listenHost: '::1', port: 1 }).host('[::1]:1')).toBe(true);
  });
  it('refuses a malformed entry, naming the setting', () => {
    expect(() => allowedHosts({ listenHost: '127.0.0.1', port: 1, extra: ['http://x/'] })).toThrow(
      /PCDS_MCP_ALLOWED_HOSTS/,
    );
  });
});

describe('token settings', () => {
  it('reads PCDS_MCP_TOKEN as `default` and PCDS_MCP_TOKENS as id:token pairs', () => {
    expect(
      configuredTokens({ PCDS_MCP_TOKEN: A, PCDS_MCP_TOKENS: `beta:${B}, gamma:${A}c` }),
    ).toEqual([
      { id: 'default', token: A },
      { id: 'beta', token: B },
      { id: 'gamma', token: `${A}c` },
    ]);
  });
  it('refuses a short token or a bad entry without echoing it', () => {
    const short = 'short-secret-value';
    expect(() => configuredTokens({ PCDS_MCP_TOKENS: `beta:${short}` })).toThrow(
      /PCDS_MCP_TOKENS: the token of entry 1 must be at least 32/,
    );
    try {
      configuredTokens({ PCDS_MCP_TOKENS: `${short}` });
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).toMatch(/entry 1 must be id:token/);
      expect((err as Error).message).not.toContain(short);
    }
  });
  it("refuses the label `default` in PCDS_MCP_TOKENS, alone or beside PCDS_MCP_TOKEN: it is the operator's token", () => {
    for (const settings of [
      { PCDS_MCP_TOKENS: `default:${B}` },
      { PCDS_MCP_TOKEN: A, PCDS_MCP_TOKENS: `default:${B}` },
      { PCDS_MCP_TOKENS: `beta:${A}, default:${B}` },
    ]) {
      let message = '';
      try {
        configuredTokens(settings);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/PCDS_MCP_TOKENS: entry \d is labelled "default", which is reserved/);
      expect(message).toContain('PCDS_MCP_TOKEN');
      expect(message).not.toContain(B);
    }
  });
  it('refuses one token under two labels, naming the labels and never the token', () => {
    for (const settings of [
      { PCDS_MCP_TOKENS: `alice:${B},bob:${B}` },
      { PCDS_MCP_TOKEN: B, PCDS_MCP_TOKENS: `alice:${A},bob:${B}` },
    ]) {
      let message = '';
      try {
        configuredTokens(settings);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(/^MCP tokens "(alice|default)" and "bob" are the same token/);
      expect(message).not.toContain(B);
    }
  });

  it('refuses an id of dots, which would name a folder outside the caller’s own', () => {
    for (const id of ['.', '..', '...'])
      expect(() => configuredTokens({ PCDS_MCP_TOKENS: `${id}:${A}` })).toThrow(/not only dots/);
    expect(configuredTokens({ PCDS_MCP_TOKENS: `a.b:${A}` })[0].id).toBe('a.b');
  });
  it('knows loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'])
      expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.5', 'example.org'])
      expect(isLoopbackHost(h), h).toBe(false);
  });
});

describe('resolveMcpTokens', () => {
  const dataDir = () => join(mkdtempSync(join(tmpdir(), 'pcds-mcp-token-')), 'data');

  it('refuses a non-loopback address without a configured token, naming PCDS_MCP_TOKEN', async () => {
    await expect(resolveMcpTokens({ PCDS_DATA_DIR: dataDir() }, '0.0.0.0')).rejects.toThrow(
      /PCDS_MCP_TOKEN/,
    );
    const set = await resolveMcpTokens({ PCDS_DATA_DIR: dataDir(), PCDS_MCP_TOKEN: A }, '0.0.0.0');
    expect(set).toEqual({ tokens: [{ id: 'default', token: A }] });
  });

  it('generates a token once into a private file and reuses it', async () => {
    const dir = dataDir();
    const first = await resolveMcpTokens({ PCDS_DATA_DIR: dir }, '127.0.0.1');
    const path = join(dir, TOKEN_FILE_NAME);
    expect(first.generated?.path).toBe(path);
    expect(first.generated?.token.length).toBeGreaterThanOrEqual(32);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(path, 'utf8').trim()).toBe(first.generated?.token);
    const again = await resolveMcpTokens({ PCDS_DATA_DIR: dir }, 'localhost');
    expect(again).toEqual({ tokens: first.tokens, file: path });
  });

  it('refuses a token file that others can read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pcds-mcp-token-'));
    const path = join(dir, TOKEN_FILE_NAME);
    writeFileSync(path, B);
    chmodSync(path, 0o644);
    await expect(resolveMcpTokens({ PCDS_DATA_DIR: dir }, '127.0.0.1')).rejects.toThrow(
      /chmod 600/,
    );
  });
});
