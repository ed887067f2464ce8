// The call tools of `pcds mcp`: start_call starts one durable call and answers at once with its
// id (or, as an MCP task, with the outcome); call_status tells where the call stands.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { PcdsError } from '../contract/pcds-error.js';
import { answer, NotFound } from './answers.js';
import { refuseCallbackUrl } from './callbacks.js';
import { registerStartTool, type AnyStartTool } from './task-tools.js';
import {
  closed,
  ENDPOINT_NAMES,
  readOnly,
  toolError,
  startedAnswer,
  workerWarning,
} from './tool-parts.js';
import type { ToolDeps } from './tool-parts.js';

/** Registers start_call and call_status; gives start_call for routeStartTools. */
export function registerCallTools(server: McpServer, deps: ToolDeps): AnyStartTool {
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
      return startedAnswer(client, 'call_id', handle.workflowId, handle.workflowId);
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
  return startCall;
}
