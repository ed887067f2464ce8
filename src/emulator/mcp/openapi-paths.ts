// The MCP endpoint's part of the OpenAPI document: the JSON-RPC message endpoint with its two
// security options as alternatives (key pair or OAuth), the legacy status route, discovery and
// the OAuth endpoints.
import { MCP_METHODS, MCP_SCOPES } from '../../contract/index.js';
import { REGISTRATION_PATH } from './oauth-routes.js';

const json = (description: string, schema: Record<string, unknown> = { type: 'object' }) => ({
  description,
  content: { 'application/json': { schema } },
});

const rpcRequest = {
  type: 'object',
  required: ['jsonrpc', 'id', 'method'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer'] },
    method: { type: 'string', enum: [...MCP_METHODS] },
    params: { type: 'object' },
  },
};

const rpcResponse = {
  type: 'object',
  required: ['jsonrpc', 'id'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer', 'null'] },
    result: { type: 'object' },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'integer' },
        message: { type: 'string' },
        data: { type: 'object' },
      },
    },
  },
};

/** Key pair or OAuth token: alternatives, as the interface states. */
export const MCP_SECURITY = [{ apiKey: [], apiSecret: [] }, { mcpOAuth: [...MCP_SCOPES] }];

export function mcpOAuthScheme(): Record<string, unknown> {
  return {
    type: 'oauth2',
    flows: {
      authorizationCode: {
        authorizationUrl: '/mcp/oauth/authorize',
        tokenUrl: '/mcp/oauth/token',
        refreshUrl: '/mcp/oauth/token',
        scopes: {
          'svc.read': 'read person profiles',
          'svc.search': 'search people',
          'svc.answer': 'ask questions about profiles',
        },
      },
    },
  };
}

export function mcpOpenApiPaths(): Record<string, unknown> {
  const message = {
    post: {
      tags: ['mcp'],
      summary:
        'MCP JSON-RPC 2.0 message (initialize, tools/list, tools/call, resources/list, prompts/list)',
      security: MCP_SECURITY,
      requestBody: { required: true, content: { 'application/json': { schema: rpcRequest } } },
      responses: {
        '200': json(
          'JSON-RPC response: result or error (integer code, string message)',
          rpcResponse,
        ),
        '202': { description: 'A notification was accepted; no body' },
      },
    },
  };
  const discovery = (summary: string) => ({
    get: { tags: ['mcp'], summary, security: [], responses: { '200': json(summary) } },
  });
  return {
    '/mcp': {
      ...message,
      get: {
        tags: ['mcp'],
        summary: 'Tool manifest (date-shaped version)',
        security: [],
        responses: { '200': json('Tool manifest') },
      },
    },
    '/mcp/message': message,
    '/mcp/status': {
      get: {
        tags: ['mcp'],
        summary: 'Legacy status route: pending, completed or error',
        security: MCP_SECURITY,
        parameters: [
          { name: 'request_id', in: 'query', required: true, schema: { type: 'string' } },
          { name: 'endpoint', in: 'query', schema: { type: 'string' } },
        ],
        responses: {
          '200': json('Status document'),
          '401': json('No or invalid credentials'),
          '404': json('request_not_found'),
        },
      },
    },
    '/.well-known/mcp': discovery('MCP discovery'),
    '/.well-known/oauth-authorization-server': discovery('OAuth authorization server metadata'),
    '/.well-known/oauth-protected-resource': discovery('OAuth protected resource metadata'),
    '/mcp/oauth/authorize': {
      get: {
        tags: ['mcp'],
        summary: 'Authorization (PKCE S256); the emulator approves at once for its development key',
        security: [],
        responses: { '302': { description: 'Redirect with code and state, or with error' } },
      },
    },
    '/mcp/oauth/token': {
      post: {
        tags: ['mcp'],
        summary: 'Token endpoint: authorization_code or refresh_token (rotating)',
        security: [],
        responses: { '200': json('Tokens'), '400': json('OAuth error') },
      },
    },
    [REGISTRATION_PATH]: {
      post: {
        tags: ['mcp'],
        summary: 'Dynamic client registration (public clients)',
        security: [],
        responses: { '201': json('Registered client'), '400': json('OAuth error') },
      },
    },
  };
}
