// The MCP endpoint of the emulated service: JSON-RPC 2.0 on POST /mcp and /mcp/message, the
// legacy GET /mcp/status, discovery and OAuth. The handshake and listings (initialize,
// tools/list, resources/list, prompts/list) need no credentials: they reveal no more than the
// public manifest. Tool execution (tools/call, check_status) and /mcp/status need a key pair or
// an access token.
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
import { SERVER_NAME, baseUrlOf, registerDiscoveryRoutes } from './discovery.js';
import { readMessage, rpcResult, type RpcReply, type RpcRequest } from './json-rpc.js';
import { OAuthStore } from './oauth-store.js';
import { registerOAuthRoutes } from './oauth-routes.js';
import { McpToolCalls, type ToolReply } from './tool-calls.js';
import { TOOLS } from './tools.js';

const listChangedFalse = { listChanged: false };

function answer(req: FastifyRequest, reply: FastifyReply, r: ToolReply): FastifyReply {
  if ('drop' in r) {
    reply.hijack();
    req.raw.socket.destroy();
    return reply;
  }
  // Missing or refused credentials: tell an OAuth client where to sign in (RFC 9728).
  if ('error' in r && r.error.code === -32001)
    reply.header('www-authenticate', wwwAuthenticate(baseUrlOf(req)));
  return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(r);
}

function handshake(request: RpcRequest): RpcReply {
  switch (request.method) {
    case 'initialize':
      return rpcResult(request.id, {
        protocolVersion: MCP_PROTOCOL_VERSION,
        capabilities: {
          prompts: listChangedFalse,
          resources: listChangedFalse,
          tools: listChangedFalse,
        },
        serverInfo: { name: SERVER_NAME, version: MCP_SERVER_VERSION },
      });
    case 'tools/list':
      return rpcResult(request.id, { tools: TOOLS });
    case 'resources/list':
      return rpcResult(request.id, { resources: [] });
    default:
      return rpcResult(request.id, { prompts: [] });
  }
}

export function registerMcpRoutes(app: FastifyInstance, ctx: EmulatorContext): void {
  const scale = ctx.opts.timeScale;
  const lifetimes = ctx.opts.mcpOAuth;
  const oauth = new OAuthStore({
    accessMs: lifetimes.accessTokenTtlMs * scale,
    refreshMs: lifetimes.refreshTokenTtlMs * scale,
    codeMs: lifetimes.authorizationCodeTtlMs * scale,
  });
  const tools = new McpToolCalls(ctx, oauth);

  // JSON-RPC needs its own body reading: a malformed body is a -32700 reply, not an HTTP 400.
  void app.register(async (rpc) => {
    rpc.removeAllContentTypeParsers();
    rpc.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const read = readMessage(typeof req.body === 'string' ? req.body : '');
      if (read.kind === 'notification') return reply.code(202).send();
      if (read.kind === 'error') return answer(req, reply, read.reply);
      const { request } = read;
      if (request.method !== 'tools/call') return answer(req, reply, handshake(request));
      return answer(req, reply, await tools.call(req, request.id, request.params));
    };
    rpc.post('/mcp', handler);
    rpc.post('/mcp/message', handler);
  });

  app.get('/mcp/status', async (req, reply) => {
    const flat = (status: number, doc: Record<string, unknown>) =>
      reply.code(status).header('content-type', 'application/json; charset=utf-8').send(doc);
    const send = (r: Refusal) => {
      if (r.kind === 'drop') {
        reply.hijack();
        req.raw.socket.destroy();
        return reply;
      }
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
