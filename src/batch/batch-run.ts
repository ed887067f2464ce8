// One run of a batch apart from Temporal: everything the run knows (the rules' rows and counters,
// rows being started, written or handed over, pause, resume and cancel) and every decision the
// workflow asks of it. Driven by plain calls: the workflow wires it to handlers and activities.
import { estimateJobMs, requestsPerRow } from './job-duration.js';
import type { PoolKeyConfig } from './key-pool.js';
import { BatchRules, type RowEnd } from './rules.js';
import {
  DEFAULT_HISTORY_THRESHOLD,
  batchSummaryLine,
  type BatchInput,
  type BatchProgress,
  type BatchStateName,
  type BatchSummary,
  type CarriedState,
  type ExportReport,
  type InputFiles,
  type InputRow,
  type ReadCursor,
  type ResultLine,
  type ValidRow,
} from './types.js';

/** The batch's counters in its search attributes are brought up to date at most this often. */
export const COUNTS_EVERY_MS = 10_000;

/** How often rows carried from an earlier run that have not reported are looked up. */
export const DEFAULT_CARRIED_CHECK_MS = 10 * 60_000;

// One append carries at most this much, well under Temporal's payload limits.
const MAX_LINES_PER_WRITE = 200;
const MAX_BYTES_PER_WRITE = 512 * 1024;

/** A row the window lets start, on its key; `redo` when it was sent back before. */
export interface StartableRow {
  row: ValidRow;
  keyId: string;
  redo: boolean;
}

/** How an append of lines failed: cut by the batch's cancellation, refused by the disk, or else. */
export type WriteFailure =
  { kind: 'cut' } | { kind: 'unwritable'; message: string } | { kind: 'error'; error: unknown };

/** What the list view and the Web UI should show now (each search attribute upsert is an event). */
export interface Display {
  /** Set when the state changed: its search attribute is upserted. */
  state?: BatchStateName;
  /** Set when the row counters are due in the search attributes. */
  counts?: { done: number; failed: number };
  /** The run's current details. */
  details: string;
}

/** What the workflow knows of its history, for the decision to continue as new. */
export interface HistoryInfo {
  historyLength: number;
  continueAsNewSuggested: boolean;
}

export interface BatchRunOptions {
  /** The endpoint's name (checked by the workflow). */
  endpoint: string;
  /** What a row typically costs, for the credit budget. */
  perRow: number;
  /** Rows in flight go along to the next run (see docs/upgrading.md). */
  carryRows: boolean;
  /** The workflow's clock (deterministic there); tests pass their own. */
  now?: () => number;
}

export class BatchRun {
  readonly rules: BatchRules;
  /** Rows carried from an earlier run: they report by signal (or are looked up, if they never do). */
  readonly carriedRows: ReadonlySet<number>;
  /** Rows started by this run, not yet told to report to the batch's workflow id. */
  private readonly own = new Set<number>();
  /** Rows told to report that had already ended: their result reaches this run. */
  private readonly ending = new Set<number>();
  /** Child starts, and reads of a row's earlier call, still under way. */
  private starting = 0;
  private writing = false;
  private writeError: unknown;
  /** The output cannot be written (disk full, permissions): no append until a resume. */
  private outputBlocked = false;
  private resumeAsked = false;
  private cancelling = false;
  private state: BatchStateName;
  /** Set when a row ended: the loop looks again (a pause to show, a slot to fill). */
  private rowEnded = false;
  /** A row started or ended in this run: a run hands over only after it did something. */
  private progressed = false;
  /** Old runs (and compact batches): wait for every row in flight, then continue as new. */
  private draining = false;
  /** Continue as new with the rows in flight, once starts and writes have settled. */
  private handingOver = false;
  private lastState: BatchStateName | undefined;
  private shownCounts = '';
  private countsShownAt = 0;
  private lastLookUp: number;
  private readonly now: () => number;
  private readonly heading: string;
  readonly inputFiles: InputFiles;

