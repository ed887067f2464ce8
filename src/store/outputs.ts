// A stored batch's files, written where the caller runs: the JSONL output (a line per row as
// rows finish), the CSV in row order once the batch ended, and the summary beside them.
import { writeFileAtomic } from '../files/atomic-write.js';
import type { BatchProgress, BatchSummary } from '../batch/types.js';
import type { BatchRecords, ResultReader } from './roles.js';
import { exportBatchFromStore } from './export.js';
import { ResultFollower } from './follow.js';

export interface BatchOutputs {
  /** The JSONL output (for a CSV output, the JSONL its results stream to beside it). */
  output: string;
  csvOutput?: string;
  csvRawCells?: boolean;
}

/** The files of a stored batch, as its progress or summary names them. */
export function outputsOf(
  p: Pick<BatchProgress, 'output' | 'csvOutput' | 'csvRawCells'>,
): BatchOutputs {
  return {
    output: p.output,
    ...(p.csvOutput ? { csvOutput: p.csvOutput } : {}),
    ...(p.csvRawCells ? { csvRawCells: true } : {}),
  };
}

export const summaryPathOf = (output: string) => `${output}.summary.json`;

/**
 * Brings the files up to date with the store: while the batch runs the JSONL gets the lines it
 * lacks; once it ended (`summary` given), the JSONL and the CSV are written whole in row order
 * and the summary beside the file the user asked for. Returns the summary with what the CSV export wrote (or why it could not).
 */
export async function writeBatchOutputs(
  store: BatchRecords & ResultReader,
  batchId: string,
  files: BatchOutputs,
  summary?: BatchSummary,
  follower: ResultFollower = new ResultFollower(store, batchId, files.output),
): Promise<BatchSummary | undefined> {
  if (!summary) {
    await follower.step();
    return undefined;
  }
  // Once the batch ended, the JSONL is written whole in row order: a batch run again for its
  // budget replaced lines the file may hold from before.
  await exportBatchFromStore(store, {
    batchId,
    format: 'jsonl',
    target: files.output,
    noLine: summary.state === 'done' ? 'missing' : 'not_run',
  });
  let final = summary;
  if (files.csvOutput) {
    try {
      const csv = await exportBatchFromStore(store, {
        batchId,
        format: 'csv',
        target: files.csvOutput,
        // Rows not run at the end of a done batch should not exist: they are flagged as missing.
        noLine: summary.state === 'done' ? 'missing' : 'not_run',
        ...(files.csvRawCells ? { rawCells: true } : {}),
      });
      final = { ...summary, csv };
    } catch (err) {
      final = {
        ...summary,
        csvError: `the CSV could not be written: ${err instanceof Error ? err.message : 'unknown error'}`,
      };
    }
  }
  await writeFileAtomic(
    summaryPathOf(files.csvOutput ?? files.output),
    JSON.stringify(final, null, 2) + '\n',
  );
  return final;
}
