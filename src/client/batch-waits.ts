// A running batch's progress, explained: why it waits (no worker, paused, a key's window full
// until a time, a budget) and an ETA that counts what its keys already spent in their windows,
// other traffic on them included, as the keys' throttles know it.
import { etaSeconds, type SentLog } from '../batch/plan.js';
import type { BatchProgress } from '../batch/types.js';
import { batchRequester, requesterId } from '../contract/tenant.js';
import { batchWaitWords } from '../throttle/status-text.js';
import {
  readKeyWindowUse,
  type BatchWait,
  type KeyWindowUse,
  type WorkflowReader,
} from './key-window-use.js';
import { keyWaitReason, pausedReason, type WaitReason } from './wait-reasons.js';

export interface ExplainedProgress {
  /** The progress, its ETA counted again from the keys' windows when they could be read. */
  progress: BatchProgress;
  /** Why it waits now; empty when nothing holds it back. */
  waiting: WaitReason[];
  /** The keys' windows as read (keys whose throttle did not answer are absent). */
  keys: Map<string, KeyWindowUse>;
}

/** The ETA from the batch's own basis and the keys' whole use; undefined when none can be had. */
export function etaFromKeyUse(
  progress: BatchProgress,
  keys: ReadonlyMap<string, KeyWindowUse>,
  nowMs: number,
): number | undefined {
  const basis = progress.etaBasis;
  if (!basis || keys.size === 0) return undefined;
  const sent: Record<string, SentLog> = {};
  for (const k of basis.keys) {
    const use = keys.get(k.id);
    if (use) sent[k.id] = use.sent;
  }
  return etaSeconds({ nowMs, paused: false, ...basis, sent });
}

/**
 * Why the batch waits, from its progress and its keys' windows: its pause, then each key of its
 * pool whose windows hold requests back now, or whose scheduler holds the batch's requests for
 * its fair share (other work shares the key) or its tenant's budget. A key that can send is no
 * reason.
 */
export function batchWaitReasons(
  progress: BatchProgress,
  keys: ReadonlyMap<string, KeyWindowUse>,
  nowMs: number,
): WaitReason[] {
  if (progress.state === 'done' || progress.state === 'cancelled') return [];
  if (progress.paused) return [pausedReason(progress.paused)];
  const reasons: WaitReason[] = [];
  const me = requesterId(batchRequester(progress.batchId));
  for (const k of progress.pool) {
    if (k.removed) continue;
    const use = keys.get(k.id);
    if (!use) continue;
    // A full window and the tenant's budget may both hold it: each is said.
    const window = keyWaitReason(use, nowMs);
    const share = shareWaitReason(k.id, use.batchWaits?.[me]);
    if (window) reasons.push(window);
    if (share && !(window && share.kind === 'fair_share')) reasons.push(share);
  }
  return reasons;
}

/** The batch's requests held on a key for its fair share or its tenant's budget, as a reason. */
function shareWaitReason(keyId: string, wait: BatchWait | undefined): WaitReason | undefined {
  if (!wait) return undefined;
  return {
    kind: wait.reason === 'budget' ? 'budget' : 'fair_share',
    keyId,
    message: `key ${keyId}: ${batchWaitWords(wait)}`,
  };
}

/** Reads the pool's keys' windows (bounded) and explains the progress with them. */
export async function explainProgress(
  workflows: WorkflowReader,
  progress: BatchProgress,
  nowMs = Date.now(),
): Promise<ExplainedProgress> {
  const ids = progress.pool.filter((k) => !k.removed).map((k) => k.id);
  const keys =
    ids.length && !progress.paused && progress.etaBasis
      ? await readKeyWindowUse(workflows, ids, { now: nowMs })
      : new Map<string, KeyWindowUse>();
  const eta = etaFromKeyUse(progress, keys, nowMs);
  const { etaBasis: _basis, ...shown } = progress;
  return {
    progress: eta !== undefined ? { ...shown, etaSeconds: eta } : shown,
    waiting: batchWaitReasons(progress, keys, nowMs),
    keys,
  };
}
