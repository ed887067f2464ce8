// The OAuth state of the MCP endpoint: dynamically registered public clients, single-use
// authorization codes bound to a PKCE (S256) challenge, short-lived access tokens and rotating
// refresh tokens. Tokens are kept only as SHA-256 hashes, like the API keys' secrets.
import { createHash, randomBytes } from 'node:crypto';
import type { McpScope } from '../../contract/index.js';

export interface OAuthClient {
  clientId: string;
  clientName?: string;
  redirectUris: string[];
  createdAt: number;
}

/** What an access token grants: the key it acts for, its scopes and the resource (RFC 8707). */
export interface TokenGrant {
  keyId: string;
  clientId: string;
  scopes: McpScope[];
  resource: string;
}

export interface IssuedTokens {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface OAuthError {
  error:
    'invalid_request' | 'invalid_client' | 'invalid_grant' | 'invalid_scope' | 'invalid_target';
  error_description: string;
}

interface StoredCode extends TokenGrant {
  redirectUri: string;
  challenge: string;
  expiresAt: number;
  used: boolean;
  family: string;
}

interface StoredToken extends TokenGrant {
  expiresAt: number;
  family: string;
}

export interface OAuthLifetimes {
  accessMs: number;
  refreshMs: number;
  codeMs: number;
}

const hashOf = (token: string) => createHash('sha256').update(token).digest('base64url');
const token = (prefix: string) => `${prefix}_${randomBytes(24).toString('base64url')}`;

/** RFC 7636: 43-128 characters of the unreserved set. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}

const fail = (error: OAuthError['error'], error_description: string): OAuthError => ({
  error,
  error_description,
});

export class OAuthStore {
  private readonly clients = new Map<string, OAuthClient>();
  private readonly codes = new Map<string, StoredCode>();
  private readonly access = new Map<string, StoredToken>();
  private readonly refresh = new Map<string, StoredToken & { used: boolean }>();
  /** Families (one per authorization) revoked after a replayed code or refresh token. */
  private readonly revoked = new Set<string>();

  constructor(private readonly lifetimes: OAuthLifetimes) {}

  register(redirectUris: string[], clientName?: string): OAuthClient {
    const client: OAuthClient = {
      clientId: `mcp_client_${randomBytes(12).toString('hex')}`,
      ...(clientName ? { clientName } : {}),
      redirectUris,
      createdAt: Date.now(),
    };
    this.clients.set(client.clientId, client);
    return client;
  }

  client(clientId: string): OAuthClient | undefined {
    return this.clients.get(clientId);
  }

  issueCode(grant: TokenGrant, redirectUri: string, challenge: string, now = Date.now()): string {
    const code = token('mcp_code');
    this.codes.set(hashOf(code), {
      ...grant,
      redirectUri,
      challenge,
      expiresAt: now + this.lifetimes.codeMs,
      used: false,
      family: randomBytes(8).toString('hex'),
    });
    return code;
  }

  redeemCode(
    code: string,
    clientId: string,
    redirectUri: string | undefined,
    verifier: string | undefined,
    resource: string | undefined,
    now = Date.now(),
  ): IssuedTokens | OAuthError {
    const stored = this.codes.get(hashOf(code));
    if (!stored || stored.expiresAt <= now)
      return fail('invalid_grant', 'The authorization code is unknown or expired.');
    if (stored.used) {
      // A replayed code may be stolen: what it gave is withdrawn.
      this.revoked.add(stored.family);
      return fail('invalid_grant', 'The authorization code was already used.');
    }
    if (stored.clientId !== clientId)
      return fail('invalid_grant', 'The authorization code was issued to another client.');
    if (redirectUri !== undefined && redirectUri !== stored.redirectUri)
      return fail('invalid_grant', 'redirect_uri differs from the one of the authorization.');
    if (resource !== undefined && resource !== stored.resource)
      return fail('invalid_target', 'resource differs from the one of the authorization.');
    if (verifier === undefined) return fail('invalid_request', 'code_verifier is required.');
    if (!VERIFIER.test(verifier) || s256(verifier) !== stored.challenge)
      return fail('invalid_grant', 'code_verifier does not match the code_challenge.');
    stored.used = true;
    return this.issue(stored, stored.family, now);
  }

  rotate(
    refreshToken: string,
    clientId: string,
    scopes: McpScope[] | undefined,
    resource: string | undefined,
    now = Date.now(),
  ): IssuedTokens | OAuthError {
    const stored = this.refresh.get(hashOf(refreshToken));
    if (!stored || stored.expiresAt <= now || this.revoked.has(stored.family))
      return fail('invalid_grant', 'The refresh token is unknown, expired or revoked.');
    if (stored.used) {
      // Rotation: a refresh token works once. Its reuse signals theft, so the family ends.
      this.revoked.add(stored.family);
      return fail('invalid_grant', 'The refresh token was already used; sign in again.');
    }
    if (stored.clientId !== clientId)
      return fail('invalid_grant', 'The refresh token was issued to another client.');
    if (resource !== undefined && resource !== stored.resource)
      return fail('invalid_target', 'A refresh cannot move the grant to another resource.');
    if (scopes && !scopes.every((s) => stored.scopes.includes(s)))
      return fail('invalid_scope', 'A refresh cannot widen the granted scopes.');
    stored.used = true;
    return this.issue({ ...stored, scopes: scopes ?? stored.scopes }, stored.family, now);
  }

  /** The grant of a live access token, or undefined. */
  grantOf(accessToken: string, now = Date.now()): TokenGrant | undefined {
    const stored = this.access.get(hashOf(accessToken));
    if (!stored || stored.expiresAt <= now || this.revoked.has(stored.family)) return undefined;
    return {
      keyId: stored.keyId,
      clientId: stored.clientId,
      scopes: stored.scopes,
      resource: stored.resource,
    };
  }

  private issue(grant: TokenGrant, family: string, now: number): IssuedTokens {
    const base = {
      keyId: grant.keyId,
      clientId: grant.clientId,
      scopes: grant.scopes,
      resource: grant.resource,
      family,
    };
    const accessToken = token('mcp_at');
    const refreshToken = token('mcp_rt');
    this.access.set(hashOf(accessToken), { ...base, expiresAt: now + this.lifetimes.accessMs });
    this.refresh.set(hashOf(refreshToken), {
      ...base,
      expiresAt: now + this.lifetimes.refreshMs,
      used: false,
    });
    this.sweep(now);
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: Math.max(1, Math.ceil(this.lifetimes.accessMs / 1000)),
      refresh_token: refreshToken,
      scope: grant.scopes.join(' '),
    };
  }

  /** Expired entries go at each issue, so a long-running emulator does not grow. */
  private sweep(now: number): void {
    for (const m of [this.codes, this.access, this.refresh] as Map<string, { expiresAt: number }>[])
      for (const [k, v] of m) if (v.expiresAt <= now) m.delete(k);
  }
}
