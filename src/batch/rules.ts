// The rules of a batch, apart from Temporal: which row goes next and on which key, what a finished
// row's call means for the batch (a line, a row sent back, a key taken out, a pause), and the
// counters. Pure and deterministic: the batch workflow drives it from its handlers and its loop,
// and unit tests drive it with no server.
import type { CallOutcome } from '../workflows/types.js';
import { isKeyFault, isSystemic } from '../contract/index.js';
import { noteFailedRow } from './failed-rows.js';
import {
  estimateJobMs,
  firstPollDelayFor,
  jobSampleOf,
  recordJobMs,
  requestsPerRow,
} from './job-duration.js';
import { activeKeys, describeRemoved, pickKey, refreshKeyPool, removeKey } from './key-pool.js';
import type { PoolKeyConfig } from './key-pool.js';
import { etaSeconds, recordCompletions, rowsPerSecond } from './rate.js';
import {
  INVALID_ROW,
  MAX_WINDOW,
  isInvalidRow,
  type BatchProgress,
  type BatchStateName,
  type CarriedState,
  type InFlightRow,
  type InputRow,
  type ResultLine,
  type ValidRow,
} from './types.js';

/** How a row's call ended, as the batch hears it: its outcome, or its failure. */
export interface RowFailure {
  code: string;
  message: string;
  /** Set when the service accepted a job for the row: it is never submitted again. */
  requestId?: string;
}

/** `written`: the row's line is in the output already (a compact batch's row wrote it). */
export type RowEnd = { outcome: CallOutcome; written?: boolean } | { failure: RowFailure };

export const clampWindow = (n: number) => Math.max(1, Math.min(MAX_WINDOW, Math.floor(n)));

export class BatchRules {
  /** Rows read from the file and not started yet, in file order. */
  readonly queue: InputRow[] = [];
  /** Rows whose call runs, by row number. */
  readonly inFlight = new Map<number, InFlightRow>();
  /** Lines ready for the output, in the order the rows finished. */
  readonly results: ResultLine[] = [];

  constructor(
    /** What crosses continue-as-new: the rules change it in place. */
    readonly s: CarriedState,
  ) {
    s.jobMs ??= [];
    s.requests ??= { rows: 0, polls: 0 };
    s.failedRows ??= [];
    for (const r of s.inFlight ?? []) this.inFlight.set(r.row.row, r);
  }

  get paused() {
    return this.s.paused;
  }

  /** The first poll's delay a new row gets: the learned job duration, once there is one. */
  firstPollDelayMs(): number | undefined {
    return firstPollDelayFor(this.s.jobMs!);
  }

  setWindow(width: number): void {
    if (Number.isFinite(width)) this.s.window = clampWindow(width);
  }

  pauseByOperator(reason?: string): void {
    if (this.s.paused) return;
    this.s.paused = { code: 'paused_by_operator', message: reason ?? 'paused by an operator' };
  }

  /** The output cannot be written: the batch waits for an operator, with the reason. */
  pauseForOutput(message: string): void {
    if (this.s.paused?.code === 'output_unwritable') return;
    this.s.paused = {
      code: 'output_unwritable',
      message: `${message}; fix the disk or its permissions, then resume`,
    };
  }

  /**
   * A resume with the worker's current keys. Returns whether the keys' credit breakers should be
   * closed: only after a pause for credits, since an operator's pause or a full disk says
   * nothing about the account having been topped up.
   */
  resume(keys: readonly PoolKeyConfig[]): { closeCreditBreakers: boolean } {
    const was = this.s.paused;
    this.s.pool = refreshKeyPool(this.s.pool, keys);
    this.s.paused = undefined;
    return { closeCreditBreakers: was?.code === 'insufficient_credits' };
  }

