// Typed errors of the HTTP layer: a request that got no reply (TransportError, with whether the
// service may have received it) and a synchronous call the service refused (ServiceError), both
// PcdsErrors with a code of the taxonomy.
import { PcdsError, type PcdsErrorCode } from '../contract/index.js';

/**
 * Where a transport failure happened. `connect`: the request never left this process (refused,
 * DNS, connect timeout), so repeating it is always safe. `after_send`: the request may have
 * reached the service (socket closed, reply timeout), so repeating a submit could create a
 * second billable job.
 */
export type TransportPhase = 'connect' | 'after_send';

export class TransportError extends PcdsError {
  override name = 'TransportError';
  declare readonly code: 'transport_error';
  constructor(
    readonly phase: TransportPhase,
    /** The underlying error code (ECONNREFUSED, UND_ERR_HEADERS_TIMEOUT, ...): no request data. */
    readonly causeCode: string,
  ) {
    super(
      'transport_error',
      `${phase === 'connect' ? 'could not connect to the service' : 'no reply from the service'} (${causeCode})`,
    );
  }
}

/**
 * The service answered a synchronous call with a failure envelope or an unexpected body. A code
 * the interface does not document is `unknown_code` (the message names the code received).
 */
export class ServiceError extends PcdsError {
  override name = 'ServiceError';
  constructor(
    code: PcdsErrorCode,
    readonly httpStatus: number,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(code, message);
  }
}

// Errors raised before any byte was written to a connection.
const CONNECT_PHASE = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Turns whatever undici threw into a TransportError; unknown errors count as possibly sent. */
export function transportErrorOf(err: unknown): TransportError {
  if (err instanceof TransportError) return err;
  const code = errorCode(err) ?? 'unknown';
  return new TransportError(CONNECT_PHASE.has(code) ? 'connect' : 'after_send', code);
}

function errorCode(err: unknown): string | undefined {
  let e: unknown = err;
  // Node wraps socket errors (AggregateError for happy-eyeballs, `cause` chains): take the first code.
  for (let depth = 0; depth < 4 && e && typeof e === 'object'; depth++) {
    const rec = e as { code?: unknown; cause?: unknown; errors?: unknown[] };
    if (typeof rec.code === 'string' && rec.code !== 'UND_ERR') return rec.code;
    e = rec.cause ?? (Array.isArray(rec.errors) ? rec.errors[0] : undefined);
  }
  return undefined;
}

/** A request the MCP endpoint cannot serve (no tool for it): named, never sent. */
export class McpUnsupportedError extends PcdsError {
  override name = 'McpUnsupportedError';
  constructor(message: string) {
    super('mcp_unsupported', message);
  }
}
