// The few failed rows a batch shows in its progress and summary: the lowest row numbers, so the
// list is the same whatever order the rows finish in, and small enough to carry across runs.
import { MAX_FAILED_ROWS, type FailedRow } from './types.js';

/** Notes a failed row in `list` (sorted by row, at most `max` long), in place. */
export function noteFailedRow(list: FailedRow[], failed: FailedRow, max = MAX_FAILED_ROWS): void {
  if (list.some((f) => f.row === failed.row)) return;
  if (list.length >= max && failed.row > list[list.length - 1].row) return;
  const at = list.findIndex((f) => f.row > failed.row);
  list.splice(at === -1 ? list.length : at, 0, { row: failed.row, code: failed.code });
  if (list.length > max) list.length = max;
}
