// A batch's run driven with no server: the window it starts, rows taken without a call
// (duplicates, cached results), pause and resume, the credit budget, appends, what is shown in
// the search attributes, and how a run ends (done, draining, or handing its rows to the next).
import { describe, expect, it } from 'vitest';
import { BatchRun, COUNTS_EVERY_MS, type BatchRunOptions } from '../../../src/batch/batch-run.js';
import type { RowEnd } from '../../../src/batch/rules.js';
import type { BatchInput, CarriedState, InputRow, ValidRow } from '../../../src/batch/types.js';
import { NOW, batchState } from './batch-state.js';

const INPUT: BatchInput = {
  batchId: 'b1',
  endpoint: 'person_enrich',
  source: { path: '/data/in.csv', format: 'csv' },
  output: '/data/out.jsonl',
  historyThreshold: 1000,
  carriedCheckMs: 60_000,
};

const valid = (row: number, extra: Partial<ValidRow> = {}): ValidRow => ({
  row,
  offset: row * 10,
  params: { email: `p${row}@example.com` },
  key: { email: `p${row}@example.com` },
  ...extra,
});
const found = (requestId: string): RowEnd => ({
  outcome: {
    outcome: 'found',
    requestId,
    status: 'completed',
    result: { name: 'x' },
    timing: { jobMs: 900, polls: 1 },
  },
});
const noCredits: RowEnd = { failure: { code: 'insufficient_credits', message: 'no credits' } };
const SHORT = { historyLength: 10, continueAsNewSuggested: false };
const LONG = { historyLength: 5000, continueAsNewSuggested: false };

/** A run over `rows` (the whole input, already read), with a clock the test moves. */
function runOver(
  rows: InputRow[],
  o: {
    extra?: Partial<CarriedState>;
    input?: Partial<BatchInput>;
    options?: Partial<BatchRunOptions>;
  } = {},
) {
  const clock = { ms: NOW };
  const run = new BatchRun(
    { ...INPUT, ...o.input },
    batchState({ cursor: { row: 1, byteOffset: 0, done: false }, total: rows.length, ...o.extra }),
    { endpoint: 'person_enrich', perRow: 10, carryRows: true, now: () => clock.ms, ...o.options },
  );
  run.read({ rows, next: { row: rows.length + 1, byteOffset: 999, done: true } });
  return { run, clock };
}
const started = (run: BatchRun) => run.takeStartable().map((s) => s.row.row);
/** Every line queued is written (each append acknowledged). */
function writeAll(run: BatchRun): number[] {
  const rows: number[] = [];
  for (let lines = run.nextWrite(); lines; lines = run.nextWrite()) {
    rows.push(...lines.map((l) => l.row));
    run.writeEnded(lines);
  }
  return rows;
}