  constructor(
    readonly input: BatchInput,
    /** What crosses continue-as-new: changed in place, handed on by `carry`. */
    readonly s: CarriedState,
    readonly options: BatchRunOptions,
  ) {
    this.now = options.now ?? Date.now;
    s.runs += 1;
    const maxCredits = s.maxCredits ?? input.maxCredits;
    this.rules = new BatchRules(
      s,
      { perRow: options.perRow, ...(maxCredits !== undefined ? { max: maxCredits } : {}) },
      input.webhooks === true,
    );
    this.carriedRows = new Set(this.rules.inFlight.keys());
    this.state = s.paused ? 'paused' : 'running';
    this.lastLookUp = this.now();
    this.inputFiles = {
      path: input.source.path,
      format: input.source.format,
      ...(input.maxRowBytes ? { maxRowBytes: input.maxRowBytes } : {}),
    };
    // A static summary belongs to the first run only (continue-as-new cannot carry one): every
    // run opens its current details, which the Web UI shows beside it, with the same summary.
    this.heading =
      `${batchSummaryLine(s.total, options.endpoint)} (run ${s.runs})\n` +
      `input ${input.source.path}\noutput ${input.output}\nrows and results in the store`;
  }

  // ---- Signals ----

  pause(reason?: string): void {
    this.rules.pauseByOperator(reason);
  }

  /** A resume, acted on by the loop (it re-reads the keys); `maxCredits` raises the budget. */
  requestResume(maxCredits?: number): void {
    if (typeof maxCredits === 'number') this.rules.setBudget(maxCredits);
    this.resumeAsked = true;
  }

  setWindow(width: unknown): void {
    if (typeof width === 'number') this.rules.setWindow(width);
  }

  /**
   * Takes how a row's call ended (from its start, a report by signal, or a look-up). Each row
   * ends once: a second report of the same row changes nothing.
   */
  settle(row: number, end: RowEnd): void {
    const nowMs = this.now();
    if (this.rules.settle(row, end, nowMs, new Date(nowMs).toISOString(), this.cancelling)) {
      this.rowEnded = true;
      this.progressed = true;
    }
  }

  /** A row whose earlier call failed with nothing accepted goes back to be started again. */
  sendBack(row: number): void {
    if (this.rules.sendBack(row)) this.rowEnded = true;
  }

  // ---- Queries ----

  progress(): BatchProgress {
    const input = this.input;
    return {
      batchId: input.batchId,
      endpoint: this.options.endpoint,
      ...this.rules.progress(this.now(), this.state),
      output: input.output,
      stored: true,
      ...(input.csvRawCells ? { csvRawCells: true } : {}),
      source: this.inputFiles,
      ...(input.csvOutput ? { csvOutput: input.csvOutput } : {}),
    };
  }

  // ---- Starting rows ----

  /** Neither draining nor handing over: rows are read and started. */
  get launching(): boolean {
    return !this.draining && !this.handingOver;
  }

  /** Rows to read before any starts (the rows read ahead are short of a window). */
  wantsRows(): boolean {
    return this.rules.wantsRows();
  }

  /** A chunk of rows read: queued, and the cursor moved past them. */
  read(chunk: { rows: InputRow[]; next: ReadCursor }): void {
    this.rules.queue.push(...chunk.rows);
    this.s.cursor = chunk.next;
  }

  /** Rows the window lets start now (duplicates, cached and invalid rows are taken on the way). */
  takeStartable(): StartableRow[] {
    const next = this.rules.takeStartable(this.now());
    if (next.length > 0) this.progressed = true;
    return next;
  }

  /** A child start (or a read of a row's earlier call) is under way. */
  startBegan(): void {
    this.starting += 1;
  }

  /** It ended; `row` when the row's child now runs under this run. */
  startEnded(row?: number): void {
    this.starting -= 1;
    if (row !== undefined && this.options.carryRows) this.own.add(row);
  }

  // ---- Writing lines ----

  /** The next append's lines (marked being written), or nothing when one runs or none is due. */
  nextWrite(): ResultLine[] | undefined {
    const results = this.rules.results;
    if (this.writing || this.outputBlocked || results.length === 0) return undefined;
    let bytes = 0;
    let n = 0;
    while (n < results.length && n < MAX_LINES_PER_WRITE) {
      bytes += JSON.stringify(results[n]).length;
      if (n > 0 && bytes > MAX_BYTES_PER_WRITE) break;
      n += 1;
    }
    this.writing = true;
    return results.splice(0, n);
  }

