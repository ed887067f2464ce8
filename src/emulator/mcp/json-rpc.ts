// JSON-RPC 2.0 framing of the MCP endpoint: reading one request from a body, and the reply
// objects. The interface fixes the shape (integer `code`, string `message`) but shows no code
// values, so the standard JSON-RPC codes are used, plus server codes in -32000..-32099 for the
// service's own refusals (each carrying the service's error code under `data.code`).
export const RPC_PARSE_ERROR = -32700;
export const RPC_INVALID_REQUEST = -32600;
export const RPC_INVALID_PARAMS = -32602;
export const RPC_INTERNAL_ERROR = -32603;

/**
 * Thrown from an MCP server handler: the SDK turns `code`, `message` and `data` into the error.
 * The one error class that is not a PcdsError: it is the emulated service's JSON-RPC error on the
 * wire, whose `code` the SDK reads as a JSON-RPC number (the service's code is in `data.code`).
 */
export class RpcFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Server codes for refusals the HTTP API answers with these statuses. */
const SERVER_CODES: Readonly<Record<number, number>> = {
  401: -32001,
  402: -32002,
  403: -32003,
  404: -32004,
  429: -32029,
  503: -32050,
};

export function serverErrorCode(httpStatus: number): number {
  return SERVER_CODES[httpStatus] ?? RPC_INTERNAL_ERROR;
}

export type RpcId = string | number;

export interface RpcRequest {
  id: RpcId;
  method: string;
  params: Record<string, unknown>;
}

export interface RpcError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

export type RpcReply =
  | { jsonrpc: '2.0'; id: RpcId | null; result: Record<string, unknown> }
  | { jsonrpc: '2.0'; id: RpcId | null; error: RpcError };

export const rpcResult = (id: RpcId, result: Record<string, unknown>): RpcReply => ({
  jsonrpc: '2.0',
  id,
  result,
});

export const rpcError = (id: RpcId | null, error: RpcError): RpcReply => ({
  jsonrpc: '2.0',
  id,
  error,
});

/**
 * A body read as one message: a request (answered by the MCP server), a notification or a
 * client's response to the server (no reply is due), or a reply-ready framing error (the id is
 * echoed when it could be read). Method names are not judged here: the MCP server answers an
 * unknown one with -32601.
 */
export type ReadMessage =
  | { kind: 'request'; message: Record<string, unknown>; request: RpcRequest }
  | { kind: 'notification' | 'response'; message: Record<string, unknown> }
  | { kind: 'error'; reply: RpcReply };

const isId = (v: unknown): v is RpcId =>
  typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v));

export function readMessage(body: string): ReadMessage {
  let msg: unknown;
  try {
    msg = JSON.parse(body);
  } catch {
    return {
      kind: 'error',
      reply: rpcError(null, { code: RPC_PARSE_ERROR, message: 'The body is not valid JSON.' }),
    };
  }
  if (Array.isArray(msg)) {
    return invalid(null, 'Batches are not supported; send one JSON-RPC message per POST.');
  }
  if (typeof msg !== 'object' || msg === null) {
    return invalid(null, 'The body must be a JSON-RPC message object.');
  }
  const m = msg as Record<string, unknown>;
  const id = isId(m.id) ? m.id : null;
  if (m.jsonrpc !== '2.0') return invalid(id, 'jsonrpc must be "2.0".');
  if (m.method === undefined && isId(m.id) && ('result' in m || 'error' in m)) {
    return { kind: 'response', message: m };
  }
  if (typeof m.method !== 'string' || m.method === '') {
    return invalid(id, 'method is required and must be a string.');
  }
  if (
    m.params !== undefined &&
    (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params))
  ) {
    return {
      kind: 'error',
      reply: rpcError(id, { code: RPC_INVALID_PARAMS, message: 'params must be an object.' }),
    };
  }
  // A message without an id is a notification (e.g. notifications/initialized).
  if (m.id === undefined) return { kind: 'notification', message: m };
  if (!isId(m.id)) return invalid(null, 'id must be a string or an integer.');
  return {
    kind: 'request',
    message: m,
    request: {
      id: m.id,
      method: m.method,
      params: (m.params as Record<string, unknown> | undefined) ?? {},
    },
  };
}

const invalid = (id: RpcId | null, message: string): ReadMessage => ({
  kind: 'error',
  reply: rpcError(id, { code: RPC_INVALID_REQUEST, message }),
});
