// The start tools of `pcds mcp` as MCP tasks (taskSupport optional): a client that asks for a
// task gets one once Temporal accepted the start, and follows it with tasks/get and tasks/result;
// a client that does not gets today's answer at once (the id and `running`), never a long wait.
import type { ToolTaskHandler } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  getParseErrorMessage,
  type ZodRawShapeCompat,
} from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  McpError,
  type CallToolResult,
  type Result,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { answer } from './answers.js';
import { taskMemo, taskTtl } from './task-store.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

export interface StartTool<Shape extends z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  inputSchema: Shape;
  /** Both answers fit it: the start's (id, `running`) and the task's result (with the summary). */
  outputSchema: z.ZodObject;
  /**
   * Starts the work (with the task's memo when it is started as a task) and gives the tool's
   * answer and the task id of the work (its workflow id).
   */
  start(
    args: z.infer<z.ZodObject<Shape>>,
    memo?: Record<string, string>,
  ): Promise<{ doc: Record<string, unknown>; taskId: string }>;
}

/** A start refused: a JSON-RPC error naming the code, since a task request gets a task or an error. */
function refused(result: CallToolResult): McpError {
  const doc = result.structuredContent as { error?: { code?: string; message?: string } };
  const code = doc.error?.code ?? 'internal_error';
  return new McpError(ErrorCode.InvalidParams, `${code}: ${doc.error?.message ?? 'refused'}`, {
    code,
  });
}

const inputError = (name: string, error: unknown) =>
  `Input validation error: Invalid arguments for tool ${name}: ${getParseErrorMessage(error)}`;

export type AnyStartTool = StartTool<z.ZodRawShape>;

async function createTask(tool: AnyStartTool, args: unknown, extra: Extra) {
  if (!extra.taskStore) throw new McpError(ErrorCode.InternalError, 'no task store');
  const ttl = taskTtl(extra.taskRequestedTtl);
  let taskId = '';
  const started = await answer(async () => {
    const s = await tool.start(args as never, taskMemo(ttl));
    taskId = s.taskId;
    return s.doc;
  });
  if (started.isError) throw refused(started);
  return { task: await extra.taskStore.createTask({ ttl, context: { taskId } }) };
}

/** Registers a start tool with task support (optional); routeStartTools then routes its calls. */
export function registerStartTool<Shape extends z.ZodRawShape>(
  server: McpServer,
  tool: StartTool<Shape>,
): AnyStartTool {
  const any = tool as unknown as AnyStartTool;
  const handler: ToolTaskHandler<ZodRawShapeCompat> = {
    createTask: (args, extra) => createTask(any, args, extra),
    getTask: (_args, extra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args, extra) =>
      (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
  };
  server.experimental.tasks.registerToolTask<ZodRawShapeCompat, z.ZodObject>(
    tool.name,
    {
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema,
      outputSchema: tool.outputSchema,
      execution: { taskSupport: 'optional' },
    },
    handler,
  );
  return any;
}

/**
 * Routes the start tools' tools/call: the SDK's McpServer would poll an optional task tool's task
 * to its end for a client that asked for none (a batch takes hours), and would turn a refused
 * start into an invalid task result. Other tools keep the McpServer's own routing. Call once
 * every tool is registered.
 */
export function routeStartTools(server: McpServer, tools: AnyStartTool[]): void {
  const byName = new Map(tools.map((t) => [t.name, t]));
  // The McpServer's tools/call, kept for every other tool (the SDK offers no public getter).
  const handlers = (
    server.server as unknown as {
      _requestHandlers: Map<string, (request: unknown, extra: Extra) => Promise<Result>>;
    }
  )._requestHandlers;
  const original = handlers.get('tools/call');
  if (!original) throw new Error('register the tools before the start tools');
  server.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = byName.get(request.params.name);
    if (!tool) return original(request, extra);
    const parsed = await z.object(tool.inputSchema).safeParseAsync(request.params.arguments ?? {});
    if (request.params.task) {
      if (!parsed.success)
        throw new McpError(ErrorCode.InvalidParams, inputError(tool.name, parsed.error));
      return createTask(tool, parsed.data, extra);
    }
    // As the McpServer answers a bad argument: a tool error with the JSON-RPC error's text.
    if (!parsed.success) {
      const text = new McpError(ErrorCode.InvalidParams, inputError(tool.name, parsed.error))
        .message;
      return { content: [{ type: 'text', text }], isError: true };
    }
    return answer(async () => (await tool.start(parsed.data)).doc);
  });
}
