// `pcds mcp --transport http`: the assistant server over Streamable HTTP, stateless (one MCP
// server per request, answers as JSON). Before a request reaches MCP, its Host and Origin must
// name this server (DNS rebinding) and it must carry one of the bearer tokens, which names the
// caller the tools act for.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  createBoundedServer,
  listenerLimits,
  type ListenerLimits,
} from '../http/listener-limits.js';
import { allowedHosts, bearerCaller, type McpCaller, type McpToken } from './access.js';

export interface PcdsMcpHttp {
  url: string;
  close(): Promise<void>;
}

export interface PcdsMcpHttpOptions {
  /** The bearer tokens accepted; at least one. */
  tokens: readonly McpToken[];
  host?: string;
  port?: number;
  path?: string;
  /** Host names (`name` or `name:port`) accepted beside loopback and `host`. */
  allowedHosts?: string[];
  /** Header and request deadlines and the connection limit (PCDS_LISTEN_*); defaults otherwise. */
  limits?: Partial<ListenerLimits>;
}

const REALM = 'Bearer realm="pcds-mcp"';

const rpcError = (message: string) =>
  JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message } });

export async function startPcdsMcpHttp(
  newServer: (caller: McpCaller) => McpServer,
  opts: PcdsMcpHttpOptions,
): Promise<PcdsMcpHttp> {
  if (opts.tokens.length === 0) throw new Error('the MCP HTTP transport needs a token');
  const path = opts.path ?? '/mcp';
  const listenHost = opts.host ?? '127.0.0.1';
  // Checked before listening (a bad entry is a configuration error); bound to the port after.
  let names = allowedHosts({ listenHost, port: opts.port ?? 8790, extra: opts.allowedHosts });
  const http: Server = createBoundedServer(listenerLimits(opts.limits), (req, res) => {
    const reply = (status: number, body: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
    // Host first: a page reaching us under a rebound name learns nothing, not even the path.
    if (!names.host(req.headers.host)) return reply(403, rpcError('The Host is not allowed.'));
    if (!names.origin(req.headers.origin))
      return reply(403, rpcError('The Origin is not allowed.'));
    if ((req.url ?? '').split('?')[0] !== path) return reply(404, rpcError(`POST ${path}`));
    const caller = bearerCaller(opts.tokens, req.headers.authorization);
    if (typeof caller === 'string')
      return reply(401, rpcError('A valid bearer token is required.'), {
        'www-authenticate': caller === 'missing' ? REALM : `${REALM}, error="invalid_token"`,
      });
    if (req.method !== 'POST')
      return reply(405, rpcError('POST JSON-RPC messages; no event stream is opened.'), {
        allow: 'POST',
      });
    const server = newServer(caller);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) reply(500, rpcError('The request failed.'));
      });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(opts.port ?? 8790, listenHost, () => resolve());
  });
  const addr = http.address() as AddressInfo;
  names = allowedHosts({ listenHost, port: addr.port, extra: opts.allowedHosts });
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
