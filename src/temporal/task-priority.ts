// Temporal's task priority and fairness for the work itself, from the same requester the shared
// throttle orders permits by: under load, worker slots go to interactive calls first, then shares
// between batches by weight. Keys and weights follow Temporal's rules (priority 1 first, default
// 3 of 5; fairness keys up to 64 bytes, weights 0.001-1000); the server uses fairness only where
// `matching.enableFairness` is on. Workflow code imports this module: it is pure.
import type { Priority } from '@temporalio/common';
import { MAX_WEIGHT, MIN_WEIGHT, type RequestClass, type Requester } from '../contract/tenant.js';

/** Lower goes first: a person waiting, then batches (Temporal's default), then background work. */
export const PRIORITY_KEYS: Readonly<Record<RequestClass, number>> = {
  interactive: 1,
  batch: 3,
  background: 4,
};

/** Temporal's limit on a fairness key, in bytes. */
export const MAX_FAIRNESS_KEY_BYTES = 64;

/** FNV-1a (32 bits) in hex: a short, stable tag for a key too long to keep whole. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/**
 * A fairness key within Temporal's 64 bytes: ids are ASCII, so a longer key keeps its start and
 * ends with a hash of the whole, which keeps two long keys apart.
 */
export function fairnessKeyOf(key: string): string {
  if (key.length <= MAX_FAIRNESS_KEY_BYTES && !/[^\x20-\x7e]/.test(key)) return key;
  const safe = key.replace(/[^\x20-\x7e]/g, '_');
  return `${safe.slice(0, MAX_FAIRNESS_KEY_BYTES - 9)}~${fnv1a(key)}`;
}

/**
 * The priority of a requester's work: its class's priority key; a batch's rows share one fairness
 * key (the batch) weighted by the batch's weight, anything else its tenant's key.
 */
export function taskPriorityOf(requester: Requester): Priority {
  const key =
    requester.batchId !== undefined ? `batch:${requester.batchId}` : `tenant:${requester.tenant}`;
  const weight = requester.weight;
  return {
    priorityKey: PRIORITY_KEYS[requester.class],
    fairnessKey: fairnessKeyOf(key),
    ...(weight !== undefined && Number.isFinite(weight)
      ? { fairnessWeight: Math.min(MAX_WEIGHT, Math.max(MIN_WEIGHT, weight)) }
      : {}),
  };
}
