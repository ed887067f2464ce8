// The MCP tool list (tools/list and the GET /mcp manifest): the seven data tools and check_status,
// their input schemas generated from the contract's strict zod schemas, so what is advertised is
// exactly what is accepted.
import { jsonSchemaOf } from '../json-schema.js';
import {
  MCP_DATA_TOOLS,
  MCP_RESULT_PATHS,
  MCP_TOOL_ARGS,
  MCP_TOOL_SCOPES,
  endpointByMcpTool,
  type McpTool,
} from '../../contract/index.js';

export interface ToolDescription {
  name: McpTool | 'check_status';
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations: { readOnlyHint: true; idempotentHint: true };
}

const WHERE: Readonly<Record<string, string>> = {
  'data.results': 'rows under data.results',
  'data.result': 'the record under data.result',
  data: 'fields directly under data',
};

function describe(tool: McpTool): ToolDescription {
  const endpoint = endpointByMcpTool(tool);
  const summary = endpoint?.summary ?? tool;
  return {
    name: tool,
    title: summary,
    description:
      `${summary}. Starts a job and returns its request_id with status pending; call check_status ` +
      `with the request_id until status is complete (${WHERE[MCP_RESULT_PATHS[tool]] ?? 'under data'}) ` +
      `or error. OAuth scope: ${MCP_TOOL_SCOPES[tool]}.`,
    inputSchema: jsonSchemaOf(MCP_TOOL_ARGS[tool]),
    annotations: { readOnlyHint: true, idempotentHint: true },
  };
}

const CHECK_STATUS: ToolDescription = {
  name: 'check_status',
  title: 'Status and result of a started tool call',
  description:
    'Status of a job started by one of the data tools: pending with a message while it runs, ' +
    'complete with endpoint, request_id and data when done, or error with a message. Free.',
  inputSchema: jsonSchemaOf(MCP_TOOL_ARGS.check_status),
  annotations: { readOnlyHint: true, idempotentHint: true },
};

/** Built once: the schemas do not change while the emulator runs. */
export const TOOLS: readonly ToolDescription[] = [...MCP_DATA_TOOLS.map(describe), CHECK_STATUS];
