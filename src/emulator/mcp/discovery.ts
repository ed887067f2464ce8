// The documents a client reads before it has credentials: the tool manifest (GET /mcp), MCP
// discovery (/.well-known/mcp) and the OAuth metadata of RFC 8414 and RFC 9728. Addresses are
// built from the request's host, so they hold behind any port or proxy.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  MCP_MANIFEST_VERSION,
  MCP_PROTOCOL_VERSION,
  MCP_SCOPES,
  MCP_SERVER_VERSION,
} from '../../contract/index.js';
import { REGISTRATION_PATH } from './oauth-routes.js';
import { baseUrlOf, resourceOf } from './resource.js';
import { TOOLS } from './tools.js';

export const SERVER_NAME = 'pcds-emulator';

function oauthEndpoints(base: string) {
  return {
    authorization_url: `${base}/mcp/oauth/authorize`,
    token_url: `${base}/mcp/oauth/token`,
    registration_url: `${base}${REGISTRATION_PATH}`,
    scopes: [...MCP_SCOPES],
  };
}

/** The tool manifest (GET /mcp and /mcp/message to a JSON request). */
export function sendManifest(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const base = baseUrlOf(req);
  return reply.code(200).send({
    name: SERVER_NAME,
    version: MCP_MANIFEST_VERSION,
    server: { name: SERVER_NAME, version: MCP_SERVER_VERSION },
    protocol_version: MCP_PROTOCOL_VERSION,
    endpoint: `${base}/mcp`,
    authentication: {
      api_key: { headers: ['X-API-Key', 'X-API-Secret'] },
      oauth: oauthEndpoints(base),
    },
    tools: TOOLS,
  });
}

export function registerDiscoveryRoutes(app: FastifyInstance): void {
  app.get('/.well-known/mcp', async (req) => {
    const base = baseUrlOf(req);
    return {
      name: SERVER_NAME,
      version: MCP_SERVER_VERSION,
      protocol_version: MCP_PROTOCOL_VERSION,
      endpoints: {
        message: `${base}/mcp`,
        message_alternate: `${base}/mcp/message`,
        manifest: `${base}/mcp`,
        status: `${base}/mcp/status`,
      },
      capabilities: { prompts: {}, resources: {}, tools: { count: TOOLS.length } },
      authentication: {
        api_key: { headers: ['X-API-Key', 'X-API-Secret'] },
        oauth: {
          ...oauthEndpoints(base),
          authorization_server_metadata: `${base}/.well-known/oauth-authorization-server`,
          protected_resource_metadata: `${base}/.well-known/oauth-protected-resource`,
        },
      },
    };
  });

  app.get('/.well-known/oauth-authorization-server', async (req) => {
    const base = baseUrlOf(req);
    return {
      issuer: base,
      authorization_endpoint: `${base}/mcp/oauth/authorize`,
      token_endpoint: `${base}/mcp/oauth/token`,
      registration_endpoint: `${base}${REGISTRATION_PATH}`,
      scopes_supported: [...MCP_SCOPES],
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
    };
  });

  // MCP clients also ask at the resource's own path (RFC 9728 section 3.1).
  for (const path of [
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/mcp',
  ]) {
    app.get(path, async (req) => {
      const base = baseUrlOf(req);
      return {
        resource: resourceOf(req),
        authorization_servers: [base],
        scopes_supported: [...MCP_SCOPES],
        bearer_methods_supported: ['header'],
        resource_name: 'Person and Company Data Service (emulated) MCP endpoint',
      };
    });
  }
}
