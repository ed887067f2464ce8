// Activities that write a batch's output: idempotent appends (so retries and replays never
// double a row), a fresh start for a new batch, and the summary next to the output.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { appendResultLines, resetOutput, type AppendResult } from '../batch/result-writer.js';
import type { BatchSummary, ResultLine } from '../batch/types.js';

export const summaryPathOf = (output: string) => `${output}.summary.json`;

export function createResultActivities() {
  return {
    appendBatchResults(input: { path: string; lines: ResultLine[] }): Promise<AppendResult> {
      return appendResultLines(input.path, input.lines);
    },

    resetBatchOutput(input: { path: string }): Promise<void> {
      return resetOutput(input.path);
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
