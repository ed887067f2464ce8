// tools/call and check_status: a data tool starts the same job as its HTTP endpoint (the same
// access checks with the MCP product, validation, credits and rate limit, through the HTTP API's
// own functions); check_status reports it. The legacy GET /mcp/status reads through here too.
import type { FastifyRequest } from 'fastify';
import {
  MCP_DATA_TOOLS,
  MCP_TOOL_ARGS,
  MCP_TOOL_SCOPES,
  endpointByMcpTool,
  TOO_DEEP,
  formatProblems,
  nestsDeeperThan,
  problemsOf,
  type McpTool,
} from '../../contract/index.js';
import { checkKey, type Refusal } from '../access.js';
import type { EmulatorContext } from '../context.js';
import type { Job } from '../jobs.js';
import { submitJob } from '../routes/data.js';
import { identifyCaller, type McpCaller } from './caller.js';
import { mcpJobStatus, type McpJobStatus } from './job-status.js';
import {
  RPC_INVALID_PARAMS,
  rpcError,
  rpcResult,
  serverErrorCode,
  type RpcId,
  type RpcReply,
  RPC_INTERNAL_ERROR,
} from './json-rpc.js';
import type { OAuthStore } from './oauth-store.js';

export type ToolReply = RpcReply | { drop: true };

const isDataTool = (name: string): name is McpTool =>
  (MCP_DATA_TOOLS as readonly string[]).includes(name);

/** A refusal of the HTTP API as a JSON-RPC error carrying the service's code. */
export function refusalError(id: RpcId, refusal: Refusal): ToolReply {
  if (refusal.kind === 'drop') return { drop: true };
  return rpcError(id, {
    code: serverErrorCode(refusal.status),
    message: refusal.message,
    data: {
      code: refusal.code,
      ...(refusal.retryAfterSeconds !== undefined
        ? { retry_after_seconds: refusal.retryAfterSeconds }
        : {}),
    },
  });
}

const scopeRefusal = (tool: McpTool): Refusal => ({
  kind: 'error',
  status: 403,
  code: 'access_denied',
  message: `The access token lacks the ${MCP_TOOL_SCOPES[tool]} scope that ${tool} needs.`,
});

const notFound = (requestId: string): McpJobStatus => ({
  status: 'error',
  request_id: requestId,
  code: 'request_not_found',
  message: 'No request with this request_id belongs to this key.',
});

/** A tool output: one text content item whose text is the JSON document. */
const toolOutput = (id: RpcId, doc: Record<string, unknown>, isError = false): RpcReply =>
  rpcResult(id, { content: [{ type: 'text', text: JSON.stringify(doc) }], isError });

/**
 * Why a tools/call must be refused at the HTTP level, before the MCP server reads it: missing or
 * invalid credentials (401) or a token without the scope (403), each with the JSON-RPC error.
 */
export type HttpRefusal =
  | { ok: true }
  | { ok: false; status: 401; reply: ToolReply }
  | { ok: false; status: 403; reply: ToolReply; scope: string };

export class McpToolCalls {
  /** The page each MCP person-search job reports, kept beside the job (a page POST moves it). */
  private readonly pages = new WeakMap<Job, { offset: number; limit: number }>();

  constructor(
    private readonly ctx: EmulatorContext,
    private readonly oauth: OAuthStore,
  ) {}

  async call(req: FastifyRequest, id: RpcId, params: Record<string, unknown>): Promise<ToolReply> {
    const name = params.name;
    if (typeof name !== 'string' || !(isDataTool(name) || name === 'check_status')) {
      return rpcError(id, {
        code: RPC_INVALID_PARAMS,
        message: `Unknown tool; the tools are ${[...MCP_DATA_TOOLS, 'check_status'].join(', ')}.`,
      });
    }
    const args = params.arguments ?? {};
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      return rpcError(id, { code: RPC_INVALID_PARAMS, message: 'arguments must be an object.' });
    }
    const who = identifyCaller(this.ctx, this.oauth, req);
    if (!who.ok) return refusalError(id, who.refusal);
    const path = req.routeOptions.url ?? '/mcp';
    if (name === 'check_status') return this.checkStatus(req, id, who.caller, path, args);

