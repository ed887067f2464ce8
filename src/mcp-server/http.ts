// `pcds mcp --transport http`: the assistant server over Streamable HTTP, stateless (one MCP
// server per request, answers as JSON). It listens on loopback by default and refuses requests
// from a foreign browser Origin, so a web page cannot drive it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isForeignOrigin } from '../http/origin.js';

export interface PcdsMcpHttp {
  url: string;
  close(): Promise<void>;
}

const rpcError = (message: string) =>
  JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message } });

export async function startPcdsMcpHttp(
  newServer: () => McpServer,
  opts: { host?: string; port?: number; path?: string } = {},
): Promise<PcdsMcpHttp> {
  const path = opts.path ?? '/mcp';
  const http: Server = createServer((req, res) => {
    const reply = (status: number, body: string, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(body);
    if ((req.url ?? '').split('?')[0] !== path) return reply(404, rpcError(`POST ${path}`));
    if (isForeignOrigin(req.headers.origin, req.headers.host))
      return reply(403, rpcError('The Origin is not allowed.'));
    if (req.method !== 'POST')
      return reply(405, rpcError('POST JSON-RPC messages; no event stream is opened.'), {
        allow: 'POST',
      });
    const server = newServer();
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
    http.listen(opts.port ?? 8790, opts.host ?? '127.0.0.1', () => resolve());
  });
  const addr = http.address() as AddressInfo;
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
