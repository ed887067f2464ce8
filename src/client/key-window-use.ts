// What a key has already spent in its windows, as its throttle knows it: the one place the client
// reads the throttle's state for a plan, an ETA or a wait's reason (the throttle's query, asked
// as of now and as of later times: what it still counts then tells when today's requests leave
// the hour window). Other traffic on the key is counted with the batch's own.
import type { WorkflowClient } from '@temporalio/client';
import type { SentLog } from '../batch/plan.js';
import type { RequesterView } from '../throttle/scheduler.js';
import {
  throttleStateQuery,
  throttleWorkflowId,
  type ThrottleStatus,
} from '../throttle/protocol.js';

/** One key's windows as of `asOf`. */
export interface KeyWindowUse {
  keyId: string;
  asOf: number;
  minute: { used: number; limit: number; spanMs: number };
  hour: { used: number; limit: number; spanMs: number };
  /** The key is closed after a 429 until then (epoch ms). */
  closedUntil?: number;
  /** Submits are held until an operator resumes the key (a 402 opened its credit breaker). */
  breakerOpen?: boolean;
  /** Reservations granted for later times (the throttle's queue). */
  waiting: number;
  /**
   * The requests in its windows as a sent log (batch/plan.ts), each bucket placed so that it
   * leaves the hour window when the throttle says it does: what a plan or an ETA starts from.
   */
  sent: SentLog;
  /** When the hour window next has room, if it is full now (epoch ms). */
  hourFreesAt?: number;
  /**
   * The batches whose requests the key's scheduler told to wait for their fair share or their
   * tenant's budget, by requester id (`batch:<id>`): a reader shows a batch its own only.
   */
  batchWaits?: Record<string, BatchWait>;
}

/** A batch's requests waiting on a key for their fair share or their tenant's budget. */
export type BatchWait = Pick<RequesterView, 'waiting' | 'reason' | 'budget'>;

/** Looks ahead at this many points of the hour window: a bucket per twelfth of an hour. */
export const LOOKAHEAD_POINTS = 12;
/** How long a key's look ahead is reused before it is asked again (ms). */
export const LOOKAHEAD_REUSE_MS = 15_000;
const lookaheads = new Map<
  string,
  { at: number; later: ThrottleStatus[]; workflows: WorkflowReader }
>();

/** Each key's queries are bounded: a throttle that does not answer leaves the key out. */
export const WINDOW_USE_TIMEOUT_MS = 3_000;

/**
 * A key's window use from its throttle's states: `now` as of now, `later[j]` as of
 * now + (j + 1) * hourMs / later.length. Pure.
 */
export function windowUseOf(now: ThrottleStatus, later: readonly ThrottleStatus[]): KeyWindowUse {
  const s = now.snapshot;
  const hourMs = s.hour.spanMs;
  const minuteMs = s.minute.spanMs;
  const t0 = s.asOf;
  const points = later.length;
  // What of today's requests is still counted at each point: reservations for later times
  // (`waiting`) are counted from their time on, so they are taken off.
  const past = [s.hour.used, ...later.map((l) => l.snapshot.hour.used)].map((u) =>
    Math.max(0, u - s.waiting),
  );
  const sent: SentLog = [];
  let hourFreesAt: number | undefined;
  const inMinute = Math.min(s.minute.used, past[0]);
  for (let j = 1; j <= points; j++) {
    let leaving = Math.max(0, past[j - 1] - past[j]);
    // The last stretch holds the requests of the last minute, which have their own bucket.
    if (j === points) leaving = Math.max(0, leaving - inMinute);
    const from = j === 1 ? t0 : later[j - 2].snapshot.asOf;
    const to = later[j - 1].snapshot.asOf;
    // Sent an hour before the middle of the stretch in which they leave the window.
    const leavesAt = Math.max(t0, (from + to) / 2);
    if (leaving > 0) sent.push([leavesAt - hourMs - minuteMs / 2, leaving]);
    if (
      hourFreesAt === undefined &&
      s.hour.used >= s.hour.limit &&
      past[j] + s.waiting < s.hour.limit
    )
      hourFreesAt = Math.max(t0, to);
  }
  if (inMinute > 0) sent.push([t0 - minuteMs, inMinute]);
  // Granted for later: they go out now or soon, in the minute window.
  if (s.waiting > 0) sent.push([t0 - minuteMs / 2, s.waiting]);
  sent.sort((a, b) => a[0] - b[0]);
  const batchWaits: Record<string, BatchWait> = {};
  for (const r of now.scheduler?.requesters ?? [])
    if (
      r.class === 'batch' &&
      r.waiting > 0 &&
      (r.reason === 'fair_share' || r.reason === 'budget')
    )
      batchWaits[r.id] = {
        waiting: r.waiting,
        reason: r.reason,
        ...(r.budget ? { budget: r.budget } : {}),
      };
  return {
    keyId: now.keyId,
    asOf: t0,
    minute: { used: s.minute.used, limit: s.minute.limit, spanMs: minuteMs },
    hour: { used: s.hour.used, limit: s.hour.limit, spanMs: hourMs },
    ...(s.closedUntil !== undefined && s.closedUntil > t0 ? { closedUntil: s.closedUntil } : {}),
    ...(s.breaker.open ? { breakerOpen: true } : {}),
    waiting: s.waiting,
    sent,
    ...(hourFreesAt !== undefined ? { hourFreesAt } : {}),
    ...(Object.keys(batchWaits).length > 0 ? { batchWaits } : {}),
  };
}

/**
 * The window use of each key whose throttle runs and answers within the bound; a key with no
 * throttle (it sent nothing yet) or whose throttle does not answer is left out.
 */
/** What reading the throttles needs of a client (a Client's `workflow`, a handle's `client`). */
export type WorkflowReader = Pick<WorkflowClient, 'getHandle' | 'withDeadline'>;

export async function readKeyWindowUse(
  workflows: WorkflowReader,
  keyIds: readonly string[],
  opts: { timeoutMs?: number; now?: number } = {},
): Promise<Map<string, KeyWindowUse>> {
  const nowMs = opts.now ?? Date.now();
  const deadline = Date.now() + (opts.timeoutMs ?? WINDOW_USE_TIMEOUT_MS);
  const out = new Map<string, KeyWindowUse>();
  await Promise.all(
    [...new Set(keyIds)].map(async (keyId) => {
      try {
        const handle = workflows.getHandle(throttleWorkflowId(keyId));
        const ask = (at: number) =>
          workflows.withDeadline(deadline, () => handle.query(throttleStateQuery, at));
        const now = await ask(nowMs);
        const step = now.snapshot.hour.spanMs / LOOKAHEAD_POINTS;
        // An empty hour needs no look ahead; a recent one is reused (a watch asks every few
        // seconds): when requests leave the window changes only as new ones come in.
        const cached = lookaheads.get(keyId);
        const later =
          now.snapshot.hour.used === 0
            ? []
            : cached && nowMs - cached.at < LOOKAHEAD_REUSE_MS && cached.workflows === workflows
              ? cached.later
              : await Promise.all(
                  Array.from({ length: LOOKAHEAD_POINTS }, (_, j) => ask(nowMs + (j + 1) * step)),
                );
        if (later.length && later !== cached?.later)
          lookaheads.set(keyId, { at: nowMs, later, workflows });
        out.set(keyId, windowUseOf(now, later));
      } catch {
        // No throttle for the key yet, or no worker to answer: nothing is known of its windows.
      }
    }),
  );
  return out;
}