  /** An append ended; a failed one puts its lines back, in front, to be written again. */
  writeEnded(lines: ResultLine[], failure?: WriteFailure): void {
    this.writing = false;
    if (!failure) return;
    this.rules.results.unshift(...lines);
    // A write cut by the batch's cancellation is done again outside the cancelled scope.
    if (failure.kind === 'cut') return;
    if (failure.kind === 'unwritable') {
      // The lines stay here, unacknowledged, until an operator fixes the disk and resumes.
      this.outputBlocked = true;
      this.rules.pauseForOutput(failure.message);
      return;
    }
    this.writeError = failure.error;
  }

  /** The error of a failed append, once: the batch fails with it. */
  takeWriteError(): Error | undefined {
    const err = this.writeError;
    if (err === undefined) return undefined;
    this.writeError = undefined;
    return err instanceof Error ? err : new Error('the output could not be written');
  }

  /** Whether the final flush can go on: no append runs, and the output is open or a resume came. */
  canFlush(): boolean {
    return !this.writing && (!this.outputBlocked || this.resumeAsked);
  }

  get outputIsBlocked(): boolean {
    return this.outputBlocked;
  }

  get linesToWrite(): number {
    return this.rules.results.length;
  }

  // ---- Pause and resume ----

  /** A resume signal came, for the loop to act on. */
  get resumeRequested(): boolean {
    return this.resumeAsked;
  }

  /** A resume begins: true when the batch is paused and the worker's keys are to be read. */
  beginResume(): boolean {
    this.resumeAsked = false;
    this.outputBlocked = false;
    return this.s.paused !== undefined;
  }

  /** The resume with the worker's keys: whether their credit breakers are to be closed. */
  resume(keys: readonly PoolKeyConfig[]): { closeCreditBreakers: boolean } {
    return this.rules.resume(keys);
  }

  // ---- Rows carried from an earlier run ----

  /** Carried rows still in flight. */
  carriedLeft(): number[] {
    return [...this.carriedRows].filter((r) => this.rules.inFlight.has(r));
  }

  /** How long to wait before carried rows that never reported are looked up; none when none left. */
  lookUpInMs(): number | undefined {
    if (this.carriedLeft().length === 0) return undefined;
    const checkMs = this.input.carriedCheckMs ?? DEFAULT_CARRIED_CHECK_MS;
    return Math.max(1, this.lastLookUp + checkMs - this.now());
  }

  lookedUp(): void {
    this.lastLookUp = this.now();
  }

  // ---- Continue-as-new ----

  /** The history is long enough for a new run. */
  wantsNewRun(info: HistoryInfo): boolean {
    const threshold = this.input.historyThreshold ?? DEFAULT_HISTORY_THRESHOLD;
    return info.continueAsNewSuggested || info.historyLength >= threshold;
  }

  /**
   * Decides how this run ends when the history asks for a new one: old runs and compact batches
   * (whose rows are activities of this run) drain their rows; others hand them over, once they
   * did something.
   */
  considerNewRun(info: HistoryInfo): void {
    if (!this.launching || !this.wantsNewRun(info)) return;
    if (!this.options.carryRows || this.input.compact) this.draining = true;
    else if (this.progressed) this.handingOver = true;
  }

  /** The rows this run started are to be told to report to the batch's workflow id now. */
  handOverDue(): boolean {
    return this.handingOver && this.starting === 0 && [...this.own].some(this.flying);
  }

  /** The rows to tell, each once. */
  takeRowsToTell(): number[] {
    const told = [...this.own].filter(this.flying);
    this.own.clear();
    return told;
  }

  /** A row told to report had already ended: its result reaches this run, which waits for it. */
  endedBeforeTold(row: number): void {
    this.ending.add(row);
  }

  /** Whether the run ends by continuing as new. */
  get continuesAsNew(): boolean {
    return this.draining || this.handingOver;
  }

  /**
   * The state for the next run. `leadersInStore`: the next run reads how leaders ended from the
   * store with their duplicates, so they are not carried (a stored batch).
   */
  carry(historyLength: number, opts: { leadersInStore?: boolean } = {}): CarriedState {
    return this.rules.carry(historyLength, this.handingOver, opts.leadersInStore === true);
  }

  // ---- The loop ----

