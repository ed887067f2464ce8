// OAuth for the MCP endpoint, held by the worker: each key id's grant (from `pcds mcp-login`)
// sits in the encrypted tokens file. An access token is refreshed before it expires or when the
// endpoint refuses it; refresh tokens rotate, so the new pair is written to the file before it is
// used, and a worker that restarts reads the newest one. One refresh runs at a time per key, and
// one at a time across the processes that share the file (its lock).
import {
  auth,
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  refreshAuthorization,
  type OAuthClientProvider,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { PcdsError } from '../contract/index.js';
import type { EncryptedTokenFile, StoredGrant } from './mcp-token-file.js';

/**
 * Refresh this long before the stated expiry (at most a quarter of the token's life), so a token
 * never lapses in flight. The stored expiry has the margin taken off already.
 */
const EXPIRY_MARGIN_MS = 5_000;

/** The grant is missing or was refused: an operator signs in again. */
export class McpAuthError extends PcdsError {
  override name = 'McpAuthError';
  constructor(message: string) {
    super('mcp_login_required', message);
  }
}

/** What the MCP client asks of an OAuth grant. */
export interface McpTokenSource {
  /** A live access token (refreshed first when it is about to expire). */
  accessToken(): Promise<string>;
  /** The endpoint refused `rejected`: a newer token (refreshing once if nobody did yet). */
  refreshAfter(rejected: string): Promise<string>;
}

const login = (keyId: string) => `pcds mcp-login --key-id ${keyId}`;

export class OAuthGrantTokens implements McpTokenSource {
  private grant?: StoredGrant;
  private refreshing?: Promise<StoredGrant>;

  constructor(
    private readonly file: EncryptedTokenFile,
    private readonly keyId: string,
    private readonly now: () => number = Date.now,
  ) {}

  async accessToken(): Promise<string> {
    const grant = this.grant ?? (await this.load());
    if (this.expired(grant)) return (await this.refresh(grant.accessToken)).accessToken;
    return grant.accessToken;
  }

  async refreshAfter(rejected: string): Promise<string> {
    return (await this.refresh(rejected)).accessToken;
  }

  private async load(): Promise<StoredGrant> {
    const grant = (await this.file.read()).grants[this.keyId];
    if (!grant)
      throw new McpAuthError(
        `no OAuth grant for key ${this.keyId} in ${this.file.path}: sign in with ${login(this.keyId)}`,
      );
    this.grant = grant;
    return grant;
  }

  /** One refresh at a time; callers holding an older token get the one it produced. */
  private refresh(stale: string): Promise<StoredGrant> {
    if (this.grant && this.grant.accessToken !== stale && !this.expired(this.grant))
      return Promise.resolve(this.grant);
    if (!this.refreshing) {
      this.refreshing = this.file
        .withLock(() => this.rotate(stale))
        .finally(() => {
          this.refreshing = undefined;
        });
    }
    return this.refreshing;
  }

  private expired(g: StoredGrant): boolean {
    return g.expiresAt !== undefined && g.expiresAt <= this.now();
  }

  private async rotate(stale: string): Promise<StoredGrant> {
    // The file is the truth: another run of this worker may have rotated the pair already.
    const content = await this.file.read();
    const current = content.grants[this.keyId];
    if (!current)
      throw new McpAuthError(
        `no OAuth grant for key ${this.keyId} in ${this.file.path}: sign in with ${login(this.keyId)}`,
      );
    if (current.accessToken !== stale && !this.expired(current)) return (this.grant = current);
    if (!current.refreshToken)
      throw new McpAuthError(
        `the OAuth access token of key ${this.keyId} expired and no refresh token is kept: sign in again with ${login(this.keyId)}`,
      );
    let tokens: OAuthTokens;
    try {
      tokens = await refreshAuthorization(current.issuer, {
        metadata: {
          issuer: current.issuer,
          token_endpoint: current.tokenEndpoint,
          authorization_endpoint: current.tokenEndpoint,
          response_types_supported: ['code'],
        },
        clientInformation: { client_id: current.clientId },
        refreshToken: current.refreshToken,
        resource: current.resource,
      });
    } catch (err) {
      // invalid_grant and the like: the pair is spent or revoked. The message names no token.
      const why = (err as { errorCode?: unknown }).errorCode;
      throw new McpAuthError(
        `the OAuth refresh of key ${this.keyId} was refused${typeof why === 'string' ? ` (${why})` : ''}: sign in again with ${login(this.keyId)}`,
      );
    }
    const next = grantFrom(current, tokens, this.now(), current.refreshToken);
    // Written before it is used: the old refresh token is spent at the server from now on.
    content.grants[this.keyId] = next;
    await this.file.write(content);
    return (this.grant = next);
  }
}

function expiryOf(expiresInSeconds: number, now: number): number {
  const life = expiresInSeconds * 1000;
  return now + life - Math.min(EXPIRY_MARGIN_MS, life / 4);
}

function grantFrom(
  base: Omit<StoredGrant, 'accessToken' | 'refreshToken' | 'expiresAt' | 'scope'>,
  tokens: OAuthTokens,
  now: number,
  previousRefresh?: string,
): StoredGrant {
  const refreshToken = tokens.refresh_token ?? previousRefresh;
  return {
    clientId: base.clientId,
    tokenEndpoint: base.tokenEndpoint,
    issuer: base.issuer,
    resource: base.resource,
    ...(tokens.scope ? { scope: tokens.scope } : {}),
    accessToken: tokens.access_token,
    ...(refreshToken ? { refreshToken } : {}),
    ...(tokens.expires_in !== undefined ? { expiresAt: expiryOf(tokens.expires_in, now) } : {}),
  };
}

export interface McpLoginOptions {
  /** The service's base URL; its MCP endpoint is `${baseUrl}/mcp`. */
  baseUrl: string;
  keyId: string;
  file: EncryptedTokenFile;
  /** Space-separated scopes to ask for (all of the endpoint's by default). */
  scope?: string;
  /** Where the authorization server sends the browser back (registered with the client). */
  redirectUrl?: string;
  /**
   * Gets the code of an authorization: given the URL to open, resolves with the code (or the
   * URL the browser came back to). The default follows the URL itself, which suffices for a
   * server that approves at once (the emulator), and otherwise asks `prompt`.
   */
  authorize?: (url: URL) => Promise<string>;
  prompt?: (url: URL) => Promise<string>;
}

const DEFAULT_REDIRECT = 'http://127.0.0.1:8789/callback';

/** The code in what an operator pasted: a bare code, or the URL the browser landed on. */
export function codeOf(answer: string): string {
  const v = answer.trim();
  try {
    const url = new URL(v);
    const error = url.searchParams.get('error');
    if (error) throw new McpAuthError(`the authorization was refused: ${error}`);
    const code = url.searchParams.get('code');
    if (!code) throw new McpAuthError('the URL carries no authorization code');
    return code;
  } catch (err) {
    if (err instanceof McpAuthError) throw err;
    return v;
  }
}

/**
 * The first grant of a key id, headless where the server allows it: the SDK's OAuth client does
 * discovery, dynamic registration, PKCE and the code exchange; the tokens go to the encrypted file.
 */
export async function mcpLogin(opts: McpLoginOptions): Promise<{ scope?: string; path: string }> {
  const serverUrl = new URL(`${opts.baseUrl.replace(/\/+$/, '')}/mcp`);
  const redirectUrl = opts.redirectUrl ?? DEFAULT_REDIRECT;
  let client: OAuthClientInformationMixed | undefined;
  let tokens: OAuthTokens | undefined;
  let verifier = '';
  let code: string | undefined;
  const follow = async (url: URL): Promise<string> => {
    const res = await fetch(url, { redirect: 'manual' });
    const location = res.headers.get('location');
    if (location && location.startsWith(redirectUrl.split('?')[0])) return location;
    if (opts.prompt) return opts.prompt(url);
    throw new McpAuthError(
      'the authorization server asks for an interactive sign-in: run pcds mcp-login in a terminal and paste the URL the browser comes back to',
    );
  };
  const provider: OAuthClientProvider = {
    get redirectUrl() {
      return redirectUrl;
    },
    get clientMetadata(): OAuthClientMetadata {
      return {
        client_name: 'pcds-orchestrator worker',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        ...(opts.scope ? { scope: opts.scope } : {}),
      };
    },
    clientInformation: () => client,
    saveClientInformation: (info) => {
      client = info;
    },
    tokens: () => tokens,
    saveTokens: (t) => {
      tokens = t;
    },
    saveCodeVerifier: (v) => {
      verifier = v;
    },
    codeVerifier: () => verifier,
    redirectToAuthorization: async (url) => {
      code = codeOf(await (opts.authorize ?? follow)(url));
    },
  };
  const first = await auth(provider, {
    serverUrl,
    ...(opts.scope ? { scope: opts.scope } : {}),
  });
  if (first === 'REDIRECT') {
    if (!code) throw new McpAuthError('the authorization gave no code');
    await auth(provider, { serverUrl, authorizationCode: code });
  }
  if (!tokens || !client) throw new McpAuthError('the sign-in ended without tokens');
  const resource = await discoverOAuthProtectedResourceMetadata(serverUrl);
  const asUrl = resource.authorization_servers?.[0] ?? new URL('/', serverUrl).toString();
  const metadata: AuthorizationServerMetadata | undefined =
    await discoverAuthorizationServerMetadata(asUrl);
  if (!metadata?.token_endpoint)
    throw new McpAuthError('the authorization server states no token endpoint');
  const grant = grantFrom(
    {
      clientId: client.client_id,
      tokenEndpoint: metadata.token_endpoint,
      issuer: metadata.issuer,
      resource: resource.resource,
    },
    tokens,
    Date.now(),
  );
  await opts.file.withLock(async () => {
    const content = await opts.file.read();
    content.grants[opts.keyId] = grant;
    await opts.file.write(content);
  });
  return { ...(grant.scope ? { scope: grant.scope } : {}), path: opts.file.path };
}
