// Pure classification of job statuses: every value the interface documents, per polling contract.
// A value the interface does not list is its own outcome, never silently "still running".
import type { PollingContract } from './catalogue.js';

export const IN_PROGRESS = [
  'pending',
  'queued',
  'processing',
  'finding',
  'fetching',
  'analyzing',
  'enriching',
  'gathering',
  'aggregating',
  'searching',
  'discovering',
  'running',
  'started',
  'in_progress',
] as const;
export const SUCCEEDED = ['completed', 'complete', 'success', 'succeeded'] as const;
export const FAILED = [
  'failed',
  'error',
  'not_found',
  'cancelled',
  'canceled',
  'timeout',
  'timed_out',
] as const;

/** Statuses of a submit acknowledgement (common async pattern): the job was accepted, nothing has run. */
export const ACK_STATUSES = ['queued', 'processing'] as const;

// The person-search contract overrides the general lists: `queued` and the other general
// in-progress words are not part of it. It names no failure status, so the general failure list
// still applies there (a failed job must end, not be read as undocumented).
export const SEARCH_IN_PROGRESS = ['processing', 'pending', 'enriching'] as const;
export const SEARCH_TERMINAL = ['completed', 'exhausted', 'stale'] as const;

export const MCP_IN_PROGRESS = ['pending'] as const;
export const MCP_SUCCEEDED = ['complete', 'completed'] as const;
export const MCP_FAILED = ['error'] as const;

export type StatusClass =
  | { kind: 'running'; status: string }
  | { kind: 'succeeded'; status: string }
  | { kind: 'failed'; status: string }
  | { kind: 'unknown'; status: string };

const has = (list: readonly string[], s: string) => list.includes(s);

/**
 * Classify one status value. `completed`, when the reply carries it, decides whether the job is
 * still running; the status then says how it ended.
 */
export function classifyStatus(
  status: unknown,
  contract: PollingContract | 'mcp',
  completed?: boolean,
): StatusClass {
  // Case and surrounding blanks are not meaningful in a status word; the interface writes them lowercase.
  const s = typeof status === 'string' ? status.trim().toLowerCase() : '';
  const running = { kind: 'running', status: s } as const;
  // Rule 1 of the interface: when `completed` is present it decides, whatever the status says.
  if (completed === false) return running;
  // completed=true without a status word: the flag alone says the job finished.
  if (completed === true && s === '') return { kind: 'succeeded', status: s };

  let result: StatusClass;
  if (contract === 'mcp') {
    if (has(MCP_IN_PROGRESS, s)) result = running;
    else if (has(MCP_SUCCEEDED, s)) result = { kind: 'succeeded', status: s };
    else if (has(MCP_FAILED, s)) result = { kind: 'failed', status: s };
    else result = { kind: 'unknown', status: s };
  } else if (contract === 'person_search') {
    if (has(SEARCH_IN_PROGRESS, s)) result = running;
    else if (has(SEARCH_TERMINAL, s)) result = { kind: 'succeeded', status: s };
    else if (has(FAILED, s)) result = { kind: 'failed', status: s };
    else result = { kind: 'unknown', status: s };
  } else {
    if (has(IN_PROGRESS, s)) result = running;
    else if (has(SUCCEEDED, s)) result = { kind: 'succeeded', status: s };
    else if (has(FAILED, s)) result = { kind: 'failed', status: s };
    else result = { kind: 'unknown', status: s };
  }
  // completed=true ends the job even when the status word is an in-progress one.
  if (completed === true && result.kind === 'running') return { kind: 'succeeded', status: s };
  return result;
}
