// Duplicates and the credit budget in the batch's rules, with no server: a duplicate takes no
// window slot and no request, waits for its leader, and gets a copy of its line; the budget
// counts rows in flight as charged, waits for them before giving up, then skips what is left.
import { describe, expect, it } from 'vitest';
import { DuplicateFinder, paramsFingerprint } from '../../../src/batch-io/duplicates.js';
import { BatchRules, type CreditRules, type RowEnd } from '../../../src/batch/rules.js';
import type { InputRow, ValidRow } from '../../../src/batch/types.js';
import { AT, NOW, batchState } from './batch-state.js';

const state = batchState;

const row = (n: number, extra: Partial<ValidRow> = {}): ValidRow => ({
  row: n,
  offset: n * 10,
  params: { email: `p${n}@example.com` },
  key: { email: `p${n}@example.com` },
  ...extra,
});
const end = (outcome: 'found' | 'empty'): RowEnd => ({
  outcome:
    outcome === 'found'
      ? {
          outcome,
          requestId: 'r',
          status: 'completed',
          result: { name: 'x' },
          timing: { jobMs: 900, polls: 1 },
        }
      : { outcome, requestId: 'r', status: 'completed', timing: { jobMs: 900, polls: 1 } },
});

function rulesWith(rows: InputRow[], credits?: CreditRules) {
  const rules = new BatchRules(state(), credits);
  rules.queue.push(...rows);
  return rules;
}
const started = (r: BatchRules) => r.takeStartable(NOW).map((x) => x.row.row);

describe('duplicates in the rules', () => {
  it('a duplicate waits for its leader without a slot, then copies its end', () => {
    const rules = rulesWith([
      row(1, { followers: 2 }),
      row(2, { duplicateOf: 1 }),
      row(3),
      row(4, { duplicateOf: 1 }),
    ]);
    // Rows 2 and 4 are parked behind row 1; rows 1 and 3 fill the window of 2.
    expect(started(rules)).toEqual([1, 3]);
    expect(rules.s.parked?.map((r) => r.row)).toEqual([2, 4]);
    expect(rules.results).toHaveLength(0);
    rules.settle(1, end('found'), NOW, AT);
    expect(rules.results.map((l) => [l.row, l.outcome, l.duplicateOf])).toEqual([
      [1, 'found', undefined],
      [2, 'found', 1],
      [4, 'found', 1],
    ]);
    // The copy carries no result: the writer takes it from the leader's line.
    expect(rules.results[1].result).toBeUndefined();
    expect(rules.s.counters).toMatchObject({ done: 3, found: 3, duplicates: 2 });
    // Every follower came: the leader's end is forgotten.
    expect(rules.s.leaders?.[1]).toBeUndefined();
    expect(rules.s.parked).toEqual([]);
  });

  it('a duplicate read after its leader ended takes its line at once', () => {
    const rules = rulesWith([row(1, { followers: 1 })]);
    expect(started(rules)).toEqual([1]);
    rules.settle(1, end('empty'), NOW, AT);
    rules.queue.push(row(9, { duplicateOf: 1 }));
    expect(rules.canStart()).toBe(true);
    expect(started(rules)).toEqual([]);
    expect(rules.results.at(-1)).toMatchObject({ row: 9, outcome: 'empty', duplicateOf: 1 });
  });

  it('a duplicate whose leader is unknown here is sent itself, and waits for a slot like any row', () => {
    const rules = rulesWith([row(1), row(2), row(5, { duplicateOf: 3 })]);
    expect(started(rules)).toEqual([1, 2]);
    // The window is full: nothing can be done for row 5 now, and the loop must not spin.
    expect(rules.canStart()).toBe(false);
    rules.settle(1, end('empty'), NOW, AT);
    expect(started(rules)).toEqual([5]);
  });

  it("a run of a stored batch leaves its leaders' ends behind; one still in flight goes along", () => {
    const rules = rulesWith([
      row(1, { followers: 1 }),
      row(2, { followers: 1 }),
      row(3, { duplicateOf: 2 }),
    ]);
    expect(started(rules)).toEqual([1, 2]);
    rules.settle(1, end('found'), NOW, AT);
    expect(rules.s.leaders).toEqual({ 1: ['found', 1] });
    const carried = rules.carry(0, true, true);
    expect(carried.leaders).toBeUndefined();
    // Row 2 is in flight with its duplicate parked behind it: both are carried, and the next
    // run records row 2's end when it comes.
    expect(carried.inFlight?.map((r) => r.row.row)).toEqual([2]);
    expect(carried.parked).toEqual([{ row: 3, key: row(3).key, duplicateOf: 2 }]);
    const next = new BatchRules(structuredClone(carried));
    next.settle(2, end('empty'), NOW, AT);
    expect(next.results.map((l) => [l.row, l.outcome, l.duplicateOf])).toEqual([
      [2, 'empty', undefined],
      [3, 'empty', 2],
    ]);
    // A batch that reads from files keeps them: its reads cannot give them.
    const files = rulesWith([row(1, { followers: 1 })]);
    started(files);
    files.settle(1, end('found'), NOW, AT);
    expect(files.carry(0, false).leaders).toEqual({ 1: ['found', 1] });
  });

  it("a reopened batch's duplicate takes the end of its leader's line that stays", () => {
    const rules = rulesWith([row(7, { duplicateOf: 2, leaderLine: { outcome: 'found' } })]);
    expect(rules.canStart()).toBe(true);
    expect(started(rules)).toEqual([]);
    expect(rules.results[0]).toMatchObject({ row: 7, outcome: 'found', duplicateOf: 2 });
  });

  it('parked duplicates count against the rows read ahead, so a run carries a bounded state', () => {
    // 10 companies repeated over 50,000 rows: the leaders stay in flight while followers come.
    const rules = new BatchRules({
      ...batchState(),
      cursor: { row: 1, byteOffset: 0, done: false },
      window: 10,
    });
    let next = 1;
    const read = () => {
      while (rules.wantsRows() && next <= 50_000) {
        const n = next++;
        rules.queue.push(
          n <= 10 ? row(n, { followers: 4999 }) : row(n, { duplicateOf: ((n - 1) % 10) + 1 }),
        );
      }
    };
    for (let i = 0; i < 100; i++) {
      read();
      rules.takeStartable(NOW);
    }
    expect(rules.inFlight.size).toBe(10);
    expect(rules.queue.length + (rules.s.parked?.length ?? 0)).toBeLessThanOrEqual(10);
    expect(JSON.stringify(rules.carry(0, true)).length).toBeLessThan(20_000);
    // A leader ends: its parked followers take their lines and reading goes on.
    rules.settle(1, end('found'), NOW, AT);
    expect(rules.wantsRows()).toBe(true);
  });

  it('finds leaders by normalised parameters, and only valid rows take part', () => {
    const finder = new DuplicateFinder();
    finder.add({ row: 1, offset: 0, params: { email: 'Ann@Example.com' }, key: {} });
    finder.add({ row: 2, offset: 0, params: { email: ' ann@example.COM' }, key: {} });
    finder.add({ row: 3, offset: 0, problem: 'email: bad', key: {} });
    finder.add({ row: 4, offset: 0, params: { email: 'bob@example.com' }, key: {} });
    expect([...finder.followers]).toEqual([[2, 1]]);
  });

  it('normalises emails, phones, URLs and spaces, and nothing else', () => {
    const same = (a: Record<string, unknown>, b: Record<string, unknown>) =>
      paramsFingerprint(a) === paramsFingerprint(b);
    expect(same({ phone: '+1 (415) 555-2671' }, { phone: '+14155552671' })).toBe(true);
    expect(same({ phone: '415 555 2671' }, { phone: '415-555-2671' })).toBe(true);
    expect(same({ phone: '+14155552671' }, { phone: '+14155552672' })).toBe(false);
    expect(
      same(
        { social_media_url: 'https://www.linkedin.com/in/ann-lee/' },
        { social_media_url: 'http://linkedin.com/in/ann-lee' },
      ),
    ).toBe(true);
    expect(
      same(
        { social_media_url: 'https://linkedin.com/in/ann' },
        { social_media_url: 'https://linkedin.com/in/bob' },
      ),
    ).toBe(false);
    expect(same({ name: 'Ann  Lee ', company: 'Acme' }, { company: 'Acme', name: 'Ann Lee' })).toBe(
      true,
    );
    // Names keep their case: two spellings may be two people.
    expect(same({ name: 'Ann Lee' }, { name: 'ann lee' })).toBe(false);
    expect(same({ email: 'a@x.io', question: 'q' }, { email: 'a@x.io', question: 'r' })).toBe(
      false,
    );
  });
});

