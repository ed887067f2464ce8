// The progress ETA as the batch computes it: its rows' requests counted in their keys' windows,
// the requests per row it measured, the keys left in its pool, and none while it is paused.
import { describe, expect, it } from 'vitest';
import { newKeyPool } from '../../../src/batch/key-pool.js';
import { etaSeconds as rateEtaSeconds } from '../../../src/batch/rate.js';
import { BatchRules } from '../../../src/batch/rules.js';
import type { ValidRow } from '../../../src/batch/types.js';
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

/** A 3,000-row batch on `keys` (100/min, 1,000/h each) whose first `done` rows ran at 50 a minute. */
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
  started.forEach((s, i) =>
    rules.settle(s.row.row, found(1), NOW + Math.floor(i / 50) * 60_000, AT),
  );
  // Half a minute after the last minute's rows ended.
  return { rules, now: NOW + (Math.ceil(done / 50) - 1) * 60_000 + 30_000 };
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
    const two = burstBatch(['a', 'b'], 500);
    const etaOne = one.rules.progress(one.now, 'running').etaSeconds!;
    const etaTwo = two.rules.progress(two.now, 'running').etaSeconds!;
    expect(etaTwo).toBeLessThan(etaOne * 0.6);
    two.rules.s.pool.keys[1].removed = { code: 'invalid_credentials', at: AT };
    expect(two.rules.progress(two.now, 'running').etaSeconds!).toBeGreaterThan(etaOne * 0.9);
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
