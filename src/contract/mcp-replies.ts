// The MCP endpoint's answers read as the HTTP API's: a tool call's start is an accepted job, a
// check_status is a poll, a JSON-RPC error or an HTTP refusal is the failure envelope with the
// service's code. The HTTP classifiers then decide, so a reply means the same whichever transport
// carried it, and a completed result sits where the HTTP endpoint puts it.
import type { EndpointDef, McpTool } from './catalogue.js';
import { MCP_DATA_TOOLS, MCP_RESULT_PATHS, MCP_TOOL_ARGS } from './mcp.js';
import type { Reply } from './classify.js';
import { errorInfo } from './errors.js';
import { problemsOf, type InputProblem } from './validate.js';

/** How a call reaches the service: the HTTP API, or the MCP endpoint's tools. */
export type Transport = 'http' | 'mcp';
export const TRANSPORTS = ['http', 'mcp'] as const satisfies readonly Transport[];

/** A tool's output: the JSON document of its text content item. */
export type ToolDocument = Record<string, unknown>;

/** A JSON-RPC error object as the endpoint sends it (the service's code under `data.code`). */
export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** The server codes of the endpoint's refusals, by the HTTP status the HTTP API gives them. */
const RPC_SERVER_CODES: Readonly<Record<number, number>> = {
  [-32001]: 401,
  [-32002]: 402,
  [-32003]: 403,
  [-32004]: 404,
  [-32029]: 429,
  [-32050]: 503,
  [-32602]: 400,
  [-32600]: 400,
  [-32601]: 400,
  [-32700]: 400,
  [-32603]: 500,
};

const asObject = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

const failureBody = (code: string, message: string) => ({
  success: false,
  error: { code, message },
});

/** Why an endpoint call cannot go over MCP, naming the endpoint; undefined when it can. */
export function mcpUnsupportedReason(
  endpoint: EndpointDef,
  opts: { webhook?: boolean } = {},
): string | undefined {
  if (!endpoint.mcpTool)
    return `${endpoint.name} has no MCP tool (the MCP endpoint serves ${MCP_TOOLS_TEXT}): use the HTTP transport`;
  if (opts.webhook)
    return `${endpoint.name} over MCP cannot deliver by webhook (the tools take no callback_url): poll, or use the HTTP transport`;
  return undefined;
}

const MCP_TOOLS_TEXT = `${MCP_DATA_TOOLS.slice(0, -1).join(', ')} and ${MCP_DATA_TOOLS.at(-1)}`;

/** The parameters' problems as the tool's arguments (a tool accepts fewer than its endpoint). */
export function mcpArgumentProblems(
  tool: McpTool,
  params: Record<string, unknown>,
): InputProblem[] {
  const parsed = MCP_TOOL_ARGS[tool].safeParse(params);
  return parsed.success ? [] : problemsOf(parsed.error, params, MCP_TOOL_ARGS[tool]);
}

/** A tools/call that answered: `pending` with a request_id is the accepted job (HTTP 202). */
export function replyOfToolStart(doc: ToolDocument | undefined): Reply {
  const requestId = str(doc?.request_id);
  if (!doc || !requestId || doc.status !== 'pending') {
    // The tool answered something else than a start: never read as "not sent".
    return { httpStatus: 200, body: undefined };
  }
  return {
    httpStatus: 202,
    body: { success: true, data: { request_id: requestId, status: 'queued' } },
  };
}

/**
 * A check_status answer as the HTTP poll's reply: pending is running, complete is completed with
 * the result moved to the HTTP endpoint's result path, error is the job's failure.
 */
