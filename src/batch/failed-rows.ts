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

/** A failed output line as `pcds batch status --failed` lists it: row, code and the line's reason. */
export interface FailedRowReason extends FailedRow {
  /** The line's message: it names fields and rules, never a value (see the batch's writer). */
  reason?: string;
}

/** The failed row a parsed output line is, or undefined for any other line. */
export function failedRowOfLine(line: unknown): FailedRowReason | undefined {
  if (typeof line !== 'object' || line === null) return undefined;
  const l = line as { row?: unknown; outcome?: unknown; code?: unknown; message?: unknown };
  if (l.outcome !== 'failed' || typeof l.row !== 'number') return undefined;
  const code = typeof l.code === 'string' ? l.code : 'unknown';
  // Messages often repeat the code as their prefix (`invalid_request: email ...`): shown once.
  const message = typeof l.message === 'string' ? l.message.trim() : '';
  const reason = message.startsWith(`${code}:`) ? message.slice(code.length + 1).trim() : message;
  return { row: l.row, code, ...(reason ? { reason } : {}) };
}

/** `row 3 invalid_row: email must be an email address` (the code alone when there is no reason). */
export function failedRowText(f: FailedRowReason): string {
  return `row ${f.row} ${f.code}${f.reason ? `: ${f.reason}` : ''}`;
}
