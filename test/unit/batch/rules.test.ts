// The batch's rules, driven with no server: which row goes next and on which key, what each way a
// row's call can end means for the batch, and what crosses a continue-as-new.
import { describe, expect, it } from 'vitest';
import { BatchRules } from '../../../src/batch/rules.js';
import type { CarriedState, InputRow, ValidRow } from '../../../src/batch/types.js';
import { AT, NOW, batchState } from './batch-state.js';

const state = batchState;

const valid = (row: number): ValidRow => ({
  row,
  offset: row * 10,
  params: { email: `p${row}@example.com` },
  key: { email: `p${row}@example.com` },
});
const invalid = (row: number): InputRow => ({
  row,
  offset: row * 10,
  problem: 'email: not an email address',
  key: {},
});
const found = (requestId: string) => ({
  outcome: {
    outcome: 'found' as const,
    requestId,
    status: 'completed',
    result: { name: 'x' },
    timing: { jobMs: 900, polls: 1 },
  },
});

function withRows(rows: InputRow[], extra: Partial<CarriedState> = {}) {
  const rules = new BatchRules(state(extra));
  rules.queue.push(...rows);
  return rules;
}

describe('BatchRules', () => {
  it('starts rows up to the window, spreading them over the keys, and writes invalid rows on the way', () => {
    const rules = withRows([valid(1), invalid(2), valid(3), valid(4)]);
    const started = rules.takeStartable(NOW);
    expect(started.map((s) => [s.row.row, s.keyId])).toEqual([
      [1, 'a'],
      [3, 'b'],
    ]);
    expect(rules.inFlight.size).toBe(2);
    expect(rules.results).toMatchObject([{ row: 2, outcome: 'failed', code: 'invalid_row' }]);
    expect(rules.s.counters).toMatchObject({ done: 1, failed: 1 });
    // The window is full: nothing more starts until a row ends.
    expect(rules.takeStartable(NOW)).toEqual([]);
    expect(rules.canStart()).toBe(false);
  });

  it('ends each row once: found and empty rows are counted and learned from', () => {
    const rules = withRows([valid(1), valid(2)]);
    rules.takeStartable(NOW);
    expect(rules.settle(1, found('r1'), NOW, AT)).toBe(true);
    expect(rules.settle(1, found('r1'), NOW, AT)).toBe(false);
    expect(
      rules.settle(
        2,
        { outcome: { outcome: 'empty', requestId: 'r2', status: 'completed' } },
        NOW,
        AT,
      ),
    ).toBe(true);
    expect(rules.s.counters).toMatchObject({ done: 2, found: 1, empty: 1, failed: 0 });
    expect(rules.results.map((l) => [l.row, l.outcome])).toEqual([
      [1, 'found'],
      [2, 'empty'],
    ]);
    expect(rules.s.jobMs).toHaveLength(1);
    expect(rules.s.requests).toEqual({ rows: 1, polls: 1 });
  });

  it('a 402 with no job sends the row back, first in line, and pauses the batch for credits', () => {
    const rules = withRows([valid(1), valid(2), valid(3)]);
    rules.takeStartable(NOW);
    rules.settle(1, { failure: { code: 'insufficient_credits', message: 'no credits' } }, NOW, AT);
    expect(rules.paused).toMatchObject({ code: 'insufficient_credits', keyId: 'a' });
    expect(rules.s.redo.map((r) => r.row)).toEqual([1]);
    expect(rules.s.counters.done).toBe(0);
    expect(rules.takeStartable(NOW)).toEqual([]);

    expect(rules.resume([{ id: 'a', perMinute: 100 }])).toEqual({ closeCreditBreakers: true });
    const next = rules.takeStartable(NOW);
    expect(next.map((s) => [s.row.row, s.redo])).toEqual([[1, true]]);
  });

  it('a systemic failure after the job was accepted ends the row with its request id, never redone', () => {
    const rules = withRows([valid(1)]);
    rules.takeStartable(NOW);
    rules.settle(
      1,
      { failure: { code: 'invalid_credentials', message: 'revoked', requestId: 'r1' } },
      NOW,
      AT,
    );
    expect(rules.s.redo).toEqual([]);
    expect(rules.results).toMatchObject([
      { row: 1, outcome: 'failed', code: 'invalid_credentials', requestId: 'r1' },
    ]);
    expect(rules.s.pool.keys.every((k) => !k.removed)).toBe(true);
  });

  it('a 401 with no job takes the key out; with no key left the batch pauses with the reasons', () => {
    const rules = withRows([valid(1), valid(2), valid(3)]);
    rules.takeStartable(NOW);
    rules.settle(1, { failure: { code: 'invalid_credentials', message: 'revoked' } }, NOW, AT);
    expect(rules.s.pool.keys.find((k) => k.id === 'a')?.removed?.code).toBe('invalid_credentials');
    expect(rules.paused).toBeUndefined();
    // The row goes again, on the key that is left.
    expect(rules.takeStartable(NOW).map((s) => [s.row.row, s.keyId])).toEqual([[1, 'b']]);
    rules.settle(2, { failure: { code: 'ip_not_allowed', message: 'fenced' } }, NOW, AT);
    expect(rules.paused?.message).toContain('no key left in the pool');
    expect(rules.paused?.message).toContain('a (invalid_credentials)');
    expect(rules.paused?.message).toContain('b (ip_not_allowed)');
  });

  it('only a pause for credits closes the credit breakers on resume', () => {
    const rules = withRows([]);
    rules.pauseByOperator('lunch');
    expect(rules.resume([{ id: 'a', perMinute: 100 }])).toEqual({ closeCreditBreakers: false });
    rules.pauseForOutput('cannot write the output: ENOSPC');
    expect(rules.paused?.code).toBe('output_unwritable');
    expect(rules.resume([{ id: 'a', perMinute: 100 }])).toEqual({ closeCreditBreakers: false });
  });

  it('rows cancelled with the batch are not written', () => {
    const rules = withRows([valid(1)]);
    rules.takeStartable(NOW);
    rules.settle(1, { failure: { code: 'cancelled', message: 'cancelled' } }, NOW, AT, true);
    expect(rules.results).toEqual([]);
    expect(rules.inFlight.size).toBe(0);
  });

  it('carries rows in flight to the next run, which takes their reports', () => {
    const rules = withRows([valid(1), valid(2), valid(3)], {
      cursor: { row: 4, byteOffset: 40, done: true },
    });
    rules.takeStartable(NOW);
    const carried = rules.carry(120, true);
    // Row 3 was read but not started: the next run reads it again from its offset.
    expect(carried.cursor).toEqual({ row: 3, byteOffset: 30, done: false });
    expect(carried.historyEvents).toBe(120);
    expect(carried.inFlight?.map((r) => [r.row.row, r.keyId])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);

    const next = new BatchRules(structuredClone(carried));
    expect(next.inFlight.size).toBe(2);
    expect(next.settle(2, found('r2'), NOW, AT)).toBe(true);
    expect(next.s.counters.found).toBe(1);
    // A report for a row the run does not hold changes nothing.
    expect(next.settle(7, found('r7'), NOW, AT)).toBe(false);

    const drained = withRows([]).carry(10, false);
    expect(drained.inFlight).toBeUndefined();
  });
});
