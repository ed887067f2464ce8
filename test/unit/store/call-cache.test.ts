// The result cache as a single call's activities use it, over the embedded store: lookups counted
// as hits and misses, an accepted job filled when its result is read, and a store that cannot be
// opened taken as a miss, never an error.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { callCache } from '../../../src/activities/call-cache.js';
import type { ActivityDeps } from '../../../src/activities/deps.js';
import { METRICS } from '../../../src/metrics/catalogue.js';
import { meterNameOf, useMetricMeter } from '../../../src/metrics/instruments.js';
import {
  createSealer,
  lazyBatchStore,
  openStore,
  type LazyBatchStore,
} from '../../../src/store/index.js';
import { RecordingMeter } from '../metrics/recording-meter.js';

const ENDPOINT = 'person_enrichment';
const params = { email: 'ada.lovelace@example.org' };
const USE = { mode: 'use' as const };

let meter: RecordingMeter;
let stores: LazyBatchStore[] = [];
beforeEach(() => {
  meter = new RecordingMeter();
  useMetricMeter(meter);
});
afterEach(async () => {
  await Promise.all(stores.map((s) => s.close()));
  stores = [];
});

function depsWith(store: LazyBatchStore | undefined): ActivityDeps {
  if (store) stores.push(store);
  return { ...(store ? { store } : {}) } as ActivityDeps;
}

const embedded = () => {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-call-cache-unit-'));
  return lazyBatchStore(() =>
    openStore({
      url: `sqlite:${join(dir, 'store.sqlite')}`,
      dataDir: dir,
      sealer: createSealer(undefined, { key: randomBytes(32) }),
    }),
  );
};

/** Lookups recorded, as [hits, misses] of source "call". */
const lookups = (): [number, number] => {
  const sum = (result: string) =>
    meter.records
      .filter(
        (r) =>
          r.name === meterNameOf(METRICS.cacheLookups) &&
          r.tags.source === 'call' &&
          r.tags.result === result,
      )
      .reduce((a, r) => a + r.value, 0);
  return [sum('hit'), sum('miss')];
};

describe('a call and the result cache', () => {
  it('a miss, then the accepted job filled when its result is read, then a hit', async () => {
    const cache = callCache(depsWith(embedded()));
    expect(await cache.lookup(ENDPOINT, params, USE)).toBeUndefined();
    await cache.expect('req_1', ENDPOINT, params, USE);
    await cache.fill('req_1', ENDPOINT, {
      outcome: 'found',
      status: 'completed',
      result: { a: 1 },
    });
    expect(await cache.lookup(ENDPOINT, params, USE)).toMatchObject({
      outcome: 'found',
      requestId: 'req_1',
      result: { a: 1 },
    });
    expect(lookups()).toEqual([1, 1]);
  });

  it('a result read for a job no call expected fills nothing', async () => {
    const cache = callCache(depsWith(embedded()));
    await cache.fill('req_2', ENDPOINT, { outcome: 'empty', status: 'completed' });
    expect(await cache.lookup(ENDPOINT, params, USE)).toBeUndefined();
  });

  it('a job that completed at its submit is put; a refresh does not read but fills', async () => {
    const cache = callCache(depsWith(embedded()));
    await cache.put(ENDPOINT, params, USE, {
      outcome: 'empty',
      status: 'completed',
      requestId: 'req_3',
    });
    expect(await cache.lookup(ENDPOINT, params, { mode: 'refresh' })).toBeUndefined();
    await cache.put(
      ENDPOINT,
      params,
      { mode: 'refresh' },
      {
        outcome: 'found',
        status: 'completed',
        result: { b: 2 },
        requestId: 'req_4',
      },
    );
    expect(await cache.lookup(ENDPOINT, params, USE)).toMatchObject({ requestId: 'req_4' });
    // The refresh made no lookup: one hit, no miss.
    expect(lookups()).toEqual([1, 0]);
  });

  it('a call without a cache use, or with it off, or a person search, never opens the store', async () => {
    let opened = 0;
    const cache = callCache(
      depsWith(
        lazyBatchStore(() => {
          opened += 1;
          return Promise.reject(new Error('not to be opened'));
        }),
      ),
    );
    for (const use of [undefined, { mode: 'off' as const }]) {
      expect(await cache.lookup(ENDPOINT, params, use)).toBeUndefined();
      await cache.expect('req_5', ENDPOINT, params, use);
      await cache.put(ENDPOINT, params, use, { outcome: 'empty', status: 'c', requestId: 'r' });
    }
    expect(await cache.lookup('person_search', { query: 'x' }, USE)).toBeUndefined();
    await cache.expect('req_6', 'person_search', { query: 'x' }, USE);
    expect(opened).toBe(0);
    expect(lookups()).toEqual([0, 0]);
  });

  it('a store that cannot be opened is a miss, and filling it fails nothing', async () => {
    const cache = callCache(
      depsWith(lazyBatchStore(() => Promise.reject(new Error('connection refused')))),
    );
    expect(await cache.lookup(ENDPOINT, params, USE)).toBeUndefined();
    await expect(cache.expect('req_7', ENDPOINT, params, USE)).resolves.toBeUndefined();
    await expect(
      cache.fill('req_7', ENDPOINT, { outcome: 'found', status: 'completed', result: {} }),
    ).resolves.toBeUndefined();
    expect(lookups()).toEqual([0, 1]);
  });
});
