// The MCP endpoint of the emulated service: JSON-RPC 2.0 on POST /mcp and /mcp/message, served by
// the official MCP SDK (its Server and stateless Streamable HTTP transport, answering JSON), the
// manifest on GET, the legacy GET /mcp/status, discovery and OAuth. The handshake and listings
// (initialize, ping, tools/list, resources/list, prompts/list) need no credentials: they reveal
// no more than the public manifest. Tool execution (tools/call, check_status) and /mcp/status
// need a key pair or an access token; a refusal of those is an HTTP 401 or 403 an OAuth client
// acts on, with the JSON-RPC error inside.
import type { IncomingMessage } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CallToolRequestSchema,
  InitializeRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  MCP_DATA_TOOLS,
  MCP_PROTOCOL_VERSION,
  MCP_SERVER_VERSION,
  type McpTool,
} from '../../contract/index.js';
import type { Refusal } from '../access.js';
import type { EmulatorContext } from '../context.js';
import { wwwAuthenticate } from './caller.js';
import { SERVER_NAME, registerDiscoveryRoutes, sendManifest } from './discovery.js';
import {
  RPC_INVALID_REQUEST,
  RpcFailure,
  readMessage,
  rpcError,
  type RpcReply,
  RPC_INTERNAL_ERROR,
} from './json-rpc.js';
import { OAuthStore } from './oauth-store.js';
import { registerOAuthRoutes } from './oauth-routes.js';
import { baseUrlOf } from './resource.js';
import { McpToolCalls, refusalError, type ToolReply } from './tool-calls.js';
import { TOOLS } from './tools.js';
import { isForeignOrigin } from '../../http/origin.js';

const listChangedFalse = { listChanged: false };
const CAPABILITIES = {
  prompts: listChangedFalse,
  resources: listChangedFalse,
  tools: listChangedFalse,
};

/**
 * The MCP-Protocol-Version values a client may send: the version this server negotiates and the
 * older ones it can still be spoken to in (the header is absent before 2025-06-18).
 */
const ACCEPTED_VERSIONS = SUPPORTED_PROTOCOL_VERSIONS.filter((v) => v <= MCP_PROTOCOL_VERSION);

const JSON_TYPE = 'application/json; charset=utf-8';

function sendRpc(reply: FastifyReply, status: number, body: RpcReply): FastifyReply {
  return reply.code(status).header('content-type', JSON_TYPE).send(body);
}

function dropConnection(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.hijack();
  req.raw.socket.destroy();
  return reply;
}

/** A browser page of another site must not drive a local server (DNS rebinding). */
/** A JSON answer is acceptable: no Accept header, or one naming JSON or a wildcard for it. */
function acceptsJson(req: FastifyRequest): boolean {
  const accept = req.headers.accept;
  if (!accept) return true;
  return /(^|,)\s*(application\/json|application\/\*|\*\/\*)\s*(;|,|$)/i.test(accept);
}

/** One MCP server per request: the endpoint is stateless (no sessions), like the service's. */
function mcpServer(tools: McpToolCalls, req: FastifyRequest): Server {
  const server = new Server(
    { name: SERVER_NAME, version: MCP_SERVER_VERSION },
    { capabilities: CAPABILITIES },
  );
  // The interface fixes the protocol version this service reports, whatever a client offers.
  server.removeRequestHandler('initialize');
  server.setRequestHandler(InitializeRequestSchema, () => ({
    protocolVersion: MCP_PROTOCOL_VERSION,
    capabilities: CAPABILITIES,
    serverInfo: { name: SERVER_NAME, version: MCP_SERVER_VERSION },
  }));
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...TOOLS] }));
  server.setRequestHandler(ListResourcesRequestSchema, () => ({ resources: [] }));
  server.setRequestHandler(ListPromptsRequestSchema, () => ({ prompts: [] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const r = await tools.call(req, 0, request.params);
    if ('drop' in r) {
      req.raw.socket.destroy();
      throw new RpcFailure(RPC_INTERNAL_ERROR, 'The connection was dropped.');
    }
    if ('error' in r) throw new RpcFailure(r.error.code, r.error.message, r.error.data);
    return r.result;
  });
  return server;
}