  /** Counts a line and queues it for the output, unless it is written already. */
  record(line: ResultLine, nowMs: number, written = false): void {
    const c = this.s.counters;
    c.done += 1;
    if (line.outcome === 'found') c.found += 1;
    else if (line.outcome === 'empty') c.empty += 1;
    else {
      c.failed += 1;
      const code = line.code ?? 'unknown';
      c.failedByCode[code] = (c.failedByCode[code] ?? 0) + 1;
      noteFailedRow(this.s.failedRows!, { row: line.row, code });
    }
    recordCompletions(this.s.rate, nowMs);
    if (!written) this.results.push(line);
  }

  /**
   * Takes what a row's call came to. False when the row is not in flight (already settled, or
   * not started by this batch's current state), and then nothing changes: each row ends once.
   * A systemic failure with no job (401/403, 402) sends the row back to be started again and
   * takes its key out or pauses the batch; a row with a request id has a job, maybe charged,
   * and ends with it, never submitted twice.
   */
  settle(rowNumber: number, end: RowEnd, nowMs: number, at: string, cancelling = false): boolean {
    const flying = this.inFlight.get(rowNumber);
    if (!flying) return false;
    this.inFlight.delete(rowNumber);
    const { row, keyId } = flying;
    const key = row.key;
    if ('outcome' in end) {
      const o = end.outcome;
      if (o.outcome !== 'failed' && o.timing) {
        recordJobMs(this.s.jobMs!, jobSampleOf(o.timing));
        this.s.requests!.rows += 1;
        this.s.requests!.polls += o.timing.polls;
      }
      const written = end.written === true;
      if (o.outcome === 'found')
        this.record(
          { row: row.row, key, outcome: 'found', requestId: o.requestId, result: o.result },
          nowMs,
          written,
        );
      else if (o.outcome === 'empty')
        this.record(
          { row: row.row, key, outcome: 'empty', requestId: o.requestId },
          nowMs,
          written,
        );
      else
        this.record(
          {
            row: row.row,
            key,
            outcome: 'failed',
            code: o.code,
            message: o.message,
            ...(o.requestId ? { requestId: o.requestId } : {}),
          },
          nowMs,
        );
      return true;
    }
    const { code, message, requestId } = end.failure;
    // Rows cancelled with the batch are not written: they were not run to the end.
    if (cancelling && code === 'cancelled') return true;
    if (isSystemic(code) && requestId === undefined) {
      this.s.redo.push(row);
      if (isKeyFault(code)) {
        removeKey(this.s.pool, keyId, code, at);
        if (activeKeys(this.s.pool).length === 0 && !this.s.paused) {
          this.s.paused = {
            code,
            message: `no key left in the pool: ${describeRemoved(this.s.pool)}; fix the keys, then resume`,
          };
        }
      } else if (!this.s.paused) {
        this.s.paused = {
          code,
          keyId,
          message: `${code} on key ${keyId}: top up the account's credits, then resume`,
        };
      }
      return true;
    }
    this.record(
      {
        row: row.row,
        key,
        outcome: 'failed',
        code,
        message,
        ...(requestId ? { requestId } : {}),
      },
      nowMs,
    );
    return true;
  }

  /**
   * The rows the window lets start now, each with its key (marked in flight), redone rows first.
   * Invalid rows are written on the way, without a call. With no key left the batch pauses.
   */
  takeStartable(nowMs: number): { row: ValidRow; keyId: string; redo: boolean }[] {
    const out: { row: ValidRow; keyId: string; redo: boolean }[] = [];
    while (!this.s.paused) {
      const redo = this.s.redo[0] !== undefined;
      const next: InputRow | undefined = this.s.redo[0] ?? this.queue[0];
      if (!next) break;
      if (isInvalidRow(next)) {
        this.queue.shift();
        this.record(
          {
            row: next.row,
            key: next.key,
            outcome: 'failed',
            code: next.code ?? INVALID_ROW,
            message: next.problem,
          },
          nowMs,
        );
        continue;
      }
      if (this.inFlight.size >= this.s.window) break;
      const keyId = pickKey(this.s.pool);
      if (!keyId) {
        this.s.paused = {
          code: 'no_keys_left',
          message: `no key left in the pool: ${describeRemoved(this.s.pool)}`,
        };
        break;
      }
      if (redo) this.s.redo.shift();
      else this.queue.shift();
      this.inFlight.set(next.row, { row: next, keyId });
      out.push({ row: next, keyId, redo });
    }
    return out;
  }