    if (!who.caller.scopes.includes(MCP_TOOL_SCOPES[name]))
      return refusalError(id, scopeRefusal(name));
    const endpoint = endpointByMcpTool(name);
    if (!endpoint)
      return rpcError(id, { code: RPC_INTERNAL_ERROR, message: 'The tool has no endpoint.' });
    const admitted = await checkKey(this.ctx, req, who.caller.key, {
      path,
      product: endpoint.mcpProduct ?? endpoint.product,
    });
    if (!admitted.ok) return refusalError(id, admitted.refusal);
    const deep = nestsDeeperThan(args);
    const parsed = deep ? undefined : MCP_TOOL_ARGS[name].safeParse(args);
    if (!parsed?.success) {
      const problems = parsed
        ? problemsOf(parsed.error, args, MCP_TOOL_ARGS[name], { nameUnknownKeys: true })
        : [TOO_DEEP];
      return rpcError(id, {
        code: RPC_INVALID_PARAMS,
        message: `Invalid arguments for ${name}: ${formatProblems(problems)}`,
        data: { code: 'invalid_request' },
      });
    }
    const outcome = submitJob(this.ctx, admitted.key, endpoint, args as Record<string, unknown>);
    if (!outcome.ok) {
      const data = { code: outcome.code };
      return outcome.status === 400
        ? rpcError(id, { code: RPC_INVALID_PARAMS, message: outcome.message, data })
        : rpcError(id, { code: serverErrorCode(outcome.status), message: outcome.message, data });
    }
    if (outcome.page) this.pages.set(outcome.job, outcome.page);
    const requestId = outcome.job.requestId;
    return toolOutput(id, {
      request_id: requestId,
      status: 'pending',
      endpoint: name,
      next_action: { tool: 'check_status', args: { request_id: requestId, endpoint: name } },
    });
  }

  /**
   * The credential and scope checks of a tools/call, answered with HTTP statuses an OAuth client
   * acts on (it signs in or refreshes on 401, asks for more scope on 403). The scope of
   * check_status is the one of the tool that started the job, when the job is the caller's.
   */
  authorize(req: FastifyRequest, id: RpcId, params: Record<string, unknown>): HttpRefusal {
    const who = identifyCaller(this.ctx, this.oauth, req);
    if (!who.ok) {
      if (who.refusal.kind === 'drop') return { ok: true };
      return { ok: false, status: 401, reply: refusalError(id, who.refusal) };
    }
    const { name } = params;
    const args = (params.arguments ?? {}) as Record<string, unknown>;
    let tool: McpTool | undefined;
    if (typeof name === 'string' && isDataTool(name)) tool = name;
    else if (name === 'check_status' && typeof args.request_id === 'string') {
      const job = this.ctx.jobs.get(args.request_id);
      if (job?.keyId === who.caller.key.id) tool = job.endpoint.mcpTool;
    }
    if (!tool || who.caller.scopes.includes(MCP_TOOL_SCOPES[tool])) return { ok: true };
    const scope = [...new Set([...who.caller.scopes, MCP_TOOL_SCOPES[tool]])].join(' ');
    return { ok: false, status: 403, reply: refusalError(id, scopeRefusal(tool)), scope };
  }

  private async checkStatus(
    req: FastifyRequest,
    id: RpcId,
    caller: McpCaller,
    path: string,
    args: object,
  ): Promise<ToolReply> {
    const parsed = MCP_TOOL_ARGS.check_status.safeParse(args);
    if (!parsed.success) {
      return rpcError(id, {
        code: RPC_INVALID_PARAMS,
        message: `Invalid arguments for check_status: ${formatProblems(
          problemsOf(parsed.error, args, MCP_TOOL_ARGS.check_status, {
            nameUnknownKeys: true,
          }),
        )}`,
        data: { code: 'invalid_request' },
      });
    }
    const { request_id, endpoint } = parsed.data as { request_id: string; endpoint?: McpTool };
    const r = await this.status(req, caller, path, request_id, endpoint);
    if ('refusal' in r) return refusalError(id, r.refusal);
    return toolOutput(id, r.doc, r.doc.status === 'error');
  }

  /**
   * The status of a job this caller owns: access checks (no product: status reads are free),
   * ownership, then the scope of the job's tool. Shared by check_status and GET /mcp/status.
   */
  async status(
    req: FastifyRequest,
    caller: McpCaller,
    path: string,
    requestId: string,
    endpoint?: McpTool,
  ): Promise<{ refusal: Refusal } | { doc: McpJobStatus }> {
    const admitted = await checkKey(this.ctx, req, caller.key, { path, product: 'none' });
    if (!admitted.ok) return { refusal: admitted.refusal };
    const job = this.ctx.jobs.get(requestId);
    const tool = job?.endpoint.mcpTool;
    if (!job || !tool || job.keyId !== caller.key.id || (endpoint && endpoint !== tool))
      return { doc: notFound(requestId) };
    if (!caller.scopes.includes(MCP_TOOL_SCOPES[tool])) return { refusal: scopeRefusal(tool) };
    return { doc: mcpJobStatus(this.ctx, job, tool, this.pages.get(job)) };
  }

  identify(req: FastifyRequest) {
    return identifyCaller(this.ctx, this.oauth, req);
  }
}
