// Who may use `pcds mcp --transport http`: a bearer token (configured, or generated once into
// the data folder) names the caller, and the Host and Origin headers must name this server, so
// neither a stranger nor a web page the user visits (DNS rebinding) can drive the tools.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { ConfigError } from '../config-error.js';
import { OPERATOR_TENANT, tenantIdProblem } from '../contract/tenant.js';

/**
 * A caller of the HTTP transport: the label of its token, never the token. The label is the
 * caller's tenant: its ids, cache entries and share of the pool are its own.
 */
export interface McpCaller {
  tokenId: string;
}

export interface McpToken {
  id: string;
  token: string;
}

/** At least 128 bits of a random token written out in hex (OWASP session-token guidance). */
export const MIN_TOKEN_LENGTH = 32;
/** The token of PCDS_MCP_TOKEN and of the generated file: the operator's own tenant. */
export const DEFAULT_TOKEN_ID = OPERATOR_TENANT;
export const TOKEN_FILE_NAME = 'mcp-server-token';

/**
 * The tokens set in the environment: PCDS_MCP_TOKEN (id `default`, the operator's) and
 * PCDS_MCP_TOKENS (`id:token,id:token`, each id a tenant). `default` is reserved for the operator's
 * token: a caller labelled so in PCDS_MCP_TOKENS would get the operator's scope. Problems name the
 * setting and the position, never a value.
 */