export function replyOfCheckStatus(
  endpoint: EndpointDef,
  requestId: string,
  doc: ToolDocument | undefined,
): Reply {
  const status = doc?.status;
  if (status === 'pending') {
    return {
      httpStatus: 200,
      body: {
        success: true,
        data: { request_id: requestId, status: 'processing', completed: false },
      },
    };
  }
  if (status === 'complete' || status === 'completed') {
    const data = asObject(doc?.data) ?? {};
    const tool = endpoint.mcpTool;
    // Profile and answer fields sit directly under data in MCP; the HTTP endpoint nests them
    // under data.result (the newsfeed under data.result.newsfeed).
    const located = tool && MCP_RESULT_PATHS[tool] === 'data' ? { result: data } : data;
    return {
      httpStatus: 200,
      body: {
        success: true,
        data: { ...located, request_id: requestId, status: 'completed', completed: true },
      },
    };
  }
  if (status === 'error') {
    const code = str(doc?.code) ?? 'job_failed';
    const message = str(doc?.message) ?? 'The job failed.';
    if (code === 'not_found')
      return {
        httpStatus: 200,
        body: {
          success: true,
          data: {
            request_id: requestId,
            status: 'not_found',
            completed: true,
            result: null,
            error: { code, message },
          },
        },
      };
    const http = errorInfo(code)?.http;
    // request_not_found is 404; search_error and internal_error 500; a stored 429 and other job
    // failures come as a failure envelope in a 200 (never a Retry-After: not throttling).
    return {
      httpStatus: http === 404 || http === 500 ? http : 200,
      body: failureBody(code, message),
    };
  }
  // Anything else is not a check_status document: the classifier calls it an invalid response.
  return { httpStatus: 200, body: doc === undefined ? undefined : { status } };
}

/** A JSON-RPC error of a tools/call as the HTTP API's refusal: its status, code and wait. */
export function replyOfRpcError(error: RpcErrorObject): Reply {
  const data = asObject(error.data);
  const code = str(data?.code);
  const byCode = code ? errorInfo(code)?.http : undefined;
  const httpStatus =
    byCode !== undefined && byCode > 0 ? byCode : (RPC_SERVER_CODES[error.code] ?? 500);
  const retryAfter = data?.retry_after_seconds;
  return {
    httpStatus,
    body: failureBody(
      code ?? (httpStatus === 400 ? 'invalid_request' : fallbackCode(httpStatus)),
      error.message,
    ),
    ...(typeof retryAfter === 'number' && retryAfter >= 0
      ? { retryAfterMs: Math.ceil(retryAfter * 1000) }
      : {}),
  };
}

/**
 * A non-2xx HTTP reply of the MCP endpoint. A JSON-RPC error inside carrying the service's code
 * is the service's refusal; anything else (a gateway's 502, an empty 503) has no envelope, so a
 * submit that got it is never called refused: the job may exist.
 */
export function replyOfMcpHttpFailure(
  httpStatus: number,
  bodyText: string | undefined,
  retryAfterMs?: number,
): Reply {
  const wait = retryAfterMs !== undefined ? { retryAfterMs } : {};
  let parsed: unknown;
  try {
    parsed = bodyText ? JSON.parse(bodyText) : undefined;
  } catch {
    parsed = undefined;
  }
  const error = asObject(asObject(parsed)?.error);
  const code = str(asObject(error?.data)?.code);
  if (!error || !code) {
    // Without the service's code a 401/403/429 still says what happened to the request.
    const fallback = httpStatus < 500 ? fallbackCode(httpStatus) : undefined;
    return {
      httpStatus,
      body: fallback ? failureBody(fallback, `HTTP ${httpStatus}`) : undefined,
      ...wait,
    };
  }
  return {
    httpStatus,
    body: failureBody(code, str(error.message) ?? `HTTP ${httpStatus}`),
    ...wait,
  };
}

function fallbackCode(httpStatus: number): string {
  switch (httpStatus) {
    case 401:
      return 'invalid_credentials';
    case 402:
      return 'insufficient_credits';
    case 403:
      return 'access_denied';
    case 404:
      return 'request_not_found';
    case 429:
      return 'rate_limit_exceeded';
    case 503:
      return 'service_unavailable';
    default:
      return httpStatus >= 500 ? 'internal_error' : 'invalid_request';
  }
}
