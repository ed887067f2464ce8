// The tools of `pcds mcp`, an MCP server through which an assistant does durable work: one call,
// a batch from a file, a search export, the usage. Long work never blocks a tool call: a start
// tool returns at once with an id, and a status tool tells where that work stands (or, started as
// an MCP task, tasks/get and tasks/result do).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { PcdsClient } from '../client.js';
import { answer } from './answers.js';
import { registerBatchTools } from './batch-tools.js';
import { registerCallTools } from './call-tools.js';
import { registerSearchExportTools } from './export-tools.js';
import { FileRoot, fileRootDir } from './file-root.js';
import { TemporalTaskStore } from './task-store.js';
import { routeStartTools } from './task-tools.js';
import { readOnly } from './tool-parts.js';

export const PCDS_MCP_SERVER_NAME = 'pcds-orchestrator';

export interface PcdsMcpDeps {
  /** The typed client on Temporal, connected on first use. */
  client(): Promise<PcdsClient>;
  /**
   * GET /usage of the service with a configured key (synchronous and free), through the shared
   * throttle like every request (`pcds mcp` reads it with the CLI's throttled usage reader).
   */
  usage(query: { month?: number; year?: number }, keyId?: string): Promise<unknown>;
  version: string;
  /**
   * The one folder whose files the tools may read and write (PCDS_MCP_FILES); default: from
   * PCDS_MCP_FILES or PCDS_DATA_DIR in the environment.
   */
  files?: string;
  /**
   * Whether a workflow with this memo is the caller's, for tasks/list (an HTTP caller's own work);
   * default: all (stdio, the operator).
   */
  visible?: (memo: Record<string, unknown> | undefined) => boolean;
}

export function createPcdsMcpServer(deps: PcdsMcpDeps): McpServer {
  const files = new FileRoot(deps.files ?? fileRootDir(process.env));
  const server = new McpServer(
    { name: PCDS_MCP_SERVER_NAME, version: deps.version },
    {
      instructions:
        'Durable work on the Person and Company Data Service. start_call, start_batch and ' +
        'start_search_export return at once with an id; check it with call_status, batch_status ' +
        'or search_export_status (every few seconds) until it is done. A client with MCP tasks ' +
        'may call them as tasks instead and follow them with tasks/get and tasks/result. Files ' +
        'are read and written only inside one folder, the file root: give paths relative to it.',
      // Tasks are the workflows themselves: any `pcds mcp` process answers for them.
      capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: new TemporalTaskStore({
        client: () => deps.client(),
        visible: deps.visible ?? (() => true),
        files,
      }),
    },
  );

  // The groups register in this order, which is the order tools/list gives.
  const startCall = registerCallTools(server, deps);
  const startBatch = registerBatchTools(server, deps, files);
  const startExport = registerSearchExportTools(server, deps, files);

  server.registerTool(
    'usage',
    {
      title: 'Credit usage of the account',
      description: 'Credits used and left for a month (GET /usage; free and synchronous).',
      inputSchema: {
        month: z.number().int().min(1).max(12).optional(),
        year: z.number().int().min(2020).max(2030).optional(),
        key_id: z.string().optional().describe('configured key (default: the first)'),
      },
      annotations: readOnly,
    },
    ({ month, year, key_id }) =>
      answer(() => deps.usage({ ...(month ? { month } : {}), ...(year ? { year } : {}) }, key_id)),
  );

  routeStartTools(server, [startCall, startBatch, startExport]);
  return server;
}
