// A batch's carried state for the rules' unit tests: ten rows read, nothing run, keys a and b.
import { newKeyPool } from '../../../src/batch/key-pool.js';
import type { CarriedState } from '../../../src/batch/types.js';

export const NOW = Date.parse('2026-01-01T00:00:00Z');
export const AT = '2026-01-01T00:00:00.000Z';

export function batchState(extra: Partial<CarriedState> = {}): CarriedState {
  return {
    cursor: { row: 1, byteOffset: 0, done: true },
    total: 10,
    counters: { done: 0, found: 0, empty: 0, failed: 0, failedByCode: {} },
    redo: [],
    window: 2,
    pool: newKeyPool([
      { id: 'a', perMinute: 100 },
      { id: 'b', perMinute: 100 },
    ]),
    startedAt: AT,
    runs: 1,
    rate: [],
    historyEvents: 0,
    ...extra,
  };
}
