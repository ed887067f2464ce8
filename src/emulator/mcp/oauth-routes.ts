// The OAuth endpoints of the MCP surface: dynamic client registration, the authorization-code
// flow with PKCE (S256) and the token endpoint (authorization_code and rotating refresh_token).
// This is an emulator for local development: /mcp/oauth/authorize shows no consent page; it
// approves at once and issues the code for the emulator's development key.
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { MCP_SCOPES, type McpScope } from '../../contract/index.js';
import type { EmulatorContext } from '../context.js';
import type { OAuthError, OAuthStore } from './oauth-store.js';
import { resourceOf } from './resource.js';

export const REGISTRATION_PATH = '/mcp/oauth/register';

const absoluteUrl = z.string().refine(
  (v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'https:' || u.protocol === 'http:') && u.hash === '';
    } catch {
      return false;
    }
  },
  { message: 'must be an absolute http(s) URL without a fragment' },
);

// RFC 7591 lets clients send further metadata; what this server does not use is ignored.
const registration = z.looseObject({
  redirect_uris: z.array(absoluteUrl).min(1, { message: 'needs at least one URL' }),
  client_name: z.string().max(200).optional(),
  token_endpoint_auth_method: z
    .literal('none', { message: 'must be none (public clients)' })
    .optional(),
});

/** Scopes from a space-separated list; undefined when one is unknown. Absent means all. */
export function parseScopes(raw: unknown): McpScope[] | undefined {
  if (raw === undefined || raw === '') return [...MCP_SCOPES];
  if (typeof raw !== 'string') return undefined;
  const asked = raw.split(/\s+/).filter(Boolean);
  if (!asked.every((s) => (MCP_SCOPES as readonly string[]).includes(s))) return undefined;
  return [...new Set(asked)] as McpScope[];
}

const str = (v: unknown): string | undefined =>
  typeof v === 'string' && v.length > 0 ? v : undefined;

function oauthError(
  reply: FastifyReply,
  status: number,
  e: OAuthError | { error: string; error_description: string },
) {
  return reply.code(status).header('cache-control', 'no-store').send(e);
}

export function registerOAuthRoutes(
  root: FastifyInstance,
  ctx: EmulatorContext,
  store: OAuthStore,
): void {
  void root.register(async (app) => {
    // OAuth clients read RFC 6749 / RFC 7591 error bodies, not the HTTP API's envelope, and
    // the message never echoes what was sent.
    app.setErrorHandler((err: FastifyError, _req, reply) => {
      const status = err.statusCode ?? 500;
      if (status >= 500)
        return oauthError(reply, 500, {
          error: 'server_error',
          error_description: 'An internal error occurred.',
        });
      return oauthError(reply, status === 413 || status === 415 ? status : 400, {
        error: 'invalid_request',
        error_description:
          status === 415
            ? 'The body must be application/json or application/x-www-form-urlencoded.'
            : status === 413
              ? 'The body is too large.'
              : 'The body could not be read.',
      });
    });
    registerOAuthEndpoints(app, ctx, store);
  });
}

