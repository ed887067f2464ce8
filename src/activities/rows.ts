// Activities that read a batch's input file: a first pass that counts rows and checks the
// columns, then chunks from a byte offset. A bad file fails for good with a clear message.
import { withHeartbeat } from './heartbeat.js';
import { ApplicationFailure } from '@temporalio/common';
import { ColumnError } from '../batch/columns.js';
import {
  DuplicateFinder,
  markDuplicates,
  readDuplicatesIndex,
  writeDuplicatesIndex,
} from '../batch-io/duplicates.js';
import { lineOutcomes, rowsWithLines } from '../batch-io/result-writer.js';
import { inspectInput, InputError, readRows } from '../batch-io/row-reader.js';
import type {
  InputInspection,
  InputSource,
  ReadCursor,
  ReadRowsRequest,
  ReadRowsResult,
  ValidRow,
} from '../batch/types.js';

/** Errors about the file itself are not retried: the same file gives the same answer. */
export function inputFailure(err: unknown, path: string): unknown {
  if (err instanceof ColumnError || err instanceof InputError) {
    return ApplicationFailure.create({
      type: 'invalid_input_file',
      message: err.message,
      nonRetryable: true,
    });
  }
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
    const what =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EACCES'
          ? 'permission denied'
          : 'is a directory';
    return ApplicationFailure.create({
      type: 'input_not_readable',
      message: `${path}: ${what} (workers read the input: they must see the same filesystem as the CLI)`,
      nonRetryable: true,
    });
  }
  return err;
}

/** `maxRowBytes`: the worker's row limit (PCDS_MAX_ROW_BYTES), unless a batch sets its own. */
export function createRowActivities(defaults: { maxRowBytes: number }) {
  return {
    async inspectBatchInput(input: {
      source: InputSource;
      endpoint: string;
      maxRowBytes?: number;
    }): Promise<InputInspection> {
      try {
        return await withHeartbeat(() =>
          inspectInput(input.source, input.endpoint, input.maxRowBytes ?? defaults.maxRowBytes),
        );
      } catch (err) {
        throw inputFailure(err, input.source.path);
      }
    },

    async readBatchRows(req: ReadRowsRequest): Promise<ReadRowsResult> {
      try {
        const got = await readRows({
          ...req,
          maxRowBytes: req.maxRowBytes ?? defaults.maxRowBytes,
        });
        let rows = got.rows;
        if (req.skipWritten) {
          const written = await rowsWithLines(
            req.skipWritten,
            rows.map((r) => r.row),
          );
          rows = rows.filter((r) => !written.has(r.row));
        }
        if (req.duplicates) {
          const index = await readDuplicatesIndex(req.duplicates);
          // Without its index (deleted by hand) a batch sends every row: dearer, never wrong.
          if (index) rows = markDuplicates(rows, index);
        }
        if (req.skipWritten) {
          // Reopened: a duplicate whose leader keeps its line takes that line's end.
          const leaders = rows.flatMap((r) =>
            'duplicateOf' in r && r.duplicateOf !== undefined ? [r.duplicateOf] : [],
          );
          const ends = await lineOutcomes(req.skipWritten, leaders);
          rows = rows.map((r) => {
            const end = 'duplicateOf' in r && r.duplicateOf ? ends.get(r.duplicateOf) : undefined;
            return end ? { ...r, leaderLine: end as ValidRow['leaderLine'] } : r;
          });
        }
        return { ...got, rows };
      } catch (err) {
        throw inputFailure(err, req.source.path);
      }
    },

    /**
     * Reads the whole input once and writes which rows repeat an earlier row (row numbers only)
     * to `index`. Idempotent: a retry writes the same file. Heartbeats: a large file takes a while.
     */
    async indexDuplicateRows(input: {
      source: InputSource;
      endpoint: string;
      header?: string[];
      from: ReadCursor;
      index: string;
      maxRowBytes?: number;
    }): Promise<{ duplicates: number; leaders: number }> {
      try {
        return await withHeartbeat(async () => {
          const finder = new DuplicateFinder();
          let from = input.from;
          while (!from.done) {
            const got = await readRows({
              source: input.source,
              endpoint: input.endpoint,
              ...(input.header ? { header: input.header } : {}),
              from,
              count: 5000,
              maxBytes: 64 * 1024 * 1024,
              maxRowBytes: input.maxRowBytes ?? defaults.maxRowBytes,
            });
            for (const row of got.rows) finder.add(row);
            from = got.next;
          }
          await writeDuplicatesIndex(input.index, finder.followers);
          return {
            duplicates: finder.followers.size,
            leaders: new Set(finder.followers.values()).size,
          };
        });
      } catch (err) {
        throw inputFailure(err, input.source.path);
      }
    },
  };
}