export function configuredTokens(
  config: Pick<Config, 'PCDS_MCP_TOKEN' | 'PCDS_MCP_TOKENS'>,
): McpToken[] {
  const tokens: McpToken[] = [];
  if (config.PCDS_MCP_TOKEN) tokens.push({ id: DEFAULT_TOKEN_ID, token: config.PCDS_MCP_TOKEN });
  const entries = (config.PCDS_MCP_TOKENS ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  entries.forEach((entry, i) => {
    const colon = entry.indexOf(':');
    const id = entry.slice(0, Math.max(colon, 0));
    const token = entry.slice(colon + 1);
    // The id names the caller's folder in the file root (`.` or `..` would be another folder)
    // and its tenant: the contract's rule for tenant ids.
    if (colon < 1 || tenantIdProblem(id))
      throw new ConfigError(
        `PCDS_MCP_TOKENS: entry ${i + 1} must be id:token (id: letters, digits, _ . -, not only dots)`,
      );
    if (id === DEFAULT_TOKEN_ID)
      throw new ConfigError(
        `PCDS_MCP_TOKENS: entry ${i + 1} is labelled "${DEFAULT_TOKEN_ID}", which is reserved for the operator's token: set PCDS_MCP_TOKEN for the operator, and give callers labels of their own`,
      );
    if (token.length < MIN_TOKEN_LENGTH)
      throw new ConfigError(
        `PCDS_MCP_TOKENS: the token of entry ${i + 1} must be at least ${MIN_TOKEN_LENGTH} characters`,
      );
    tokens.push({ id, token });
  });
  const ids = new Set<string>();
  for (const t of tokens) {
    if (ids.has(t.id))
      throw new ConfigError(`MCP token id "${t.id}" is used twice (PCDS_MCP_TOKEN is "default")`);
    ids.add(t.id);
  }
  // One token under two labels would make its holder either caller, at the check's whim: each
  // caller has a token of its own. The labels are named, never the token.
  const labelOf = new Map<string, string>();
  for (const t of tokens) {
    const other = labelOf.get(t.token);
    if (other !== undefined)
      throw new ConfigError(
        `MCP tokens "${other}" and "${t.id}" are the same token (PCDS_MCP_TOKEN is "default"): give each caller its own`,
      );
    labelOf.set(t.token, t.id);
  }
  return tokens;
}

/** Whether an address to listen on is the local machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/**
 * The tokens the HTTP transport accepts. Without a configured token it keeps one in
 * <PCDS_DATA_DIR>/mcp-server-token (0600, folder 0700), made on the first start; `generated`
 * holds it that once so it can be shown. Listening beyond loopback needs a configured token.
 */
export async function resolveMcpTokens(
  config: Pick<Config, 'PCDS_MCP_TOKEN' | 'PCDS_MCP_TOKENS' | 'PCDS_DATA_DIR'>,
  listenHost: string,
): Promise<{ tokens: McpToken[]; file?: string; generated?: { path: string; token: string } }> {
  const tokens = configuredTokens(config);
  if (tokens.length > 0) return { tokens };
  if (!isLoopbackHost(listenHost))
    throw new ConfigError(
      `listening on ${listenHost}, beyond this machine, needs an access token set explicitly: set PCDS_MCP_TOKEN (or PCDS_MCP_TOKENS)`,
    );
  const path = join(config.PCDS_DATA_DIR, TOKEN_FILE_NAME);
  const existing = await stat(path).catch(() => undefined);
  if (existing) {
    // Like ssh with a private key: a token others can read is not a secret any more.
    if ((existing.mode & 0o077) !== 0)
      throw new ConfigError(
        `${path} can be read by other users: make it private (chmod 600) or set PCDS_MCP_TOKEN`,
      );
    const token = (await readFile(path, 'utf8')).trim();
    if (token.length < MIN_TOKEN_LENGTH)
      throw new ConfigError(
        `${path} does not hold a token of at least ${MIN_TOKEN_LENGTH} characters: delete it to make a new one`,
      );
    return { tokens: [{ id: DEFAULT_TOKEN_ID, token }], file: path };
  }
  await mkdir(config.PCDS_DATA_DIR, { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString('base64url');
  // wx: never follow or replace a file that appeared meanwhile.
  await writeFile(path, `${token}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(path, 0o600);
  return { tokens: [{ id: DEFAULT_TOKEN_ID, token }], file: path, generated: { path, token } };
}

/**
 * Whether the server has the operator's token alone (one token, labelled `default`): the
 * single-user layout, where callers share the file root itself.
 */
export const isSoleDefaultToken = (tokens: readonly McpToken[]): boolean =>
  tokens.length === 1 && tokens[0].id === DEFAULT_TOKEN_ID;

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Checks an Authorization header against the tokens in constant time (the digests are
 * compared, every token each time). `missing` and `invalid` become a 401 with WWW-Authenticate.
 */
export function bearerCaller(
  tokens: readonly McpToken[],
  authorization: string | undefined,
): McpCaller | 'missing' | 'invalid' {
  const m = /^Bearer[ ]+(\S+)[ ]*$/i.exec(authorization ?? '');
  if (!m) return authorization ? 'invalid' : 'missing';
  const given = digest(m[1]);
  let found: McpToken | undefined;
  for (const t of tokens) if (timingSafeEqual(digest(t.token), given)) found ??= t;
  return found ? { tokenId: found.id } : 'invalid';
}

/** `host[:port]` split, lower-cased, brackets kept on IPv6; port undefined when absent. */
function splitHost(value: string): { name: string; port?: number } | undefined {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]\s/]+)(?::(\d{1,5}))?$/i.exec(value.trim());
  if (!m) return undefined;
  return { name: m[1].toLowerCase(), ...(m[2] !== undefined ? { port: Number(m[2]) } : {}) };
}

export interface AllowedHosts {
  /** Whether a Host header names this server. */
  host(value: string | undefined): boolean;
  /** Whether an Origin header is a page of this server; an absent Origin (no browser) passes. */
  origin(value: string | undefined): boolean;
}

/**
 * The names this server answers to: the loopback names and the listening address on its port,
 * and each extra entry (`name` for any port, e.g. behind a proxy, or `name:port`).
 */
export function allowedHosts(o: {
  listenHost: string;
  port: number;
  extra?: string[];
}): AllowedHosts {
  const listen = isIP(o.listenHost) === 6 ? `[${o.listenHost}]` : o.listenHost;
  const entries: { name: string; port?: number }[] = [
    '127.0.0.1',
    'localhost',
    '[::1]',
    listen,
  ].map((name) => ({ name: name.toLowerCase(), port: o.port }));
  for (const e of o.extra ?? []) {
    const parsed = splitHost(e);
    if (!parsed) throw new ConfigError('PCDS_MCP_ALLOWED_HOSTS: each entry is a host or host:port');
    entries.push({ name: parsed.name, port: parsed.port });
  }
  const allowed = (name: string, port: number) =>
    entries.some((e) => e.name === name && (e.port === undefined || e.port === port));
  return {
    host(value) {
      const h = value ? splitHost(value) : undefined;
      return h !== undefined && allowed(h.name, h.port ?? 80);
    },
    origin(value) {
      if (value === undefined) return true;
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        return false;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
      const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
      return allowed(url.hostname.toLowerCase(), port);
    },
  };
}

/** PCDS_MCP_ALLOWED_HOSTS as a list. */
export const extraAllowedHosts = (setting: string | undefined): string[] =>
  (setting ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
