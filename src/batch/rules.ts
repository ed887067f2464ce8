// The rules of a batch, apart from Temporal: which row goes next and on which key, what a finished
// row's call means for the batch (a line, a row sent back, a key taken out, a pause), and the
// counters. Pure and deterministic: the batch workflow drives it from its handlers and its loop,
// and unit tests drive it with no server.
import type { CallOutcome } from '../calls/types.js';
import { isKeyFault, isSystemic } from '../contract/index.js';
import { noteFailedRow } from './failed-rows.js';
import {
  estimateJobMs,
  firstPollDelayFor,
  jobSampleOf,
  recordJobMs,
  requestsPerRow,
} from './job-duration.js';
import {
  activeKeys,
  describeRemoved,
  pickKey,
  refreshKeyPool,
  removeKey,
  windowsOfPoolKey,
} from './key-pool.js';
import type { PoolKeyConfig } from './key-pool.js';
import { assumedRequestsPerRow, etaSeconds, measuredShare, recordSent } from './plan.js';
import { etaSeconds as rateEtaSeconds, recordCompletions, rowsPerSecond } from './rate.js';
import {
  CREDIT_BUDGET,
  INVALID_ROW,
  MAX_WINDOW,
  isInvalidRow,
  type BatchProgress,
  type EtaBasis,
  type BatchStateName,
  type CarriedState,
  type InFlightRow,
  type InputRow,
  type ParkedRow,
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

/** What a row costs the batch's budget: the endpoint's typical price, and the budget if any. */
export interface CreditRules {
  perRow: number;
  max?: number;
}

const duplicateOf = (r: InputRow): number | undefined =>
  'duplicateOf' in r ? r.duplicateOf : undefined;

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
    readonly credits: CreditRules = { perRow: 0 },
    /** Rows wait for webhooks: one request a row until the batch measures its own. */
    readonly webhooks = false,
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

  /**
   * A row whose earlier call (under this batch id) failed before the service accepted anything,
   * met again by a reopened batch: it goes back to be started again, with no pause and no key
   * taken out for what happened then.
   */
  sendBack(rowNumber: number): boolean {
    const flying = this.inFlight.get(rowNumber);
    if (!flying) return false;
    this.inFlight.delete(rowNumber);
    this.s.redo.push(flying.row);
    return true;
  }

  /** A new credit budget: rows left may run again if it covers them. */
  setBudget(maxCredits: number): void {
    if (!Number.isSafeInteger(maxCredits) || maxCredits < 0) return;
    this.credits.max = maxCredits;
    this.s.maxCredits = maxCredits;
    this.s.budgetSpent = false;
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
    if (line.duplicateOf !== undefined) c.duplicates = (c.duplicates ?? 0) + 1;
    if (line.outcome === 'found') c.found += 1;
    else if (line.outcome === 'empty') c.empty += 1;
    else if (line.outcome === 'skipped') c.skipped = (c.skipped ?? 0) + 1;
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
   * Counts a finished row's requests in its key's windows, as of its end (its last poll): the
   * submit and polls when measured; else the assumed figure for a row with a job, one request
   * for a row refused without one. A row in flight counts nowhere yet: the ETA has it to send.
   */
  private noteSent(keyId: string, nowMs: number, end: RowEnd): void {
    const key = this.s.pool.keys.find((k) => k.id === keyId);
    if (!key) return;
    const o = 'outcome' in end ? end.outcome : undefined;
    const count =
      o && o.outcome !== 'failed' && o.timing
        ? 1 + o.timing.polls
        : (o?.requestId ?? ('failure' in end ? end.failure.requestId : undefined))
          ? assumedRequestsPerRow(this.webhooks)
          : 1;
    const sent = (this.s.sent ??= {});
    recordSent((sent[keyId] ??= []), nowMs, count, windowsOfPoolKey(key));
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
    this.noteSent(keyId, nowMs, end);
    if ('outcome' in end) {
      const o = end.outcome;
      if (o.outcome !== 'failed' && o.timing) {
        recordJobMs(this.s.jobMs!, jobSampleOf(o.timing));
        this.s.requests!.rows += 1;
        this.s.requests!.polls += o.timing.polls;
      }
      const written = end.written === true;
      if (o.outcome === 'found') {
        this.s.counters.credits = (this.s.counters.credits ?? 0) + this.credits.perRow;
        this.record(
          { row: row.row, key, outcome: 'found', requestId: o.requestId, result: o.result },
          nowMs,
          written,
        );
      } else if (o.outcome === 'empty')
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
      this.leaderEnded(
        row,
        o.outcome === 'failed' ? { outcome: 'failed', code: o.code } : o,
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
    this.leaderEnded(row, { outcome: 'failed', code }, nowMs);
    return true;
  }

  /**
   * A row that other rows repeat has its line: they get theirs now if they are parked, or when
   * they are read, as copies the writer fills from its line.
   */
  private leaderEnded(
    row: ValidRow,
    end: { outcome: ResultLine['outcome']; code?: string },
    nowMs: number,
  ): void {
    if (!row.followers) return;
    (this.s.leaders ??= {})[row.row] =
      end.code !== undefined
        ? [end.outcome, row.followers, end.code]
        : [end.outcome, row.followers];
    this.releaseParked(row.row, nowMs);
  }

  /** The duplicates parked behind `leaderRow` take their lines from its end. */
  private releaseParked(leaderRow: number, nowMs: number): void {
    const parked = this.s.parked ?? [];
    const mine = parked.filter((p) => p.duplicateOf === leaderRow);
    if (mine.length === 0) return;
    this.s.parked = parked.filter((p) => p.duplicateOf !== leaderRow);
    for (const f of mine) this.copyLeader(f, nowMs);
  }

  /** A duplicate row's line, from its leader's end (the writer copies the leader's line). */
  private copyLeader(row: ParkedRow, nowMs: number): void {
    const leaderRow = row.duplicateOf;
    const leader = this.s.leaders![leaderRow];
    this.copyLine(row, { outcome: leader[0], ...(leader[2] ? { code: leader[2] } : {}) }, nowMs);
    leader[1] -= 1;
    if (leader[1] <= 0) delete this.s.leaders![leaderRow];
  }

  private copyLine(
    row: ParkedRow,
    leader: { outcome: ResultLine['outcome']; code?: string },
    nowMs: number,
  ): void {
    if (leader.outcome === 'skipped') this.skip(row, nowMs);
    else
      this.record(
        {
          row: row.row,
          key: row.key,
          outcome: leader.outcome,
          ...(leader.code ? { code: leader.code } : {}),
          duplicateOf: row.duplicateOf,
        },
        nowMs,
      );
  }

  /** A row the result cache answered: counted, its line already written, its followers freed. */
  private takeCached(row: ValidRow, hit: NonNullable<ValidRow['cached']>, nowMs: number): void {
    const c = this.s.counters;
    c.cached = (c.cached ?? 0) + 1;
    if (hit.outcome === 'found') c.creditsSaved = (c.creditsSaved ?? 0) + this.credits.perRow;
    this.record(
      {
        row: row.row,
        key: row.key,
        outcome: hit.outcome,
        ...(hit.requestId !== undefined ? { requestId: hit.requestId } : {}),
        cached: true,
        ...(hit.fetchedAt !== undefined ? { fetchedAt: hit.fetchedAt } : {}),
      },
      nowMs,
      true,
    );
    this.leaderEnded(row, { outcome: hit.outcome }, nowMs);
  }

  /** A row not sent because the credit budget is spent. */
  private skip(row: Pick<ValidRow, 'row' | 'key' | 'followers'>, nowMs: number): void {
    this.record(
      {
        row: row.row,
        key: row.key,
        outcome: 'skipped',
        code: CREDIT_BUDGET,
        message: `not sent: the batch's budget of ${this.credits.max} credits would not cover it (${this.s.counters.credits ?? 0} charged); resume the batch with a higher --max-credits to run it`,
      },
      nowMs,
    );
    if (row.followers) {
      (this.s.leaders ??= {})[row.row] = ['skipped', row.followers];
      this.releaseParked(row.row, nowMs);
    }
  }

  /** Whether the budget lets one more row go with the rows in flight (each may be charged). */
  private budgetAllows(): boolean {
    const { max, perRow } = this.credits;
    if (max === undefined || perRow <= 0) return true;
    return (this.s.counters.credits ?? 0) + (this.inFlight.size + 1) * perRow <= max;
  }

  /** Whether `leaderRow`'s call is still to end: in flight or sent back. */
  private pending(leaderRow: number): boolean {
    return this.inFlight.has(leaderRow) || this.s.redo.some((r) => r.row === leaderRow);
  }

  /** Whether a duplicate can take its line (or wait for it) now, without a request. */
  private sharesNow(row: InputRow): boolean {
    const leaderRow = duplicateOf(row);
    if (leaderRow === undefined) return false;
    return (
      this.s.leaders?.[leaderRow] !== undefined ||
      (row as ValidRow).leaderLine !== undefined ||
      this.pending(leaderRow)
    );
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
      if (next.cached) {
        // The result cache answered it when it was read: its line is written, no call is made.
        if (redo) this.s.redo.shift();
        else this.queue.shift();
        this.takeCached(next, next.cached, nowMs);
        continue;
      }
      const leaderRow = duplicateOf(next);
      if (leaderRow !== undefined) {
        // A duplicate costs no request: it takes its leader's line, now or when the leader ends.
        const take = () => (redo ? this.s.redo.shift() : this.queue.shift());
        const parked: ParkedRow = { row: next.row, key: next.key, duplicateOf: leaderRow };
        if (this.s.leaders?.[leaderRow]) {
          take();
          this.copyLeader(parked, nowMs);
          continue;
        }
        if (next.leaderLine) {
          // Reopened over its output: the leader's line stays, and says how it ended.
          take();
          this.copyLine(parked, next.leaderLine, nowMs);
          continue;
        }
        if (this.pending(leaderRow)) {
          take();
          (this.s.parked ??= []).push(parked);
          continue;
        }
        // The leader's end cannot be known here (its line is gone): the row is sent itself.
      }
      if (this.s.budgetSpent) {
        if (redo) this.s.redo.shift();
        else this.queue.shift();
        this.skip(next, nowMs);
        continue;
      }
      if (!this.budgetAllows()) {
        // Rows in flight may end empty (free): wait for them before giving up on the budget.
        if (this.inFlight.size > 0) break;
        this.s.budgetSpent = true;
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
    if (next) {
      if (isInvalidRow(next) || next.cached || this.sharesNow(next) || this.s.budgetSpent)
        return true;
      if (!this.budgetAllows()) return this.inFlight.size === 0;
      if (this.inFlight.size < this.s.window) return true;
    }
    return this.wantsRows();
  }

  /**
   * The rows read ahead (queued, and duplicates parked behind their leader) are short of a
   * window and the file has more. Parked rows count, so what a run carries stays bounded.
   */
  wantsRows(): boolean {
    const ahead = this.queue.length + (this.s.parked?.length ?? 0);
    return !this.s.paused && ahead < this.s.window && !this.s.cursor.done;
  }

  /** Every row is read and started or sent back: nothing left but what is in flight. */
  allStarted(): boolean {
    return (
      this.s.cursor.done &&
      this.queue.length === 0 &&
      this.s.redo.length === 0 &&
      (this.s.parked?.length ?? 0) === 0
    );
  }

  /**
   * The state for the next run: rows read but not started are read again from the first one's
   * offset; rows in flight go along when `keepInFlight` (their calls report to the batch's
   * workflow id, whichever run it is in). `dropLeaders`: how leaders ended stays behind, since
   * every line of this run is written and the next run's reads give it with each duplicate; a
   * leader still in flight is carried with the duplicates parked behind it, and records its end
   * in the next run.
   */
  carry(historyLength: number, keepInFlight: boolean, dropLeaders = false): CarriedState {
    const first = this.queue[0];
    if (first) this.s.cursor = { row: first.row, byteOffset: first.offset, done: false };
    this.s.historyEvents += historyLength;
    if (keepInFlight) this.s.inFlight = [...this.inFlight.values()];
    else delete this.s.inFlight;
    if (dropLeaders) delete this.s.leaders;
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
    | 'etaBasis'
    | 'jobMsEstimate'
    | 'requestsPerRow'
    | 'startedAt'
    | 'runs'
    | 'blankLines'
    | 'failedRows'
    | 'maxCredits'
  > {
    const s = this.s;
    const rate = rowsPerSecond(s.rate, nowMs, Date.parse(s.startedAt));
    const estimate = estimateJobMs(s.jobMs!);
    const perRow = requestsPerRow(s.requests!);
    const duplicatesLeft = Math.max(0, (s.duplicatesTotal ?? 0) - (s.counters.duplicates ?? 0));
    const paused = s.paused !== undefined || state === 'paused';
    const keys = activeKeys(s.pool);
    const unthrottled = keys.some((k) => k.throttled === false);
    const windows = keys.map(windowsOfPoolKey);
    const basis: EtaBasis | undefined =
      unthrottled || paused
        ? undefined
        : {
            rowsLeft: s.budgetSpent ? 0 : s.total - s.counters.done - duplicatesLeft,
            requestsPerRow: perRow ?? assumedRequestsPerRow(this.webhooks),
            keys: windows,
            // The part of each key the batch has been getting, from its own log: a reader that
            // counts the ETA again from the key's whole use (other traffic too) keeps it to that.
            shares: Object.fromEntries(
              windows.map((k) => [k.id, measuredShare(s.sent?.[k.id] ?? [], k, nowMs)]),
            ),
            ...(estimate !== undefined ? { tailMs: estimate } : {}),
          };
    const eta = unthrottled
      ? paused
        ? undefined
        : rateEtaSeconds(s.total - s.counters.done, rate)
      : etaSeconds({
          nowMs,
          paused,
          rowsLeft: s.budgetSpent ? 0 : s.total - s.counters.done - duplicatesLeft,
          requestsPerRow: perRow ?? assumedRequestsPerRow(this.webhooks),
          keys: windows,
          sent: s.sent ?? {},
          ...(estimate !== undefined ? { tailMs: estimate } : {}),
        });
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
      ...(basis ? { etaBasis: basis } : {}),
      ...(estimate !== undefined ? { jobMsEstimate: estimate } : {}),
      ...(perRow !== undefined ? { requestsPerRow: perRow } : {}),
      startedAt: s.startedAt,
      runs: s.runs,
      blankLines: s.blankLines ?? 0,
      failedRows: [...s.failedRows!],
      ...(this.credits.max !== undefined ? { maxCredits: this.credits.max } : {}),
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
      (c.skipped ? `${c.skipped} skipped (credit budget), ` : '') +
      (c.duplicates ? `${c.duplicates} duplicates (not sent), ` : '') +
      (c.cached ? `${c.cached} from the result cache (not sent), ` : '') +
      (this.credits.max !== undefined ? `${c.credits ?? 0} of ${this.credits.max} credits, ` : '') +
      `${this.inFlight.size} in flight, window ${s.window}` +
      (s.failedRows?.length
        ? `; failed rows: ${s.failedRows.map((f) => `${f.row} ${f.code}`).join(', ')}${c.failed > s.failedRows.length ? ', ...' : ''}`
        : '')
    );
  }
}
