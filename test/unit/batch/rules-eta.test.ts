// The progress ETA as the batch computes it: its rows' requests counted in their keys' windows,
// the requests per row it measured, the keys left in its pool, and none while it is paused.
import { describe, expect, it } from 'vitest';
import { newKeyPool } from '../../../src/batch/key-pool.js';
import { etaSeconds as rateEtaSeconds } from '../../../src/batch/rate.js';
import { BatchRules } from '../../../src/batch/rules.js';
import type { BatchProgress, ValidRow } from '../../../src/batch/types.js';
import { etaFromKeyUse } from '../../../src/client/batch-waits.js';
import type { KeyWindowUse } from '../../../src/client/key-window-use.js';
import { AT, NOW, batchState } from './batch-state.js';

const valid = (row: number): ValidRow => ({
  row,
  offset: row * 10,
  params: { email: `p${row}@example.com` },
  key: { email: `p${row}@example.com` },
});
const found = (polls: number) => ({
  outcome: {
    outcome: 'found' as const,
    requestId: 'r',
    status: 'completed',
    result: {},
    timing: { jobMs: 900, polls },
  },
});

/**
 * A 3,000-row batch on `keys` (100/min, 1,000/h each) whose first `done` rows ran at 50 a minute
 * on each key: each key's whole minute window (two requests a row).
 */
function burstBatch(keys: string[], done: number) {
  const rules = new BatchRules(
    batchState({
      total: 3000,
      window: 1000,
      pool: newKeyPool(keys.map((id) => ({ id, perMinute: 100, perHour: 1000 }))),
    }),
  );
  for (let i = 1; i <= done; i++) rules.queue.push(valid(i));
  const started = rules.takeStartable(NOW);
  const perMinute = 50 * keys.length;
  started.forEach((s, i) =>
    rules.settle(s.row.row, found(1), NOW + Math.floor(i / perMinute) * 60_000, AT),
  );
  // Half a minute after the last minute's rows ended.
  return { rules, now: NOW + (Math.ceil(done / perMinute) - 1) * 60_000 + 30_000 };
}

describe('BatchRules progress ETA', () => {
  it('after ten minutes of bursting on one key, the hour window makes the rest take hours', () => {
    const { rules, now } = burstBatch(['a'], 500);
    const p = rules.progress(now, 'running');
    expect(p.requestsPerRow).toBe(2);
    // 5,000 requests left; the hour window holds the 1,000 sent: four hours and more.
    expect(p.etaSeconds! / 3600).toBeGreaterThan(4.5);
    expect(p.etaSeconds! / 3600).toBeLessThan(5.2);
    // The rows-per-second formula at the same moment says under an hour.
    expect(rateEtaSeconds(2500, p.rowsPerSecond)! / 3600).toBeLessThan(1);
  });

  it('two keys halve it; a key out of the pool counts no more', () => {
    const one = burstBatch(['a'], 500);
    const two = burstBatch(['a', 'b'], 1000);
    const etaOne = one.rules.progress(one.now, 'running').etaSeconds!;
    const etaTwo = two.rules.progress(two.now, 'running').etaSeconds!;
    // 4,000 requests left on two keys against 5,000 on one.
    expect(etaTwo).toBeLessThan(etaOne * 0.6);
    two.rules.s.pool.keys[1].removed = { code: 'invalid_credentials', at: AT };
    // Its rest on one key: nearly twice as long.
    expect(two.rules.progress(two.now, 'running').etaSeconds!).toBeGreaterThan(etaTwo * 1.6);
  });

  it('a batch that got a third of its key (other work shares it) is told it takes three times as long', () => {
    const alone = burstBatch(['a'], 500);
    const shared = new BatchRules(
      batchState({
        total: 3000,
        window: 1000,
        pool: newKeyPool([{ id: 'a', perMinute: 100, perHour: 1000 }]),
      }),
    );
    for (let i = 1; i <= 166; i++) shared.queue.push(valid(i));
    // 166 rows (332 requests) over ten minutes: a third of what the key allowed it.
    shared
      .takeStartable(NOW)
      .forEach((s, i) => shared.settle(s.row.row, found(1), NOW + Math.floor(i / 17) * 60_000, AT));
    const now = NOW + 9 * 60_000 + 30_000;
    const etaAlone = alone.rules.progress(alone.now, 'running').etaSeconds!;
    const etaShared = shared.progress(now, 'running').etaSeconds!;
    // 5,668 requests left at a third of the key, against 5,000 with the whole key.
    expect(etaShared / etaAlone).toBeGreaterThan(2.5);
    expect(etaShared / etaAlone).toBeLessThan(4);
    // `batch status` and `watch` count it again from the key's whole use (the throttle's state:
    // the batch's third and the other work's two thirds): the batch is still kept to its third.
    const p = shared.progress(now, 'running');
    expect(p.etaBasis?.shares?.a).toBeCloseTo(332 / 1000, 2);
    const whole = {
      sent: shared.s.sent!.a.map(([at, n]): [number, number] => [at, 3 * n]),
    } as KeyWindowUse;
    const recounted = etaFromKeyUse(p as BatchProgress, new Map([['a', whole]]), now)!;
    expect(recounted / etaShared).toBeGreaterThan(0.85);
    expect(recounted / etaShared).toBeLessThan(1.15);
  });

  it('a paused batch shows no ETA', () => {
    const { rules, now } = burstBatch(['a'], 100);
    rules.pauseByOperator('checking the keys');
    const p = rules.progress(now, 'paused');
    expect(p.paused).toBeDefined();
    expect(p.etaSeconds).toBeUndefined();
  });

  it('rows that repeat another row send nothing: they shorten the ETA', () => {
    const plain = burstBatch(['a'], 500);
    const dup = burstBatch(['a'], 500);
    dup.rules.s.duplicatesTotal = 1500;
    expect(dup.rules.progress(dup.now, 'running').etaSeconds!).toBeLessThan(
      plain.rules.progress(plain.now, 'running').etaSeconds! * 0.5,
    );
  });

  it('a worker without a throttle: the ETA follows the rows per second', () => {
    const rules = new BatchRules(
      batchState({
        total: 3000,
        pool: newKeyPool([{ id: 'a', perMinute: 100, throttled: false }]),
      }),
    );
    rules.queue.push(valid(1), valid(2));
    for (const s of rules.takeStartable(NOW)) rules.settle(s.row.row, found(1), NOW, AT);
    const p = rules.progress(NOW + 1000, 'running');
    expect(p.etaSeconds).toBe(rateEtaSeconds(2998, p.rowsPerSecond));
  });
});
