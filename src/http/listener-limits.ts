// The bounds every HTTP listener of the project keeps (the MCP transport, the webhook receiver,
// the codec server, the metrics endpoint): a client has so long to send its headers and its whole
// request, and only so many connections are open at once. Without them a client that trickles
// its headers a byte at a time holds a connection (and its buffer) for ever, and a few hundred
// such clients hold the process. Node enforces them; this module only sets them, in one place.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface ListenerLimits {
  /** The request's headers must be complete this long after its first byte (or the connection). */
  headersMs: number;
  /** The whole request, body included, must have arrived this long after its first byte. */
  requestMs: number;
  /** Connections open at once; one more is closed as it arrives. */
  maxConnections: number;
}

export const DEFAULT_LISTENER_LIMITS: Readonly<ListenerLimits> = {
  headersMs: 10_000,
  requestMs: 30_000,
  maxConnections: 256,
};

/**
 * How often Node looks for requests past their deadlines: a slow client is cut off at most this
 * long after its deadline (Node's default, 30 s, would let it hold on that much longer).
 */
const CHECK_EVERY_MS = 1_000;

/** The limits with what `given` sets in place of the defaults (`base`). */
export function listenerLimits(
  given: Partial<ListenerLimits> = {},
  base: Readonly<ListenerLimits> = DEFAULT_LISTENER_LIMITS,
): ListenerLimits {
  const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  const limits = { ...base, ...defined };
  // Node requires the header deadline to be no later than the request's.
  return { ...limits, headersMs: Math.min(limits.headersMs, limits.requestMs) };
}

/** An HTTP server that keeps the limits (Fastify takes it through `serverFactory`). */
export function createBoundedServer(
  limits: ListenerLimits,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  const server = createServer(
    {
      headersTimeout: limits.headersMs,
      requestTimeout: limits.requestMs,
      connectionsCheckingInterval: CHECK_EVERY_MS,
    },
    handler,
  );
  server.maxConnections = limits.maxConnections;
  return server;
}