describe('BatchRun', () => {
  it('reads first, then starts a window of rows, and fills each slot a row leaves', () => {
    const clock = { ms: NOW };
    const run = new BatchRun(
      INPUT,
      batchState({ cursor: { row: 1, byteOffset: 0, done: false }, total: 4 }),
      { endpoint: 'person_enrich', perRow: 10, carryRows: true, now: () => clock.ms },
    );
    expect(run.s.runs).toBe(2);
    expect(run.wantsRows()).toBe(true);
    run.read({
      rows: [valid(1), valid(2), valid(3), valid(4)],
      next: { row: 5, byteOffset: 40, done: true },
    });
    expect(run.s.cursor).toEqual({ row: 5, byteOffset: 40, done: true });
    expect(run.wantsRows()).toBe(false);
    expect(run.takeStartable()).toEqual([
      { row: valid(1), keyId: 'a', redo: false },
      { row: valid(2), keyId: 'b', redo: false },
    ]);
    // The window is full: nothing wakes the loop until a row ends.
    expect(run.shouldWake(() => SHORT)).toBe(false);
    expect(run.progress()).toMatchObject({ batchId: 'b1', state: 'running', inFlight: 2 });

    run.settle(1, found('r1'));
    expect(run.shouldWake(() => SHORT)).toBe(true);
    run.beginTurn();
    expect(started(run)).toEqual([3]);
    // A second report of the same row changes nothing.
    run.settle(1, found('r1'));
    expect(run.s.counters.done).toBe(1);
  });

  it('takes cached rows and duplicates without starting them', () => {
    const { run } = runOver([
      valid(1, { followers: 1 }),
      valid(2, { cached: { outcome: 'found', requestId: 'old', fetchedAt: '2025-12-31' } }),
      valid(3, { duplicateOf: 1 }),
      valid(4),
    ]);
    expect(started(run)).toEqual([1, 4]);
    expect(run.s.counters).toMatchObject({ done: 1, cached: 1, creditsSaved: 10 });
    // The cached row's line is written already; the duplicate waits for its leader.
    expect(run.linesToWrite).toBe(0);
    expect(run.s.parked).toEqual([{ row: 3, key: valid(3).key, duplicateOf: 1 }]);

    run.settle(1, found('r1'));
    expect(writeAll(run)).toEqual([1, 3]);
    expect(run.s.counters).toMatchObject({ done: 3, found: 3, cached: 1, duplicates: 1 });
  });

  it('pauses for an operator (no row starts), and resumes without closing credit breakers', () => {
    const { run } = runOver([valid(1), valid(2), valid(3)]);
    run.pause('maintenance');
    expect(started(run)).toEqual([]);
    expect(run.currentState()).toBe('paused');
    expect(run.progress().paused).toEqual({ code: 'paused_by_operator', message: 'maintenance' });

    run.requestResume();
    expect(run.shouldWake(() => SHORT)).toBe(true);
    expect(run.beginResume()).toBe(true);
    expect(run.resume([{ id: 'a', perMinute: 100 }])).toEqual({ closeCreditBreakers: false });
    expect(run.currentState()).toBe('running');
    expect(started(run)).toEqual([1, 2]);
  });

  it('pauses on a 402, sends the row back, and closes the credit breakers on resume', () => {
    const { run } = runOver([valid(1), valid(2), valid(3)]);
    expect(started(run)).toEqual([1, 2]);
    run.settle(1, noCredits);
    expect(run.currentState()).toBe('paused');
    expect(run.progress().paused).toMatchObject({ code: 'insufficient_credits', keyId: 'a' });
    expect(started(run)).toEqual([]);

    run.requestResume();
    expect(run.beginResume()).toBe(true);
    expect(run.resume([{ id: 'a', perMinute: 100 }])).toEqual({ closeCreditBreakers: true });
    // The row sent back goes first, as a redo.
    expect(run.takeStartable()).toMatchObject([{ row: valid(1), redo: true }]);
  });

  it('skips the rows the credit budget cannot cover, and a resume with a higher budget runs them', () => {
    const { run } = runOver([valid(1), valid(2), valid(3)], { input: { maxCredits: 10 } });
    expect(started(run)).toEqual([1]);
    // Row 1 may be charged: row 2 waits for it rather than being skipped.
    expect(started(run)).toEqual([]);
    run.settle(1, found('r1'));
    run.beginTurn();
    expect(started(run)).toEqual([]);
    expect(run.s.budgetSpent).toBe(true);
    expect(writeAll(run)).toEqual([1, 2, 3]);
    expect(run.s.counters).toMatchObject({ done: 3, skipped: 2, credits: 10 });
    expect(run.runOver()).toBe(true);

    const again = runOver([valid(4)], { input: { maxCredits: 10 }, extra: { budgetSpent: true } });
    again.run.requestResume(30);
    expect(again.run.s.maxCredits).toBe(30);
    expect(again.run.beginResume()).toBe(false);
    expect(started(again.run)).toEqual([4]);
  });

  it('appends one batch of lines at a time; a full disk pauses with the lines kept', () => {
    const { run } = runOver([valid(1), valid(2)]);
    run.takeStartable();
    run.settle(1, found('r1'));
    const first = run.nextWrite();
    expect(first?.map((l) => l.row)).toEqual([1]);
    run.settle(2, found('r2'));
    expect(run.nextWrite()).toBeUndefined();

    run.writeEnded(first!, { kind: 'unwritable', message: 'disk full' });
    expect(run.progress().paused).toMatchObject({ code: 'output_unwritable' });
    expect(run.nextWrite()).toBeUndefined();
    expect(run.canFlush()).toBe(false);
    expect(run.runOver()).toBe(false);

    run.requestResume();
    expect(run.canFlush()).toBe(true);
    run.beginResume();
    expect(writeAll(run)).toEqual([1, 2]);
    expect(run.runOver()).toBe(true);
  });

  it('fails the batch once with an append error that is not the disk', () => {
    const { run } = runOver([valid(1)]);
    run.takeStartable();
    run.settle(1, found('r1'));
    const lines = run.nextWrite()!;
    run.writeEnded(lines, { kind: 'error', error: new Error('boom') });
    expect(run.shouldWake(() => SHORT)).toBe(true);
    expect(run.takeWriteError()?.message).toBe('boom');
    expect(run.takeWriteError()).toBeUndefined();
    // A write cut by a cancellation keeps its lines to be written again.
    run.writeEnded(run.nextWrite()!, { kind: 'cut' });
    expect(run.linesToWrite).toBe(1);
  });

  it('shows a new state at once, and the counters at most every COUNTS_EVERY_MS', () => {
    const { run, clock } = runOver([valid(1), valid(2), valid(3)]);
    const first = run.show('running');
    expect(first).toMatchObject({ state: 'running', counts: { done: 0, failed: 0 } });
    expect(first.details).toContain('(run 2)');
    run.countsShown(first.counts!);

    run.takeStartable();
    run.settle(1, found('r1'));
    expect(run.show('running')).not.toHaveProperty('counts');
    expect(run.show('running')).not.toHaveProperty('state');
    clock.ms += COUNTS_EVERY_MS;
    expect(run.show('running').counts).toEqual({ done: 1, failed: 0 });
    // Not confirmed (the version that shows counters is off): still due at the next look.
    expect(run.show('paused')).toMatchObject({ state: 'paused', counts: { done: 1, failed: 0 } });
  });

  it('completes when every row is written, with its summary', () => {
    const { run, clock } = runOver([valid(1), valid(2)]);
    run.takeStartable();
    run.settle(1, found('r1'));
    run.settle(2, { outcome: { outcome: 'empty', requestId: 'r2', status: 'completed' } });
    expect(run.runOver()).toBe(false);
    writeAll(run);
    expect(run.runOver()).toBe(true);
    expect(run.continuesAsNew).toBe(false);
    clock.ms += 2000;
    expect(run.summary('done', 40)).toMatchObject({
      batchId: 'b1',
      state: 'done',
      total: 2,
      done: 2,
      found: 1,
      empty: 1,
      runs: 2,
      batchHistoryEvents: 40,
      seconds: 2,
      finishedAt: new Date(NOW + 2000).toISOString(),
    });
  });

  it('hands rows in flight to the next run, which takes their reports and looks up the silent ones', () => {
    const { run, clock } = runOver([valid(1), valid(2), valid(3), valid(4)]);
    // A run that did nothing yet does not hand over.
    run.considerNewRun(LONG);
    expect(run.launching).toBe(true);
    for (const s of run.takeStartable()) {
      run.startBegan();
      run.startEnded(s.row.row);
    }
    expect(run.shouldWake(() => LONG)).toBe(true);
    run.considerNewRun(LONG);
    expect(run.launching).toBe(false);
    expect(run.currentState()).toBe('draining');
    expect(run.handOverDue()).toBe(true);
    expect(run.takeRowsToTell()).toEqual([1, 2]);
    // Row 2 had ended before it was told: its result reaches this run, which waits for it.
    run.endedBeforeTold(2);
    expect(run.handOverDue()).toBe(false);
    expect(run.runOver()).toBe(false);
    run.settle(2, found('r2'));
    writeAll(run);
    expect(run.runOver()).toBe(true);

    const carried = run.carry(300);
    expect(carried.inFlight?.map((f) => f.row.row)).toEqual([1]);
    // Rows read and not started are read again from the first one.
    expect(carried.cursor).toEqual({ row: 3, byteOffset: 30, done: false });
    expect(carried.historyEvents).toBe(300);

    const next = new BatchRun(INPUT, structuredClone(carried), {
      endpoint: 'person_enrich',
      perRow: 10,
      carryRows: true,
      now: () => clock.ms,
    });
    expect(next.s.runs).toBe(3);
    expect(next.carriedLeft()).toEqual([1]);
    expect(next.lookUpInMs()).toBe(60_000);
    clock.ms += 45_000;
    expect(next.lookUpInMs()).toBe(15_000);
    next.settle(1, found('r1'));
    expect(next.carriedLeft()).toEqual([]);
    expect(next.lookUpInMs()).toBeUndefined();
    expect(next.s.counters.done).toBe(2);
  });

  it('drains its rows before a new run when rows are not carried (old runs, compact batches)', () => {
    for (const o of [{ options: { carryRows: false } }, { input: { compact: true } }]) {
      const { run } = runOver([valid(1), valid(2), valid(3)], o);
      run.takeStartable();
      run.considerNewRun(LONG);
      expect(run.continuesAsNew).toBe(true);
      expect(run.handOverDue()).toBe(false);
      expect(run.launching).toBe(false);
      run.settle(1, found('r1'));
      expect(run.runOver()).toBe(false);
      run.settle(2, found('r2'));
      writeAll(run);
      expect(run.runOver()).toBe(true);
      expect(run.carry(100).inFlight).toBeUndefined();
    }
  });

  it('writes no line for rows cancelled with the batch, and is quiet once they ended', () => {
    const { run } = runOver([valid(1), valid(2)]);
    run.takeStartable();
    run.startBegan();
    run.cancel();
    run.settle(1, { failure: { code: 'cancelled', message: 'the row was cancelled' } });
    run.settle(2, found('r2'));
    expect(run.quiet()).toBe(false);
    run.startEnded();
    expect(run.quiet()).toBe(true);
    expect(writeAll(run)).toEqual([2]);
  });
});
