// The MCP endpoint's part of the OpenAPI document: the JSON-RPC message endpoint with its two
// security options as alternatives (key pair or OAuth), the legacy status route, discovery and
// the OAuth endpoints.
import { MCP_DATA_TOOLS, MCP_METHODS, MCP_SCOPES } from '../../contract/index.js';
import { REGISTRATION_PATH } from './oauth-routes.js';

const json = (description: string, schema: Record<string, unknown> = { type: 'object' }) => ({
  description,
  content: { 'application/json': { schema } },
});

const rpcRequest = {
  type: 'object',
  additionalProperties: false,
  // Without an id it is a notification: accepted with 202 and no body.
  required: ['jsonrpc', 'method'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: { type: ['string', 'integer'] },
    // Any name is a JSON-RPC request; an unknown one is answered in a 200 with error -32601.
    method: { type: 'string', minLength: 1, examples: [...MCP_METHODS, 'ping'] },
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

const rpcError = (description: string) => json(description, rpcResponse);

const oauthError = (description: string) =>
  json(description, {
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string' }, error_description: { type: 'string' } },
  });

const message = (suffix: string) => ({
  get: {
    operationId: `mcp_manifest${suffix}`,
    tags: ['mcp'],
    summary: 'Tool manifest (date-shaped version); 405 to a request accepting only an event stream',
    security: [],
    responses: {
      '200': json('Tool manifest'),
      '405': rpcError('No event stream is opened; POST JSON-RPC messages'),
    },
  },
  post: {
    operationId: `mcp_message${suffix}`,
    tags: ['mcp'],
    summary:
      'MCP JSON-RPC 2.0 message (initialize, ping, tools/list, tools/call, resources/list, prompts/list)',
    description:
      'The handshake and listings need no credentials; tools/call needs the key pair or an access token.',
    // The key pair or an OAuth token, as alternatives; none for the handshake and listings.
    security: [...MCP_SECURITY, {}],
    requestBody: { required: true, content: { 'application/json': { schema: rpcRequest } } },
    responses: {
      '200': json('JSON-RPC response: result or error (integer code, string message)', rpcResponse),
      '202': { description: 'A notification or a response was accepted; no body' },
      '400': rpcError(
        'Malformed JSON, an invalid JSON-RPC message, a batch or an unsupported MCP-Protocol-Version',
      ),
      '401': rpcError('tools/call without credentials, or an invalid or expired access token'),
      '403': rpcError('The access token lacks the scope of the tool, or a foreign Origin'),
      '413': rpcError('The body is too large'),
      '415': rpcError('Content-Type is not application/json'),
    },
  },
});

export function mcpOpenApiPaths(): Record<string, unknown> {
  const discovery = (operationId: string, summary: string) => ({
    get: { operationId, tags: ['mcp'], summary, security: [], responses: { '200': json(summary) } },
  });
  return {
    '/mcp': message(''),
    '/mcp/message': message('_alternate'),
    '/mcp/status': {
      get: {
        operationId: 'mcp_status',
        tags: ['mcp'],
        summary: 'Legacy status route: pending, completed or error',
        security: MCP_SECURITY,
        parameters: [
          {
            name: 'request_id',
            in: 'query',
            required: true,
            schema: { type: 'string', minLength: 1 },
          },
          { name: 'endpoint', in: 'query', schema: { type: 'string', enum: [...MCP_DATA_TOOLS] } },
        ],
        responses: {
          '200': json('Status document'),
          '400': json('request_id missing or endpoint unknown'),
          '401': json('No or invalid credentials'),
          '402': json('insufficient_credits'),
          '403': json('Product, allow-list or scope refused'),
          '404': json('request_not_found'),
          '429': json('rate_limit_exceeded'),
          '503': json('service_unavailable'),
        },
      },
    },
    '/.well-known/mcp': discovery('mcp_discovery', 'MCP discovery'),
    '/.well-known/oauth-authorization-server': discovery(
      'oauth_authorization_server_metadata',
      'OAuth authorization server metadata',
    ),
    '/.well-known/oauth-protected-resource': discovery(
      'oauth_protected_resource_metadata',
      'OAuth protected resource metadata',
    ),
    '/mcp/oauth/authorize': {
      get: {
        operationId: 'oauth_authorize',
        tags: ['mcp'],
        summary: 'Authorization (PKCE S256); the emulator approves at once for its development key',
        security: [],
        responses: {
          '302': { description: 'Redirect with code and state, or with error' },
          '400': oauthError('Unknown client or redirect_uri: nothing is redirected'),
        },
      },
    },
    '/mcp/oauth/token': {
      post: {
        operationId: 'oauth_token',
        tags: ['mcp'],
        summary: 'Token endpoint: authorization_code or refresh_token (rotating)',
        security: [],
        responses: {
          '200': json('Tokens'),
          '400': oauthError('OAuth error (RFC 6749)'),
          '401': oauthError('invalid_client'),
          '413': oauthError('The body is too large'),
          '415': oauthError('Unsupported body type'),
        },
      },
    },
    [REGISTRATION_PATH]: {
      post: {
        operationId: 'oauth_register',
        tags: ['mcp'],
        summary: 'Dynamic client registration (public clients)',
        security: [],
        responses: {
          '201': json('Registered client'),
          '400': oauthError('Registration error (RFC 7591)'),
          '413': oauthError('The body is too large'),
          '415': oauthError('Unsupported body type'),
        },
      },
    },
  };
}