  /** Everything of this run is written: the batch is done, or ready to continue as new. */
  runOver(): boolean {
    const written = this.rules.results.length === 0 && !this.writing;
    if (this.handingOver) {
      const waiting = [...this.own, ...this.ending].some(this.flying);
      return written && this.starting === 0 && !waiting;
    }
    const idle = this.rules.inFlight.size === 0 && this.starting === 0 && written;
    return idle && (this.draining || this.rules.allStarted());
  }

  /** A new turn of the loop: what woke it is taken. */
  beginTurn(): void {
    this.rowEnded = false;
  }

  /** Whether the loop has something to do (what it waits for). */
  shouldWake(info: () => HistoryInfo): boolean {
    return (
      this.rowEnded ||
      (!this.writing && !this.outputBlocked && this.rules.results.length > 0) ||
      this.resumeAsked ||
      this.writeError !== undefined ||
      (this.launching && this.rules.canStart()) ||
      this.handOverDue() ||
      (this.options.carryRows && this.launching && this.progressed && this.wantsNewRun(info())) ||
      this.runOver()
    );
  }

  /** The state the loop shows while it waits. */
  currentState(): BatchStateName {
    return this.continuesAsNew ? 'draining' : this.s.paused ? 'paused' : 'running';
  }

  // ---- Cancellation ----

  /** The batch is cancelled: rows cancelled with it are not written. */
  cancel(): void {
    this.cancelling = true;
  }

  /** No row in flight and no start under way. */
  quiet(): boolean {
    return this.rules.inFlight.size === 0 && this.starting === 0;
  }

  // ---- What is shown ----

  /**
   * Shows `next`: its search attribute when it changed, the counters at most once per
   * COUNTS_EVERY_MS and at every change of state (so a finished or paused batch shows its final
   * counts). Counters shown are confirmed with `countsShown`.
   */
  show(next: BatchStateName): Display {
    this.state = next;
    const stateChanged = next !== this.lastState;
    if (stateChanged) this.lastState = next;
    const c = this.s.counters;
    const due =
      `${c.done}/${c.failed}` !== this.shownCounts &&
      (stateChanged || this.now() - this.countsShownAt >= COUNTS_EVERY_MS);
    return {
      ...(stateChanged ? { state: next } : {}),
      ...(due ? { counts: { done: c.done, failed: c.failed } } : {}),
      details: `${this.heading}\n\n${this.rules.details(next)}`,
    };
  }

  countsShown(counts: { done: number; failed: number }): void {
    this.shownCounts = `${counts.done}/${counts.failed}`;
    this.countsShownAt = this.now();
  }

  // ---- The end ----

  summary(
    final: 'done' | 'cancelled',
    historyLength: number,
    csv: { csv?: ExportReport; csvError?: string } = {},
  ): BatchSummary {
    const s = this.s;
    const input = this.input;
    const finishedAt = this.now();
    const seconds = Math.max(0.001, (finishedAt - Date.parse(s.startedAt)) / 1000);
    const estimate = estimateJobMs(s.jobMs!);
    const perRow = requestsPerRow(s.requests!);
    const max = this.rules.credits.max;
    return {
      batchId: input.batchId,
      endpoint: this.options.endpoint,
      state: final,
      total: s.total,
      ...s.counters,
      output: input.output,
      stored: true,
      ...(input.csvRawCells ? { csvRawCells: true } : {}),
      startedAt: s.startedAt,
      finishedAt: new Date(finishedAt).toISOString(),
      seconds: Math.round(seconds * 10) / 10,
      rowsPerSecond: Math.round((s.counters.done / seconds) * 100) / 100,
      runs: s.runs,
      batchHistoryEvents: s.historyEvents + historyLength,
      blankLines: s.blankLines ?? 0,
      source: this.inputFiles,
      ...(input.csvOutput ? { csvOutput: input.csvOutput } : {}),
      failedRows: [...s.failedRows!],
      ...(max !== undefined ? { maxCredits: max } : {}),
      ...(estimate !== undefined ? { jobMsEstimate: estimate } : {}),
      ...(perRow !== undefined ? { requestsPerRow: perRow } : {}),
      ...csv,
    };
  }

  private readonly flying = (row: number) => this.rules.inFlight.has(row);
}
