// The batch tools of `pcds mcp`: start_batch starts a batch over a file in the file root and
// answers at once with its id (or, as an MCP task, with its summary); batch_status tells its
// progress and writes its output there; pause_batch, resume_batch and cancel_batch steer it.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { PcdsClient } from '../client.js';
import { MAX_WEIGHT, MIN_WEIGHT } from '../contract/index.js';
import { answer } from './answers.js';
import { claimOutput, type FileRoot } from './file-root.js';
import { withShownPaths } from './shown-paths.js';
import { registerStartTool, type AnyStartTool } from './task-tools.js';
import {
  ENDPOINT_NAMES,
  idArg,
  readOnly,
  toolError,
  startedAnswer,
  workerWarning,
  type ToolDeps,
} from './tool-parts.js';

/** Registers the batch tools; gives start_batch for routeStartTools. */
export function registerBatchTools(
  server: McpServer,
  deps: ToolDeps,
  files: FileRoot,
): AnyStartTool {
  const startBatch = registerStartBatch(server, deps, files);
  server.registerTool(
    'batch_status',
    {
      title: 'Progress of a batch',
      description:
        'Progress while the batch runs (rows done, found, empty, failed, paused or not), its ' +
        'summary once it ended (done or cancelled).',
      inputSchema: { batch_id: idArg },
      annotations: readOnly,
    },
    ({ batch_id }) =>
      answer(async () => {
        const handle = (await deps.client()).getBatch(batch_id);
        // The batch's output is written here, in the file root, from the store: as far as the
        // batch got while it runs, whole (with its CSV and summary) once it ended.
        const written = await handle.writeOutputs().catch(() => undefined);
        const s = await handle.status();
        if (s.ended)
          return {
            batch_id,
            state: s.summary.state,
            summary: await withShownPaths(written ?? s.summary, files),
          };
        // No worker answered: the last progress the batch published, and why.
        if (s.published)
          return {
            batch_id,
            state: 'running',
            last_published: s.published,
            warning: s.published.reason,
          };
        return { batch_id, state: 'running', progress: await withShownPaths(s.progress, files) };
      }),
  );
  registerBatchControls(server, deps);
  return startBatch;
}

/** start_batch: both paths in the file root; a claimed output is given back if the start fails. */
function registerStartBatch(server: McpServer, deps: ToolDeps, files: FileRoot): AnyStartTool {
  return registerStartTool(server, {
    name: 'start_batch',
    title: 'Start a batch from a file',
    description:
      'Starts a durable batch over a CSV or JSONL file (one call per row) and returns its ' +
      'batch_id at once. Both paths lie in the file root (relative paths are taken from it); the ' +
      'worker reads the input and writes the output. Follow it with batch_status. As a task, its ' +
      'result is the summary with a link to the output.',
    inputSchema: {
      input: z.string().min(1).describe('path of the CSV or JSONL input, in the file root'),
      output: z
        .string()
        .min(1)
        .describe('path of the JSONL (or .csv) output, in the file root; a new file'),
      endpoint: z.enum(ENDPOINT_NAMES).optional().describe('default person_enrichment'),
      map: z.string().optional().describe('column mapping, e.g. "email=Email Address"'),
      encoding: z
        .string()
        .optional()
        .describe(
          "the input's encoding, e.g. windows-1252 (default UTF-8; a line that is not UTF-8 is read as windows-1252)",
        ),
      batch_id: idArg.optional(),
      window: z.number().int().min(1).optional().describe('rows in flight at once'),
      weight: z
        .number()
        .min(MIN_WEIGHT)
        .max(MAX_WEIGHT)
        .optional()
        .describe(
          "the batch's share of the pool against other batches while they compete (default 1)",
        ),
      overwrite: z.boolean().optional().describe('replace an existing output file'),
      key_ids: z
        .array(z.string().min(1))
        .min(1)
        .optional()
        .describe('configured keys to spread the rows over (default: all)'),
    },
    outputSchema: z.looseObject({
      batch_id: z.string().optional(),
      state: z.enum(['running', 'done', 'cancelled']).optional(),
      warning: z.string().optional(),
      error: toolError.optional(),
      summary: z.looseObject({ total: z.number(), done: z.number() }).optional(),
    }),
    start: async (a, memo) => {
      const input = await files.resolve(a.input, 'input');
      const client = await deps.client();
      const { output, undo } = await claimOutput(files, a.output, a.overwrite === true);
      try {
        const batch = await client.startBatch({
          input,
          output,
          ...(a.endpoint ? { endpoint: a.endpoint } : {}),
          ...(a.map ? { map: a.map } : {}),
          ...(a.encoding ? { encoding: a.encoding } : {}),
          ...(a.batch_id ? { batchId: a.batch_id } : {}),
          ...(a.window ? { window: a.window } : {}),
          ...(a.weight !== undefined ? { weight: a.weight } : {}),
          ...(a.overwrite ? { overwrite: true } : {}),
          ...(a.key_ids ? { keyIds: a.key_ids } : {}),
          ...(memo ? { memo } : {}),
          filesByRole: true,
        });
        return await startedAnswer(client, 'batch_id', batch.batchId, batch.workflowId);
      } catch (err) {
        await undo();
        throw err;
      }
    },
  });
}

/** pause_batch, resume_batch and cancel_batch: one request each, answered once sent. */
function registerBatchControls(server: McpServer, deps: ToolDeps): void {
  const control = (
    name: 'pause_batch' | 'resume_batch' | 'cancel_batch',
    description: string,
    act: (client: PcdsClient, batchId: string, reason?: string) => Promise<void>,
  ) =>
    server.registerTool(
      name,
      {
        title: description,
        description,
        inputSchema: {
          batch_id: idArg,
          ...(name === 'pause_batch'
            ? { reason: z.string().max(200).optional().describe('no personal data') }
            : {}),
        },
        annotations: { idempotentHint: true, openWorldHint: false },
      },
      (a: { batch_id: string; reason?: string }) =>
        answer(async () => {
          const client = await deps.client();
          await act(client, a.batch_id, a.reason);
          return {
            batch_id: a.batch_id,
            requested: name.replace('_batch', ''),
            ...(await workerWarning(client)),
          };
        }),
    );
  control(
    'pause_batch',
    'Pause a batch: no new rows start; rows in flight finish and are written',
    (c, id, reason) => c.getBatch(id).pause(reason),
  );
  control('resume_batch', 'Resume a paused batch', (c, id) => c.getBatch(id).resume());
  control(
    'cancel_batch',
    'Cancel a batch: rows in flight are cancelled, what finished is written',
    (c, id) => c.getBatch(id).cancel(),
  );
}
