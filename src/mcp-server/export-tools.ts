// The search export tools of `pcds mcp`: start_search_export pages one person search into a file
// in the file root and answers at once with its id (or, as an MCP task, with its summary);
// search_export_status tells where it stands.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { PcdsError } from '../contract/pcds-error.js';
import { answer, NotFound } from './answers.js';
import { refuseCallbackUrl } from './callbacks.js';
import { claimOutput, type FileRoot } from './file-root.js';
import { withShownPaths } from './shown-paths.js';
import { registerStartTool, type AnyStartTool } from './task-tools.js';
import {
  closed,
  idArg,
  readOnly,
  startedAnswer,
  toolError,
  workerWarning,
  type ToolDeps,
} from './tool-parts.js';

/** Registers start_search_export and search_export_status; gives the first for routeStartTools. */
export function registerSearchExportTools(
  server: McpServer,
  deps: ToolDeps,
  files: FileRoot,
): AnyStartTool {
  const startExport = registerStartTool(server, {
    name: 'start_search_export',
    title: 'Export a person search to a file',
    description:
      'Pages one person search into a JSONL file written by the worker (in the file root) and ' +
      'returns its export_id at once. Follow it with search_export_status. As a task, its result ' +
      'is the summary with a link to the output.',
    inputSchema: {
      params: z
        .record(z.string(), z.unknown())
        .describe('person_search parameters (no callback_url)'),
      max_results: z.number().int().min(1).max(1099),
      output: z
        .string()
        .min(1)
        .describe('JSONL path (ending in .jsonl) the worker writes, in the file root; a new file'),
      page_size: z.number().int().min(1).max(100).optional(),
      export_id: idArg.optional(),
      overwrite: z.boolean().optional(),
    },
    outputSchema: z.looseObject({
      export_id: z.string().optional(),
      state: z.enum(['running', 'done']).optional(),
      warning: z.string().optional(),
      error: toolError.optional(),
      summary: z.looseObject({ rows: z.number() }).optional(),
    }),
    start: async (a, memo) => {
      refuseCallbackUrl(a.params);
      const client = await deps.client();
      const { output, undo } = await claimOutput(files, a.output, a.overwrite === true, 'export');
      try {
        const handle = await client.startSearchExport(a.params, {
          maxResults: a.max_results,
          output,
          ...(a.page_size ? { pageSize: a.page_size } : {}),
          ...(a.export_id ? { exportId: a.export_id } : {}),
          ...(a.overwrite ? { overwrite: true } : {}),
          ...(memo ? { memo } : {}),
        });
        return await startedAnswer(client, 'export_id', handle.exportId, handle.workflowId);
      } catch (err) {
        await undo();
        throw err;
      }
    },
  });

  server.registerTool(
    'search_export_status',
    {
      title: 'Where a search export stands',
      description: 'running while pages are written; done with the summary; failed with the code.',
      inputSchema: { export_id: idArg },
      annotations: readOnly,
    },
    ({ export_id }) =>
      answer(async () => {
        const client = await deps.client();
        const handle = client.getSearchExport(export_id);
        const status = await closed(
          handle.workflow,
          () => new NotFound('export_not_found', `no search export with id ${export_id}`),
        );
        if (status === 'RUNNING')
          return { export_id, state: 'running', ...(await workerWarning(client)) };
        try {
          return {
            export_id,
            state: 'done',
            summary: await withShownPaths(await handle.result(), files),
          };
        } catch (err) {
          if (!(err instanceof PcdsError)) throw err;
          return { export_id, state: 'failed', error: { code: err.code, message: err.message } };
        }
      }),
  );
  return startExport;
}