function registerOAuthEndpoints(
  app: FastifyInstance,
  ctx: EmulatorContext,
  store: OAuthStore,
): void {
  app.post(REGISTRATION_PATH, async (req, reply) => {
    const r = registration.safeParse(req.body ?? {});
    if (!r.success) {
      const redirect = r.error.issues.some((i) => i.path[0] === 'redirect_uris');
      return oauthError(reply, 400, {
        error: redirect ? 'invalid_redirect_uri' : 'invalid_client_metadata',
        error_description: r.error.issues
          .map((i) => `${i.path.join('.') || 'body'} ${i.message}`)
          .join('; '),
      });
    }
    const client = store.register(r.data.redirect_uris, r.data.client_name);
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .send({
        client_id: client.clientId,
        client_id_issued_at: Math.floor(client.createdAt / 1000),
        ...(client.clientName ? { client_name: client.clientName } : {}),
        redirect_uris: client.redirectUris,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      });
  });

  app.get('/mcp/oauth/authorize', async (req, reply) => {
    const q = req.query as Record<string, unknown>;
    const clientId = str(q.client_id);
    const client = clientId ? store.client(clientId) : undefined;
    // Without a known client and one of its redirect URIs nothing is redirected (no open redirect).
    if (!client) {
      return oauthError(reply, 400, {
        error: 'invalid_client',
        error_description: `client_id is ${clientId ? 'not registered' : 'required'}; register at ${REGISTRATION_PATH}.`,
      });
    }
    const asked = str(q.redirect_uri);
    const redirectUri =
      asked ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
    if (!redirectUri || !client.redirectUris.includes(redirectUri)) {
      return oauthError(reply, 400, {
        error: 'invalid_request',
        error_description: asked
          ? 'redirect_uri is not registered for this client.'
          : 'redirect_uri is required (the client registered several).',
      });
    }
    const back = (params: Record<string, string>) => {
      const url = new URL(redirectUri);
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      const state = str(q.state);
      if (state) url.searchParams.set('state', state);
      return reply.redirect(url.toString(), 302);
    };
    const refuse = (error: string, error_description: string) => back({ error, error_description });

    if (q.response_type !== undefined && q.response_type !== 'code')
      return refuse('unsupported_response_type', 'response_type must be code.');
    const challenge = str(q.code_challenge);
    if (!challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge))
      return refuse(
        'invalid_request',
        'code_challenge is required: the base64url SHA-256 of the code_verifier (PKCE S256).',
      );
    // S256 is the only method; an absent method is read as S256 (the metadata advertises only it).
    if (q.code_challenge_method !== undefined && q.code_challenge_method !== 'S256')
      return refuse('invalid_request', 'code_challenge_method must be S256.');
    const scopes = parseScopes(q.scope);
    if (!scopes || scopes.length === 0)
      return refuse('invalid_scope', `scope must list some of: ${MCP_SCOPES.join(' ')}.`);
    // RFC 8707: the token will be good at one resource, this server's MCP endpoint.
    const resource = resourceOf(req);
    if (q.resource !== undefined && q.resource !== resource)
      return refuse('invalid_target', `resource must be ${resource}.`);
    const devKey = ctx.keys.get(ctx.devKeyId);
    if (!devKey) return refuse('access_denied', 'The development key no longer exists.');
    const code = store.issueCode(
      { keyId: devKey.id, clientId: client.clientId, scopes, resource },
      redirectUri,
      challenge,
    );
    return back({ code });
  });

  app.post('/mcp/oauth/token', async (req, reply) => {
    const b = (req.body && typeof req.body === 'object' ? req.body : {}) as Record<string, unknown>;
    const clientId = str(b.client_id);
    if (!clientId)
      return oauthError(reply, 400, {
        error: 'invalid_request',
        error_description: 'client_id is required.',
      });
    if (!store.client(clientId))
      return oauthError(reply, 401, {
        error: 'invalid_client',
        error_description: 'client_id is not registered.',
      });
    let issued;
    if (b.grant_type === 'authorization_code') {
      const code = str(b.code);
      if (!code)
        return oauthError(reply, 400, {
          error: 'invalid_request',
          error_description: 'code is required.',
        });
      issued = store.redeemCode(
        code,
        clientId,
        str(b.redirect_uri),
        str(b.code_verifier),
        str(b.resource),
      );
    } else if (b.grant_type === 'refresh_token') {
      const refreshToken = str(b.refresh_token);
      if (!refreshToken)
        return oauthError(reply, 400, {
          error: 'invalid_request',
          error_description: 'refresh_token is required.',
        });
      const scopes = b.scope === undefined ? undefined : parseScopes(b.scope);
      if (b.scope !== undefined && !scopes)
        return oauthError(reply, 400, {
          error: 'invalid_scope',
          error_description: `scope must list some of: ${MCP_SCOPES.join(' ')}.`,
        });
      issued = store.rotate(refreshToken, clientId, scopes, str(b.resource));
    } else {
      return oauthError(reply, 400, {
        error: 'unsupported_grant_type',
        error_description: 'grant_type must be authorization_code or refresh_token.',
      });
    }
    if ('error' in issued) return oauthError(reply, 400, issued);
    return reply.code(200).header('cache-control', 'no-store').send(issued);
  });
}