export function registerMcpRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  const faster = ctx.opts.timeScale;
  const lifetimes = ctx.opts.mcpOAuth;
  const oauth = new OAuthStore({
    accessMs: lifetimes.accessTokenTtlMs / faster,
    refreshMs: lifetimes.refreshTokenTtlMs / faster,
    codeMs: lifetimes.authorizationCodeTtlMs / faster,
  });
  const tools = new McpToolCalls(ctx, oauth);

  const refuseHttp = (
    req: FastifyRequest,
    reply: FastifyReply,
    status: 401 | 403,
    r: ToolReply,
    scope?: string,
  ) => {
    if ('drop' in r) return dropConnection(req, reply);
    reply.header(
      'www-authenticate',
      status === 401
        ? wwwAuthenticate(baseUrlOf(req))
        : wwwAuthenticate(baseUrlOf(req), { error: 'insufficient_scope', scope: scope ?? '' }),
    );
    return sendRpc(reply, status, r);
  };

  // JSON-RPC needs its own body reading: a malformed body is a -32700 reply, not the envelope.
  void app.register(async (rpc) => {
    rpc.removeAllContentTypeParsers();
    rpc.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    rpc.setErrorHandler((err: { statusCode?: number }, _req, reply) => {
      const status = err.statusCode === 413 ? 413 : (err.statusCode ?? 500) >= 500 ? 500 : 400;
      return sendRpc(
        reply,
        status,
        rpcError(null, {
          code: status === 500 ? RPC_INTERNAL_ERROR : RPC_INVALID_REQUEST,
          message: status === 413 ? 'The body is too large.' : 'The request could not be read.',
        }),
      );
    });

    const post = async (req: FastifyRequest, reply: FastifyReply) => {
      if (isForeignOrigin(req.headers.origin, req.headers.host))
        return sendRpc(
          reply,
          403,
          rpcError(null, { code: RPC_INVALID_REQUEST, message: 'The Origin is not allowed.' }),
        );
      const version = req.headers['mcp-protocol-version'];
      if (typeof version === 'string' && !ACCEPTED_VERSIONS.includes(version))
        return sendRpc(
          reply,
          400,
          rpcError(null, {
            code: RPC_INVALID_REQUEST,
            message: `Unsupported MCP-Protocol-Version; this server speaks ${ACCEPTED_VERSIONS.join(', ')}.`,
          }),
        );
      const read = readMessage(typeof req.body === 'string' ? req.body : '');
      if (read.kind === 'error') return sendRpc(reply, 400, read.reply);
      const auth = req.headers.authorization;
      if (read.kind === 'request') {
        const { id, method, params } = read.request;
        if (method === 'tools/call') {
          const checked = tools.authorize(req, id, params);
          if (!checked.ok)
            return refuseHttp(
              req,
              reply,
              checked.status,
              checked.reply,
              checked.status === 403 ? checked.scope : undefined,
            );
        } else if (auth !== undefined) {
          // A token that is sent must be good even where none is needed: that is how an OAuth
          // client learns to refresh it before it calls a tool.
          const who = tools.identify(req);
          if (!who.ok) return refuseHttp(req, reply, 401, refusalError(id, who.refusal));
        }
      }
      // The transport asks for both JSON and event streams in Accept; this endpoint always
      // answers JSON, so a plain JSON-RPC client (Accept: application/json, or none) is served.
      if (acceptsJson(req)) req.raw.headers.accept = 'application/json, text/event-stream';
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
      });
      const server = mcpServer(tools, req);
      reply.hijack();
      try {
        await server.connect(transport);
        const raw = req.raw as IncomingMessage & { auth?: AuthInfo };
        await transport.handleRequest(raw, reply.raw, read.message);
      } finally {
        void transport.close();
        void server.close();
      }
      return reply;
    };

    rpc.post('/mcp', post);
    rpc.post('/mcp/message', post);
    // GET answers the manifest to a JSON request; this stateless endpoint opens no event
    // stream (MCP lets a server refuse it with 405). It has no sessions: DELETE is 405 too.
    for (const path of ['/mcp', '/mcp/message']) {
      rpc.get(path, async (req, reply) => {
        if (!acceptsJson(req))
          return sendRpc(
            reply.header('allow', 'GET, POST'),
            405,
            rpcError(null, {
              code: RPC_INVALID_REQUEST,
              message: 'This endpoint opens no event stream; POST JSON-RPC messages.',
            }),
          );
        return sendManifest(req, reply);
      });
    }
  });

  app.get('/mcp/status', async (req, reply) => {
    const flat = (status: number, doc: Record<string, unknown>) =>
      reply.code(status).header('content-type', JSON_TYPE).send(doc);
    const send = (r: Refusal) => {
      if (r.kind === 'drop') return dropConnection(req, reply);
      if (r.status === 401) reply.header('www-authenticate', wwwAuthenticate(baseUrlOf(req)));
      if (r.retryAfterSeconds !== undefined)
        reply.header('retry-after', String(r.retryAfterSeconds));
      return flat(r.status, { status: 'error', code: r.code, message: r.message });
    };
    const who = tools.identify(req);
    if (!who.ok) return send(who.refusal);
    const q = req.query as Record<string, unknown>;
    const requestId = q.request_id;
    if (typeof requestId !== 'string' || requestId === '')
      return flat(400, {
        status: 'error',
        code: 'invalid_request',
        message: 'request_id is required',
      });
    const endpoint = q.endpoint;
    if (endpoint !== undefined && !(MCP_DATA_TOOLS as readonly unknown[]).includes(endpoint))
      return flat(400, {
        status: 'error',
        code: 'invalid_request',
        message: `endpoint must be one of ${MCP_DATA_TOOLS.join(', ')}`,
      });
    const checked = tools.authorize(req, 0, {
      name: 'check_status',
      arguments: { request_id: requestId },
    });
    if (!checked.ok && checked.status === 403)
      reply.header(
        'www-authenticate',
        wwwAuthenticate(baseUrlOf(req), { error: 'insufficient_scope', scope: checked.scope }),
      );
    const r = await tools.status(
      req,
      who.caller,
      '/mcp/status',
      requestId,
      endpoint as McpTool | undefined,
    );
    if ('refusal' in r) return send(r.refusal);
    const { doc } = r;
    // The legacy route's terminal success value is `completed` where check_status says `complete`.
    if (doc.status === 'complete') return flat(200, { ...doc, status: 'completed' });
    if (doc.status === 'error' && doc.code === 'request_not_found') return flat(404, doc);
    return flat(200, doc);
  });

  registerDiscoveryRoutes(app);
  registerOAuthRoutes(app, ctx, oauth);
}
