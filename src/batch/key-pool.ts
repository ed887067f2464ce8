// The batch's key pool: rows go to the configured keys in proportion to their limits (smooth
// weighted round-robin, deterministic so workflow replays pick the same keys), and a key the
// service refuses (401/403) leaves the pool with its reason. Pure: workflow code imports it.
import { keyWindows, type KeyWindows } from './plan.js';
import type { KeyPoolState, PoolKey } from './types.js';

export interface PoolKeyConfig {
  id: string;
  perMinute: number;
  /** For the ETA: the key's hour limit and the worker's throttle time scale (times faster). */
  perHour?: number;
  timeScale?: number;
  /** false: the worker's throttle is off (PCDS_THROTTLE=off): no limit to time the batch by. */
  throttled?: boolean;
}

export function newKeyPool(keys: readonly PoolKeyConfig[]): KeyPoolState {
  return {
    keys: keys.map((k) => ({
      id: k.id,
      weight: Math.max(1, k.perMinute),
      ...(k.perHour !== undefined ? { perHour: k.perHour } : {}),
      ...(k.timeScale !== undefined ? { timeScale: k.timeScale } : {}),
      ...(k.throttled === false ? { throttled: false } : {}),
    })),
    current: keys.map(() => 0),
    started: Object.fromEntries(keys.map((k) => [k.id, 0])),
  };
}

export const activeKeys = (pool: KeyPoolState): PoolKey[] => pool.keys.filter((k) => !k.removed);

/**
 * A pool key's windows for the ETA. A pool from a worker that did not send its hour limit or time
 * scale (an older one) is taken as bound by its minute limit alone, in real time. A time scale
 * below 1 comes from a worker of the releases whose scale multiplied the windows (0.05 for 20
 * times faster): it is read as that.
 */
export const windowsOfPoolKey = (k: PoolKey): KeyWindows => {
  const scale = k.timeScale ?? 1;
  return keyWindows(
    { id: k.id, perMinute: k.weight, perHour: k.perHour ?? k.weight * 60 },
    scale < 1 ? 1 / scale : scale,
  );
};

/** The key for the next row, or undefined when no key is left. Mutates the pool's counters. */
export function pickKey(pool: KeyPoolState): string | undefined {
  let best = -1;
  let total = 0;
  pool.keys.forEach((k, i) => {
    if (k.removed) return;
    pool.current[i] = (pool.current[i] ?? 0) + k.weight;
    total += k.weight;
    if (best === -1 || pool.current[i] > pool.current[best]) best = i;
  });
  if (best === -1) return undefined;
  pool.current[best] = pool.current[best] - total;
  const id = pool.keys[best].id;
  pool.started[id] = (pool.started[id] ?? 0) + 1;
  return id;
}

/** Takes a key out of the pool; true when it was still in. */
export function removeKey(pool: KeyPoolState, id: string, code: string, at: string): boolean {
  const key = pool.keys.find((k) => k.id === id);
  if (!key || key.removed) return false;
  key.removed = { code, at };
  return true;
}

/** A pool rebuilt from the worker's current keys, keeping the counts of rows already started. */
export function refreshKeyPool(pool: KeyPoolState, keys: readonly PoolKeyConfig[]): KeyPoolState {
  const fresh = newKeyPool(keys);
  for (const id of Object.keys(fresh.started)) fresh.started[id] = pool.started[id] ?? 0;
  return fresh;
}

/** "key-a (invalid_credentials), key-b (subscription_required)" for pause reasons. */
export function describeRemoved(pool: KeyPoolState): string {
  return pool.keys
    .filter((k) => k.removed)
    .map((k) => `${k.id} (${k.removed!.code})`)
    .join(', ');
}
