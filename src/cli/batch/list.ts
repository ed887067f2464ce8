// `pcds batch list`: recent batches from Temporal's visibility (the batch's type under its current
// and 0.1.x names), with their state, row counters (PcdsRowsDone / PcdsRowsFailed) and age.
import type { Client } from '@temporalio/client';
import type { TypedSearchAttributes } from '@temporalio/common';
import { decodeTypedSearchAttributes } from '@temporalio/common/lib/converter/payload-search-attributes.js';
import { optionalTsToDate, requiredTsToDate } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { Command, Option } from 'commander';
import { loadConfig } from '../../config.js';
import { PcdsRowsDone, PcdsRowsFailed, PcdsState } from '../../temporal/search-attributes.js';
import { BATCH_WORKFLOW_TYPE } from '../../temporal/workflow-types.js';
import { intArg } from '../args.js';
import { action, printJson } from '../output.js';
import { connectTemporal } from '../temporal-connection.js';

/** The batch's type in release 0.1.x: batches started then still run, and are listed too. */
const OLD_BATCH_WORKFLOW_TYPE = 'batchWorkflow';

/** `--state` values: a closed batch's end, or what a running batch does now (its PcdsState). */
const LIST_STATES = {
  running: 'ExecutionStatus = "Running"',
  paused: 'ExecutionStatus = "Running" AND PcdsState = "paused"',
  completed: 'ExecutionStatus = "Completed"',
  failed: 'ExecutionStatus = "Failed"',
  cancelled: 'ExecutionStatus = "Canceled"',
  terminated: 'ExecutionStatus = "Terminated"',
  timed_out: 'ExecutionStatus = "TimedOut"',
} as const;
type ListState = keyof typeof LIST_STATES;

/** The visibility query of `batch list`: one row per batch (runs it continued from are left out). */
export function batchListQuery(state?: ListState): string {
  const types = `WorkflowType IN ("${BATCH_WORKFLOW_TYPE}", "${OLD_BATCH_WORKFLOW_TYPE}")`;
  const current = 'ExecutionStatus != "ContinuedAsNew"';
  return [types, state ? LIST_STATES[state] : current].join(' AND ');
}

interface BatchListRow {
  batchId: string;
  /** Running: what it does now (running, paused, draining, ...); closed: how it ended. */
  state: string;
  rowsDone?: number;
  rowsFailed?: number;
  startedAt: string;
  closedAt?: string;
  ageSeconds: number;
}

/** What `batch list` reads of a visibility record (never the memo: it may need other keys). */
export interface BatchRecord {
  workflowId: string;
  /** Temporal's execution status, lower-case: running, completed, failed, canceled, ... */
  status: string;
  startTime: Date;
  closeTime?: Date;
  attrs: TypedSearchAttributes;
}

/** One listed batch from its visibility record. */
function batchListRow(info: BatchRecord, now: number): BatchListRow {
  const attrs = info.attrs;
  const shown = attrs.get(PcdsState);
  const status = info.status === 'canceled' ? 'cancelled' : info.status;
  const done = attrs.get(PcdsRowsDone);
  const failed = attrs.get(PcdsRowsFailed);
  return {
    batchId: info.workflowId.replace(/^batch-/, ''),
    // A completed batch says done or cancelled (its own word); other ends are Temporal's.
    state: status === 'running' || status === 'completed' ? (shown ?? status) : status,
    ...(done !== undefined ? { rowsDone: done } : {}),
    ...(failed !== undefined ? { rowsFailed: failed } : {}),
    startedAt: info.startTime.toISOString(),
    ...(info.closeTime ? { closedAt: info.closeTime.toISOString() } : {}),
    ageSeconds: Math.max(0, Math.round((now - info.startTime.getTime()) / 1000)),
  };
}

/** `45s`, `12m`, `3h 05m`, `2d 04h`. */
export function ageText(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${String(h % 24).padStart(2, '0')}h`;
}

/** The rows as an aligned table, newest first. */
export function batchListText(rows: BatchListRow[]): string {
  if (rows.length === 0) return 'no batches\n';
  const table = [
    ['BATCH', 'STATE', 'DONE', 'FAILED', 'AGE', 'STARTED'],
    ...rows.map((r) => [
      r.batchId,
      r.state,
      r.rowsDone === undefined ? '-' : String(r.rowsDone),
      r.rowsFailed === undefined ? '-' : String(r.rowsFailed),
      ageText(r.ageSeconds),
      r.startedAt.replace(/\.\d+Z$/, 'Z'),
    ]),
  ];
  const widths = table[0].map((_, c) => Math.max(...table.map((row) => row[c].length)));
  return table
    .map((row) =>
      row
        .map((cell, c) => cell.padEnd(widths[c]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

const STATUS_PREFIX = 'WORKFLOW_EXECUTION_STATUS_';

/**
 * Up to `limit` batches, newest first. Read from the raw visibility records: the client's list
 * would decode each memo, and a memo encrypted with a key this CLI does not hold (an older,
 * rotated one) would stop the whole listing.
 */
async function listBatches(
  client: Client,
  o: { limit: number; state?: ListState },
  now = Date.now(),
): Promise<BatchListRow[]> {
  const rows: BatchListRow[] = [];
  const query = batchListQuery(o.state);
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      pageSize: Math.min(o.limit - rows.length, 100),
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const raw of page.executions) {
      const status = proto.temporal.api.enums.v1.WorkflowExecutionStatus[raw.status ?? 0] ?? '';
      const closeTime = optionalTsToDate(raw.closeTime);
      rows.push(
        batchListRow(
          {
            workflowId: raw.execution?.workflowId ?? '',
            status: status.replace(STATUS_PREFIX, '').toLowerCase(),
            startTime: requiredTsToDate(raw.startTime, 'startTime'),
            ...(closeTime ? { closeTime } : {}),
            attrs: decodeTypedSearchAttributes(raw.searchAttributes?.indexedFields),
          },
          now,
        ),
      );
      if (rows.length >= o.limit) return rows;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return rows;
}

export function registerBatchListCommand(batch: Command): Command {
  return batch
    .command('list')
    .description('Recent batches: state, rows done and failed, age (newest first)')
    .option('--limit <n>', 'most batches to list (1-1000)', intArg('--limit', 1, 1000), 20)
    .addOption(
      new Option('--state <state>', 'only batches in this state').choices(Object.keys(LIST_STATES)),
    )
    .option('--json', 'print the batches as JSON')
    .action(
      action(async (o: { limit: number; state?: ListState; json?: boolean }) => {
        const config = loadConfig();
        const { client, close } = await connectTemporal(config);
        try {
          const rows = await listBatches(client, {
            limit: o.limit,
            ...(o.state ? { state: o.state } : {}),
          });
          if (o.json) printJson(rows);
          else process.stdout.write(batchListText(rows));
        } finally {
          await close();
        }
      }),
    );
}
