// The MCP view of a job: pending while it runs, complete with the result at the tool's documented
// place, or error with a message. It reads the same rendered poll the HTTP API answers, so a job
// settles (and is charged) the same way whichever surface looks at it.
import { MCP_RESULT_PATHS, type McpTool } from '../../contract/index.js';
import type { EmulatorContext } from '../context.js';
import type { Job } from '../jobs.js';

export type McpJobStatus =
  | { status: 'pending'; request_id: string; endpoint: McpTool; message: string }
  | { status: 'complete'; endpoint: McpTool; request_id: string; data: Record<string, unknown> }
  | { status: 'error'; request_id: string; endpoint?: McpTool; code: string; message: string };

const asObject = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

/** Fields of a person-search page besides its rows, kept so a caller can page on with `cursor`. */
const PAGE_FIELDS = ['offset', 'limit', 'total', 'has_more', 'next_cursor'] as const;

function located(tool: McpTool, polled: Record<string, unknown>): Record<string, unknown> | null {
  switch (MCP_RESULT_PATHS[tool]) {
    case 'data.results': {
      const data: Record<string, unknown> = { results: polled.results ?? [] };
      for (const f of PAGE_FIELDS) if (polled[f] !== undefined) data[f] = polled[f];
      return data;
    }
    case 'data.result':
      return { result: polled.result ?? null };
    default:
      // Profile and answer fields sit directly under data; a newsfeed that was not found is an error.
      if (tool === 'person_newsfeed' && (polled.result === null || polled.result === undefined))
        return null;
      return asObject(polled.result);
  }
}

export function mcpJobStatus(
  ctx: EmulatorContext,
  job: Job,
  tool: McpTool,
  page?: { offset: number; limit: number },
): McpJobStatus {
  const request_id = job.requestId;
  if (ctx.jobs.status(job) !== 'terminal') {
    return {
      status: 'pending',
      request_id,
      endpoint: tool,
      message: 'The job is still running; call check_status again in about a second.',
    };
  }
  const rendered = ctx.jobs.renderPoll(job, Date.now(), page);
  const body = JSON.parse(rendered.body) as {
    success: boolean;
    data?: Record<string, unknown>;
    error?: { code: string; message: string };
  };
  if (!body.success || !body.data) {
    return {
      status: 'error',
      request_id,
      endpoint: tool,
      code: body.error?.code ?? 'internal_error',
      message: body.error?.message ?? 'The job failed.',
    };
  }
  if (body.data.status === 'not_found') {
    const e = asObject(body.data.error);
    return {
      status: 'error',
      request_id,
      endpoint: tool,
      code: 'not_found',
      message: typeof e.message === 'string' ? e.message : 'No record matches the input.',
    };
  }
  const data = located(tool, body.data);
  if (!data) {
    return {
      status: 'error',
      request_id,
      endpoint: tool,
      code: 'not_found',
      message: 'No newsfeed was found for this profile.',
    };
  }
  return { status: 'complete', endpoint: tool, request_id, data };
}
