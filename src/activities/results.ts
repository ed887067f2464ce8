// Activities that write a batch's output: idempotent appends (so retries and replays never
// double a row), the output's creation (or a fresh start for an export), the CSV in row order at
// a batch's end, and the summary next to the output. A disk or permission problem is a
// non-retryable `output_unwritable` failure: the batch pauses with it instead of retrying forever.
import { open, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { exportBatchOutput } from '../batch-io/export.js';
import { makePrivateDir, PRIVATE_FILE_MODE, writeFileAtomic } from '../files/atomic-write.js';
import { makeOpenFilePrivate } from '../files/private-mode.js';
import type { NoLineLabel } from '../batch/flatten.js';
import { noteFailedRow } from '../batch/failed-rows.js';
import {
  appendResultLines,
  classifyWriteError,
  OutputUnwritableError,
  resetOutput,
  rewriteOutput,
  type AppendResult,
} from '../batch-io/result-writer.js';
import {
  CREDIT_BUDGET,
  type BatchSummary,
  type Counters,
  type ExportReport,
  type FailedRow,
  type InputFiles,
  type ResultLine,
} from '../batch/types.js';
import { withHeartbeat } from './heartbeat.js';
import { inputFailure } from './rows.js';

export const summaryPathOf = (output: string) => `${output}.summary.json`;

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

export function createResultActivities() {
  return {
    appendBatchResults(input: { path: string; lines: ResultLine[] }): Promise<AppendResult> {
      return writing(() => appendResultLines(input.path, input.lines));
    },

    /**
     * Creates the output of a batch if it does not exist; never truncates, so a batch that runs
     * its start again (an operator's reset) keeps every line already written. Starting afresh
     * over an old file is the launcher's decision (--overwrite), made before the batch starts.
     */
    createBatchOutput(input: { path: string }): Promise<void> {
      return writing(async () => {
        await makePrivateDir(dirname(input.path));
        const fh = await open(input.path, 'a', PRIVATE_FILE_MODE);
        try {
          await makeOpenFilePrivate(fh);
        } finally {
          await fh.close();
        }
      });
    },

    /**
     * A finished batch runs again with a higher budget: the lines of rows skipped for the budget
     * go (so those rows can run), every other line stays, and the counters are what stays.
     */
    reopenBatchOutput(input: {
      path: string;
      perRow: number;
    }): Promise<{ counters: Counters; failedRows: FailedRow[]; dropped: number }> {
      return writing(async () => {
        if (!(await stat(input.path).catch(() => undefined)))
          throw ApplicationFailure.create({
            type: 'invalid_options',
            message: `the batch's output ${input.path} is gone: a batch resumes over its own output`,
            nonRetryable: true,
          });
        const counters: Counters = { done: 0, found: 0, empty: 0, failed: 0, failedByCode: {} };
        const failedRows: FailedRow[] = [];
        const { dropped } = await withHeartbeat(() =>
          rewriteOutput(
            input.path,
            (l) => l.outcome === 'skipped' && l.code === CREDIT_BUDGET,
            (l) => {
              const line = l as unknown as ResultLine;
              counters.done += 1;
              if (line.duplicateOf !== undefined)
                counters.duplicates = (counters.duplicates ?? 0) + 1;
              if (line.outcome === 'found') {
                counters.found += 1;
                if (line.duplicateOf === undefined)
                  counters.credits = (counters.credits ?? 0) + input.perRow;
              } else if (line.outcome === 'empty') counters.empty += 1;
              else if (line.outcome === 'skipped') counters.skipped = (counters.skipped ?? 0) + 1;
              else {
                const code = line.code ?? 'unknown';
                counters.failed += 1;
                counters.failedByCode[code] = (counters.failedByCode[code] ?? 0) + 1;
                noteFailedRow(failedRows, { row: line.row, code });
              }
            },
          ),
        );
        return { counters, failedRows, dropped };
      });
    },

    resetBatchOutput(input: { path: string }): Promise<void> {
      return writing(() => resetOutput(input.path));
    },

    /**
     * Writes the batch's CSV from its JSONL, in row order. Idempotent: a retry writes the same
     * file again (written beside it, then renamed). Heartbeats: 50,000 rows take a while.
     */
    exportBatchCsv(input: {
      source: InputFiles;
      lines: string;
      target: string;
      noLine: NoLineLabel;
      /** Cells as they are (see ExportRequest.rawCells). */
      rawCells?: boolean;
    }): Promise<ExportReport> {
      return withHeartbeat((signal) =>
        exportBatchOutput({
          source: input.source,
          lines: input.lines,
          target: input.target,
          format: 'csv',
          noLine: input.noLine,
          ...(input.rawCells ? { rawCells: true } : {}),
          signal,
        }),
      ).catch((err: unknown) => {
        // An input gone or unreadable gives the same answer every time: not retried.
        throw inputFailure(err, input.source.path);
      });
    },

    async writeBatchSummary(input: { path: string; summary: unknown }): Promise<string> {
      const target = summaryPathOf(input.path);
      // Write then rename, so a reader never sees half a summary; 0600 like the results.
      await writeFileAtomic(target, JSON.stringify(input.summary, null, 2) + '\n');
      return target;
    },
  };
}

export type { BatchSummary };
