// JSON-RPC 2.0 framing of the MCP endpoint: reading one request from a body, and the reply
// objects. The interface fixes the shape (integer `code`, string `message`) but shows no code
// values, so the standard JSON-RPC codes are used, plus server codes in -32000..-32099 for the
// service's own refusals (each carrying the service's error code under `data.code`).
import { MCP_METHODS } from '../../contract/index.js';

export const RPC_PARSE_ERROR = -32700;
export const RPC_INVALID_REQUEST = -32600;
export const RPC_METHOD_NOT_FOUND = -32601;
export const RPC_INVALID_PARAMS = -32602;
export const RPC_INTERNAL_ERROR = -32603;

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
export type McpMethod = (typeof MCP_METHODS)[number];

export interface RpcRequest {
  id: RpcId;
  method: McpMethod;
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
 * A body read as one message: a request to answer, a notification (no reply is due), or a
 * reply-ready error (the id is echoed when it could be read).
 */
export type ReadMessage =
  | { kind: 'request'; request: RpcRequest }
  | { kind: 'notification' }
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
    return invalid(null, 'Batches are not supported; send one JSON-RPC request per POST.');
  }
  if (typeof msg !== 'object' || msg === null) {
    return invalid(null, 'The body must be a JSON-RPC request object.');
  }
  const m = msg as Record<string, unknown>;
  const id = isId(m.id) ? m.id : null;
  if (m.jsonrpc !== '2.0') return invalid(id, 'jsonrpc must be "2.0".');
  if (typeof m.method !== 'string' || m.method === '') {
    return invalid(id, 'method is required and must be a string.');
  }
  // MCP clients send notifications (no id, e.g. notifications/initialized); nothing is due back.
  if (m.id === undefined && m.method.startsWith('notifications/')) return { kind: 'notification' };
  if (!isId(m.id)) return invalid(null, 'id is required and must be a string or an integer.');
  if (
    m.params !== undefined &&
    (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params))
  ) {
    return {
      kind: 'error',
      reply: rpcError(m.id, { code: RPC_INVALID_PARAMS, message: 'params must be an object.' }),
    };
  }
  if (!(MCP_METHODS as readonly string[]).includes(m.method)) {
    return {
      kind: 'error',
      reply: rpcError(m.id, {
        code: RPC_METHOD_NOT_FOUND,
        message: `Unknown method; the methods are ${MCP_METHODS.join(', ')}.`,
      }),
    };
  }
  return {
    kind: 'request',
    request: {
      id: m.id,
      method: m.method as McpMethod,
      params: (m.params as Record<string, unknown> | undefined) ?? {},
    },
  };
}

const invalid = (id: RpcId | null, message: string): ReadMessage => ({
  kind: 'error',
  reply: rpcError(id, { code: RPC_INVALID_REQUEST, message }),
});
