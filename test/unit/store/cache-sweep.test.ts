// The worker's expiry sweep: after its first delay, then on its interval; a failing store is ignored and tried
// again; stop ends it.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ResultCache, startCacheSweep } from '../../../src/store/index.js';
import { tempStore } from './temp-store.js';

const USE = { mode: 'use' } as const;
const LONG_AGO = Date.now() - 400 * 24 * 3_600_000;
const found = (requestId: string) => ({
  outcome: 'found' as const,
  requestId,
  status: 'completed',
  result: { n: 1 },
});

async function cacheIn(): Promise<ResultCache> {
  const dir = mkdtempSync(join(tmpdir(), 'pcds-sweep-'));
  const store = await tempStore(dir);
  return new ResultCache(store);
}

const until = async (ok: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 200 && !(await ok()); i++) await new Promise((r) => setTimeout(r, 10));
};

it('sweeps expired entries at start and again on its interval, and stops', async () => {
  const cache = await cacheIn();
  await cache.put('person_enrichment', { email: 'a@example.com' }, USE, found('r1'), LONG_AGO);
  await cache.put('person_enrichment', { email: 'b@example.com' }, USE, found('r2'), Date.now());
  const swept: number[] = [];
  const sweep = startCacheSweep(() => Promise.resolve(cache), {
    intervalMs: 50,
    firstAfterMs: 0,
    onSwept: (n) => swept.push(n),
  });
  await until(() => swept.length >= 1);
  expect(swept[0]).toBe(1);
  expect((await cache.stats())[0]).toMatchObject({ entries: 1, expired: 0 });
  // A later expired entry goes at the next tick.
  await cache.put('person_enrichment', { email: 'c@example.com' }, USE, found('r3'), LONG_AGO);
  await until(() => swept.slice(1).includes(1));
  expect(swept.slice(1)).toContain(1);
  expect((await cache.stats())[0]).toMatchObject({ entries: 1 });
  await sweep.stop();
  const count = swept.length;
  await new Promise((r) => setTimeout(r, 200));
  expect(swept.length).toBe(count);
});

it('a store that fails is ignored and tried again at the next tick', async () => {
  const cache = await cacheIn();
  await cache.put('person_enrichment', { email: 'a@example.com' }, USE, found('r1'), LONG_AGO);
  let asked = 0;
  const swept: number[] = [];
  const sweep = startCacheSweep(
    () => {
      asked += 1;
      return asked === 1 ? Promise.reject(new Error('store down')) : Promise.resolve(cache);
    },
    { intervalMs: 30, firstAfterMs: 0, onSwept: (n) => swept.push(n) },
  );
  await until(() => swept.length >= 1);
  await sweep.stop();
  expect(asked).toBeGreaterThanOrEqual(2);
  expect(swept[0]).toBe(1);
  expect(await cache.stats()).toEqual([]);
});
