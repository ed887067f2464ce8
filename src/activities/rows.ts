// Activities that read a batch's input file: a first pass that counts rows and checks the
// columns, then chunks from a byte offset. A bad file fails for good with a clear message.
import { withHeartbeat } from './heartbeat.js';
import { ApplicationFailure } from '@temporalio/common';
import { ColumnError } from '../batch/columns.js';
import { inspectInput, InputError, readRows } from '../batch/row-reader.js';
import type {
  InputInspection,
  InputSource,
  ReadRowsRequest,
  ReadRowsResult,
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
        return await readRows({ ...req, maxRowBytes: req.maxRowBytes ?? defaults.maxRowBytes });
      } catch (err) {
        throw inputFailure(err, req.source.path);
      }
    },
  };
}