describe('the credit budget in the rules', () => {
  it('counts rows in flight as charged, waits for them, then skips the rest', () => {
    const rules = rulesWith([row(1), row(2), row(3), row(4)], { perRow: 1, max: 2 });
    expect(started(rules)).toEqual([1, 2]);
    // Two in flight may cost 2: a third could pass the budget.
    rules.settle(1, end('empty'), NOW, AT);
    // Row 1 was free: row 3 fits.
    expect(started(rules)).toEqual([3]);
    rules.settle(2, end('found'), NOW, AT);
    rules.settle(3, end('found'), NOW, AT);
    expect(rules.s.counters.credits).toBe(2);
    expect(rules.canStart()).toBe(true);
    expect(started(rules)).toEqual([]);
    expect(rules.results.at(-1)).toMatchObject({
      row: 4,
      outcome: 'skipped',
      code: 'credit_budget',
    });
    expect(rules.s.counters).toMatchObject({ done: 4, skipped: 1, found: 2, empty: 1 });
    expect(rules.allStarted()).toBe(true);
  });

  it('waits while a row in flight may still come back empty', () => {
    const rules = rulesWith([row(1), row(2)], { perRow: 1, max: 1 });
    expect(started(rules)).toEqual([1]);
    expect(rules.canStart()).toBe(false);
    expect(started(rules)).toEqual([]);
    expect(rules.results).toHaveLength(0);
  });

  it('a duplicate of a found row still gets its line when the budget is spent', () => {
    const rules = rulesWith([row(1, { followers: 1 }), row(2), row(3, { duplicateOf: 1 })], {
      perRow: 1,
      max: 1,
    });
    expect(started(rules)).toEqual([1]);
    rules.settle(1, end('found'), NOW, AT);
    expect(started(rules)).toEqual([]);
    expect(rules.results.map((l) => [l.row, l.outcome])).toEqual([
      [1, 'found'],
      [2, 'skipped'],
      [3, 'found'],
    ]);
  });
});
