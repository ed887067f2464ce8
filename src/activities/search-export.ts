// Activities of a search export: its JSONL output started afresh, each page's rows read by GET and
// appended to it (they never enter history; appends are idempotent by row, so a retry doubles
// none), and the summary beside it. A disk or permission problem is a non-retryable
// `output_unwritable` failure.
import { ApplicationFailure } from '@temporalio/common';
import {
  appendResultLines,
  classifyWriteError,
  OutputUnwritableError,
  resetOutput,
} from '../batch-io/result-writer.js';
import { writeFileAtomic } from '../files/atomic-write.js';
import { summaryPathOf } from '../store/outputs.js';
import type { ActivityDeps } from './deps.js';
import { fetchSearchPage, type SearchPageRef } from './search-pages.js';

export type ExportPage =
  | { kind: 'running'; status: string }
  | { kind: 'done'; status: string; rows: number; written: number; hasMore: boolean };

/** Rethrows a disk or permission problem as a non-retryable `output_unwritable` failure. */
async function writing<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const e = classifyWriteError(err);
    if (e instanceof OutputUnwritableError) {
      throw ApplicationFailure.create({
        type: 'output_unwritable',
        message: e.message,
        nonRetryable: true,
        details: [{ code: 'output_unwritable', errno: e.errno }],
      });
    }
    throw err;
  }
}

// The activities keep the names they were recorded under (a search export's history names them).
export function createSearchExportActivities(deps: ActivityDeps) {
  return {
    /** Starts the export's output afresh, creating its folder. */
    resetBatchOutput(input: { path: string }): Promise<void> {
      return writing(() => resetOutput(input.path));
    },

    /**
     * GETs one stored page of a search and appends its rows to the export file, numbered from
     * `firstRow`. The rows go straight to the file: they never enter workflow history.
     */
    async exportSearchPage(input: {
      ref: SearchPageRef;
      path: string;
      firstRow: number;
      take: number;
    }): Promise<ExportPage> {
      // Rows go to the file, not into a result: a page of any size is fine here.
      const page = await fetchSearchPage(deps, input.ref);
      if (page.kind === 'running') return page;
      const rows = page.rows.slice(0, input.take);
      const { written } = await appendResultLines(
        input.path,
        rows.map((result, i) => ({ row: input.firstRow + i, result })),
      );
      return {
        kind: 'done',
        status: page.status,
        rows: rows.length,
        written,
        hasMore: page.hasMore,
      };
    },

    /** Writes the summary beside the output (then renamed, so no reader sees half; 0600). */
    async writeBatchSummary(input: { path: string; summary: unknown }): Promise<string> {
      const target = summaryPathOf(input.path);
      await writeFileAtomic(target, JSON.stringify(input.summary, null, 2) + '\n');
      return target;
    },
  };
}
