// The tools of `pcds mcp`, an MCP server through which an assistant does durable work: one call,
// a batch from a file, a search export, the usage. Long work never blocks a tool call: a start
// tool returns at once with an id, and a status tool tells where that work stands (or, started as
// an MCP task, tasks/get and tasks/result do).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import type { PcdsClient } from '../client.js';
import {
  ASYNC_ENDPOINTS,
  MAX_WEIGHT,
  MIN_WEIGHT,
  type AsyncEndpointName,
} from '../contract/index.js';
import { PcdsError } from '../contract/pcds-error.js';
import { refuseCallbackUrl } from './callbacks.js';
import { claimOutput, FileRoot, fileRootDir } from './file-root.js';
import { noWorkerWarning } from '../temporal/pollers.js';
import { answer, NotFound } from './answers.js';
import { withShownPaths } from './shown-paths.js';
import { TemporalTaskStore } from './task-store.js';
import { registerStartTool, routeStartTools } from './task-tools.js';

/** A `warning` field when no worker polls the client's task queue: the work waits for one. */
async function workerWarning(client: PcdsClient): Promise<{ warning?: string }> {
  const warning = noWorkerWarning(await client.workers(), client.taskQueue);
  return warning ? { warning: `${warning}; it runs when one does` } : {};
}

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

const ENDPOINT_NAMES = ASYNC_ENDPOINTS.map((e) => e.name) as [
  AsyncEndpointName,
  ...AsyncEndpointName[],
];
const idArg = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/)
  .describe('letters, digits, _ or -');
/** A refused start or a failed task: every answer of a start tool fits its output schema. */
const toolError = z.object({ code: z.string(), message: z.string() });
const readOnly = { readOnlyHint: true, openWorldHint: false };

/** A closed workflow's status from its description; a running one answers queries. */
async function closed(
  workflow: { describe(): Promise<{ status: { name: string } }> },
  notFound: () => Error,
): Promise<string> {
  try {
    return (await workflow.describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw notFound();
    throw err;
  }
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

  const startCall = registerStartTool(server, {
    name: 'start_call',
    title: 'Start one endpoint call',
    description:
      'Starts one durable call of a data endpoint (submit, poll, throttle, retries) and returns ' +
      'its call_id at once. Read the outcome with call_status. params take no callback_url. As a ' +
      'task, its result is the outcome.',
    inputSchema: {
      endpoint: z.enum(ENDPOINT_NAMES).describe('endpoint name, e.g. person_enrichment'),
      params: z.record(z.string(), z.unknown()).describe('the endpoint parameters'),
      idempotency_key: z
        .string()
        .regex(/^[A-Za-z0-9_.:-]{1,128}$/)
        .optional()
        .describe('the same key returns the same call instead of starting another'),
    },
    outputSchema: z.looseObject({
      call_id: z.string().optional(),
      state: z.enum(['running', 'done']).optional(),
      warning: z.string().optional(),
      error: toolError.optional(),
      outcome: z.enum(['found', 'empty']).optional(),
    }),
    start: async ({ endpoint, params, idempotency_key }, memo) => {
      refuseCallbackUrl(params);
      const client = await deps.client();
      // An assistant's parameters, checked against the endpoint when the call starts.
      const handle = await client.startCall(endpoint, params, {
        ...(idempotency_key ? { idempotencyKey: idempotency_key } : {}),
        ...(memo ? { memo } : {}),
      });
      const doc = {
        call_id: handle.workflowId,
        state: 'running',
        ...(await workerWarning(client)),
      };
      return { doc, taskId: handle.workflowId };
    },
  });

  server.registerTool(
    'call_status',
    {
      title: 'Where a call stands',
      description:
        'running with its phase while the call works; done with the outcome (found or empty, ' +
        'and the result); failed with the error code.',
      inputSchema: { call_id: z.string().regex(/^call-[A-Za-z0-9_.:-]+$/) },
      annotations: readOnly,
    },
    ({ call_id }) =>
      answer(async () => {
        const client = await deps.client();
        const handle = client.getCall(call_id);
        const status = await closed(
          handle.workflow,
          () => new NotFound('call_not_found', `no call with id ${call_id}`),
        );
        if (status === 'RUNNING') {
          // Its phase is a query only a worker answers: without one, say so instead of waiting.
          const warned = await workerWarning(client);
          if (warned.warning) return { call_id, state: 'running', ...warned };
          const s = await handle.state();
          return { call_id, state: 'running', phase: s.phase, polls: s.polls };
        }
        try {
          return { call_id, state: 'done', ...(await handle.result()) };
        } catch (err) {
          if (!(err instanceof PcdsError)) throw err;
          return { call_id, state: 'failed', error: { code: err.code, message: err.message } };
        }
      }),
  );

  const startBatch = registerStartTool(server, {
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
        const doc = { batch_id: batch.batchId, state: 'running', ...(await workerWarning(client)) };
        return { doc, taskId: batch.workflowId };
      } catch (err) {
        await undo();
        throw err;
      }
    },
  });

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
        const doc = {
          export_id: handle.exportId,
          state: 'running',
          ...(await workerWarning(client)),
        };
        return { doc, taskId: handle.workflowId };
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