  /** Whether a row could start (or an invalid one be written) now, or more should be read. */
  canStart(): boolean {
    if (this.s.paused) return false;
    const next = this.s.redo[0] ?? this.queue[0];
    if (next && (isInvalidRow(next) || this.inFlight.size < this.s.window)) return true;
    return this.wantsRows();
  }

  /** The queue is short of a window and the file has more. */
  wantsRows(): boolean {
    return !this.s.paused && this.queue.length < this.s.window && !this.s.cursor.done;
  }

  /** Every row is read and started or sent back: nothing left but what is in flight. */
  allStarted(): boolean {
    return this.s.cursor.done && this.queue.length === 0 && this.s.redo.length === 0;
  }

  /**
   * The state for the next run: rows read but not started are read again from the first one's
   * offset; rows in flight go along when `keepInFlight` (their calls report to the batch's
   * workflow id, whichever run it is in).
   */
  carry(historyLength: number, keepInFlight: boolean): CarriedState {
    const first = this.queue[0];
    if (first) this.s.cursor = { row: first.row, byteOffset: first.offset, done: false };
    this.s.historyEvents += historyLength;
    if (keepInFlight) this.s.inFlight = [...this.inFlight.values()];
    else delete this.s.inFlight;
    return this.s;
  }

  /** Counters and learned figures for the progress query. */
  progress(
    nowMs: number,
    state: BatchStateName,
  ): Pick<
    BatchProgress,
    | 'state'
    | 'total'
    | 'done'
    | 'found'
    | 'empty'
    | 'failed'
    | 'failedByCode'
    | 'inFlight'
    | 'window'
    | 'paused'
    | 'pool'
    | 'rowsPerSecond'
    | 'etaSeconds'
    | 'jobMsEstimate'
    | 'requestsPerRow'
    | 'startedAt'
    | 'runs'
    | 'blankLines'
    | 'failedRows'
  > {
    const s = this.s;
    const rate = rowsPerSecond(s.rate, nowMs, Date.parse(s.startedAt));
    const eta = etaSeconds(s.total - s.counters.done, rate);
    const estimate = estimateJobMs(s.jobMs!);
    const perRow = requestsPerRow(s.requests!);
    return {
      state,
      total: s.total,
      ...s.counters,
      failedByCode: { ...s.counters.failedByCode },
      inFlight: this.inFlight.size,
      window: s.window,
      ...(s.paused ? { paused: s.paused } : {}),
      pool: s.pool.keys.map((k) => ({
        id: k.id,
        weight: k.weight,
        started: s.pool.started[k.id] ?? 0,
        ...(k.removed ? { removed: k.removed.code } : {}),
      })),
      rowsPerSecond: Math.round(rate * 100) / 100,
      ...(eta !== undefined ? { etaSeconds: eta } : {}),
      ...(estimate !== undefined ? { jobMsEstimate: estimate } : {}),
      ...(perRow !== undefined ? { requestsPerRow: perRow } : {}),
      startedAt: s.startedAt,
      runs: s.runs,
      blankLines: s.blankLines ?? 0,
      failedRows: [...s.failedRows!],
    };
  }

  /** One line for the Web UI's details. */
  details(state: BatchStateName): string {
    const s = this.s;
    const c = s.counters;
    const failedCodes = Object.entries(c.failedByCode)
      .map(([code, n]) => `${code} ${n}`)
      .join(', ');
    return (
      `${state}${s.paused ? ` (${s.paused.code}: ${s.paused.message})` : ''}: ${c.done}/${s.total} rows, ` +
      `${c.found} found, ${c.empty} empty, ${c.failed} failed${failedCodes ? ` (${failedCodes})` : ''}, ` +
      `${this.inFlight.size} in flight, window ${s.window}`
    );
  }
}
