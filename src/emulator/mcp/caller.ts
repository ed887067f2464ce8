// Who is calling the MCP endpoint: an OAuth access token (Authorization: Bearer) or the HTTP API's
// X-API-Key / X-API-Secret pair. A request with an Authorization header is judged by its token
// alone; a bearer made of the key pair is not a token, so it is refused like any unknown one.
import type { FastifyRequest } from 'fastify';
import { MCP_SCOPES, type McpScope } from '../../contract/index.js';
import { authenticateKeyPair, type Refusal } from '../access.js';
import type { EmulatorContext } from '../context.js';
import type { ApiKeyRecord } from '../keys.js';
import type { OAuthStore } from './oauth-store.js';
import { resourceOf } from './resource.js';

export interface McpCaller {
  key: ApiKeyRecord;
  /** The key pair grants every scope; a token grants what was authorized. */
  scopes: readonly McpScope[];
  via: 'key_pair' | 'oauth';
}

export type CallerResult = { ok: true; caller: McpCaller } | { ok: false; refusal: Refusal };

const BEARER = /^Bearer\s+(\S+)\s*$/i;

const refused = (code: string, message: string): CallerResult => ({
  ok: false,
  refusal: { kind: 'error', status: 401, code, message },
});

export function identifyCaller(
  ctx: EmulatorContext,
  oauth: OAuthStore,
  req: FastifyRequest,
): CallerResult {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const m = BEARER.exec(authorization);
    if (!m) {
      return refused(
        'invalid_credentials',
        'Authorization must be "Bearer <access token>" from /mcp/oauth/token.',
      );
    }
    const grant = oauth.grantOf(m[1]);
    const key = grant ? ctx.keys.get(grant.keyId) : undefined;
    // RFC 8707: a token is good only at the resource it was issued for.
    if (grant && grant.resource !== resourceOf(req)) {
      return refused(
        'invalid_credentials',
        'The access token was issued for another resource; sign in for this one.',
      );
    }
    if (!grant || !key) {
      return refused(
        'invalid_credentials',
        'The bearer token is not a live access token (expired, revoked or unknown). A bearer ' +
          'made of the API key and secret is not accepted: send X-API-Key and X-API-Secret instead.',
      );
    }
    return { ok: true, caller: { key, scopes: grant.scopes, via: 'oauth' } };
  }
  const pair = authenticateKeyPair(ctx, req);
  if (!pair.ok) return pair;
  return { ok: true, caller: { key: pair.key, scopes: MCP_SCOPES, via: 'key_pair' } };
}

/**
 * The header an OAuth client reads after a refusal (RFC 6750 section 3, RFC 9728 section 5.1):
 * where to find the authorization server, and why: `invalid_token` for missing, unknown or
 * expired credentials, `insufficient_scope` with the scopes that would do.
 */
export function wwwAuthenticate(
  baseUrl: string,
  why: { error: 'invalid_token' } | { error: 'insufficient_scope'; scope: string } = {
    error: 'invalid_token',
  },
): string {
  const scope = why.error === 'insufficient_scope' ? `, scope="${why.scope}"` : '';
  return (
    `Bearer error="${why.error}"${scope}, ` +
    `resource_metadata="${baseUrl}/.well-known/oauth-protected-resource"`
  );
}
