// Activities that write a batch's output: idempotent appends (so retries and replays never
// double a row), a fresh start for a new batch, the CSV in row order at its end, and the
// summary next to the output.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { exportBatchOutput } from '../batch/export.js';
import type { NoLineLabel } from '../batch/flatten.js';
import { appendResultLines, resetOutput, type AppendResult } from '../batch/result-writer.js';
import type { BatchSummary, ExportReport, InputFiles, ResultLine } from '../batch/types.js';
import { withHeartbeat } from './heartbeat.js';
import { inputFailure } from './rows.js';

export const summaryPathOf = (output: string) => `${output}.summary.json`;

export function createResultActivities() {
  return {
    appendBatchResults(input: { path: string; lines: ResultLine[] }): Promise<AppendResult> {
      return appendResultLines(input.path, input.lines);
    },

    resetBatchOutput(input: { path: string }): Promise<void> {
      return resetOutput(input.path);
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
    }): Promise<ExportReport> {
      return withHeartbeat((signal) =>
        exportBatchOutput({
          source: { path: input.source.path, format: input.source.format },
          lines: input.lines,
          target: input.target,
          format: 'csv',
          noLine: input.noLine,
          signal,
        }),
      ).catch((err: unknown) => {
        // An input gone or unreadable gives the same answer every time: not retried.
        throw inputFailure(err, input.source.path);
      });
    },

    async writeBatchSummary(input: { path: string; summary: unknown }): Promise<string> {
      const target = summaryPathOf(input.path);
      await mkdir(dirname(target), { recursive: true });
      // Write then rename, so a reader never sees half a summary.
      await writeFile(`${target}.tmp`, JSON.stringify(input.summary, null, 2) + '\n');
      await rename(`${target}.tmp`, target);
      return target;
    },
  };
}

export type { BatchSummary };
