// The addresses of the MCP endpoint as seen by a request: the service's base URL (from the
// request's host, so it holds behind any port or proxy) and the protected resource (RFC 8707,
// RFC 9728) that access tokens are bound to.
import type { FastifyRequest } from 'fastify';

export function baseUrlOf(req: FastifyRequest): string {
  return `${req.protocol}://${req.headers.host ?? 'localhost'}`;
}

/** The resource identifier of the MCP endpoint (also the one of /mcp/message and /mcp/status). */
export function resourceOf(req: FastifyRequest): string {
  return `${baseUrlOf(req)}/mcp`;
}
