// What an MCP task reports for the work behind it (pure): its status, a message saying where the
// work stands, and how long the assistant should wait before asking again.
import type { Task } from '@modelcontextprotocol/sdk/types.js';
import type { BatchStatus } from '../client/batch-launch.js';
import type { WaitReason } from '../client/wait-reasons.js';

export type TaskStatus = Task['status'];

export interface TaskView {
  status: TaskStatus;
  statusMessage: string;
  /** Milliseconds until asking again is worth it; absent once the task ended. */
  pollInterval?: number;
}

/**
 * Poll intervals (ms). Never under MIN: every tasks/get is a describe and a query on Temporal, so
 * a short job gains nothing from faster polling. Paused or workerless work waits on a person.
 */
export const POLL_MS = {
  min: 2_000,
  max: 60_000,
  default: 5_000,
  throttled: 10_000,
  waiting: 30_000,
} as const;

const clamp = (ms: number) => Math.round(Math.min(POLL_MS.max, Math.max(POLL_MS.min, ms)));

/** How a closed workflow's execution status reads as a task status. */
export function closedTaskStatus(execution: string): TaskStatus {
  if (execution === 'COMPLETED') return 'completed';
  if (execution === 'CANCELED' || execution === 'CANCELLED') return 'cancelled';
  return 'failed';
}

/** `credits 12 of 20`, `credits 12`, or nothing when the batch counts none. */
function creditsPart(p: { credits?: number; maxCredits?: number }): string[] {
  if (p.maxCredits !== undefined) return [`credits ${p.credits ?? 0} of ${p.maxCredits} used`];
  return p.credits ? [`credits ${p.credits} used`] : [];
}

const rowsPart = (p: {
  done: number;
  total: number;
  found: number;
  empty: number;
  failed: number;
}) => `rows ${p.done} of ${p.total} done (${p.found} found, ${p.empty} empty, ${p.failed} failed)`;

/**
 * A batch's task: working with its rows, credits and pause while it runs; the poll interval
 * follows the learned job time of its rows (a row rarely finishes sooner) and the time left.
 */
export function batchTaskView(
  s: BatchStatus,
  throttled?: { rows: number; wait?: PermitWaitShown },
  now = Date.now(),
): TaskView {
  if (s.ended) {
    const m = s.summary;
    const skipped = m.skipped ? [`${m.skipped} skipped (credit_budget)`] : [];
    return {
      status: m.state === 'cancelled' ? 'cancelled' : 'completed',
      statusMessage: [`${m.state}: ${rowsPart(m)}`, ...skipped, ...creditsPart(m)].join('; '),
    };
  }
  if (s.published) {
    const p = s.published;
    const done = p.done !== undefined ? [`rows ${p.done} done as last published`] : [];
    return {
      status: 'working',
      statusMessage: [`waiting: ${p.reason}`, ...done].join('; '),
      pollInterval: POLL_MS.waiting,
    };
  }
  const p = s.progress;
  const parts = [
    rowsPart(p),
    ...(p.inFlight ? [`${p.inFlight} in flight`] : []),
    ...creditsPart(p),
    ...(p.skipped ? [`${p.skipped} skipped (credit_budget)`] : []),
  ];
  if (p.paused)
    return {
      status: 'working',
      statusMessage: [`paused (${p.paused.code}): ${p.paused.message}`, ...parts].join('; '),
      pollInterval: POLL_MS.waiting,
    };
  const eta = p.etaSeconds !== undefined ? [`about ${Math.ceil(p.etaSeconds)} s left`] : [];
  // Why it waits (a key's window full until a time, a budget), as the client's status says.
  const waits = (s.waiting ?? []).map((r) => `waiting: ${r.message}`);
  // A wait for its fair share is a batch's normal state while other work shares its keys: its
  // rows go on at its share, so it is polled as a running batch, not as one held back.
  const holding = (s.waiting ?? []).filter((r) => r.kind !== 'fair_share');
  const waitUntil = Math.min(
    ...holding.map((r) => (r.until !== undefined ? r.until - now : Infinity)),
  );
  // Rows held by the throttle: how many, and one's wait (its key, why, until when).
  const held = throttled?.rows
    ? [
        `${throttled.rows} ${throttled.rows === 1 ? 'row' : 'rows'} ${throttled.wait ? throttled.wait.message : 'throttled'}`,
      ]
    : [];
  const job = p.jobMsEstimate ?? POLL_MS.default;
  const left = p.etaSeconds !== undefined ? p.etaSeconds * 1000 : job;
  const permit = throttled?.wait?.until !== undefined ? throttled.wait.until - now : Infinity;
  return {
    status: 'working',
    statusMessage: [`${p.state}: ${parts[0]}`, ...parts.slice(1), ...held, ...waits, ...eta].join(
      '; ',
    ),
    pollInterval: clamp(
      holding.length
        ? Math.min(Math.max(waitUntil, POLL_MS.min), POLL_MS.waiting)
        : Math.min(job, permit, Math.max(left, POLL_MS.min)),
    ),
  };
}

/**
 * The wait a throttled call shows in its current details (workflows/permit-waits.ts words it:
 * `<endpoint>: throttled: poll waits for a permit on key k1: <why>, until about <ISO>`): the
 * message from `throttled:` on, and when the permit is due.
 */
export interface PermitWaitShown {
  message: string;
  /** When the permit is due (epoch ms), when the details say. */
  until?: number;
}

export function permitWaitOf(details: string | undefined): PermitWaitShown {
  const at = details?.indexOf('throttled: ') ?? -1;
  if (!details || at < 0) return { message: 'throttled: a request waits for a permit' };
  const message = details.slice(at).replace(/ \(request [^)]*\)$/, '');
  const until = Date.parse(/until about (\S+?Z)/.exec(message)?.[1] ?? '');
  return Number.isNaN(until) ? { message } : { message, until };
}

/**
 * A running call's task: its phase, or that it waits for the throttle (PcdsState throttled), why,
 * and until when: asked again once the permit is due.
 */
export function runningCallView(o: {
  shownState?: string;
  phase?: string;
  polls?: number;
  noWorker?: string;
  /** The call's current details (the Web UI's), read while it is throttled. */
  details?: string;
  now?: number;
}): TaskView {
  if (o.noWorker)
    return {
      status: 'working',
      statusMessage: `waiting: ${o.noWorker}`,
      pollInterval: POLL_MS.waiting,
    };
  if (o.shownState === 'throttled') {
    const wait = permitWaitOf(o.details);
    return {
      status: 'working',
      statusMessage: wait.message,
      pollInterval:
        wait.until !== undefined ? clamp(wait.until - (o.now ?? Date.now())) : POLL_MS.throttled,
    };
  }
  const polls = o.polls ? ` (${o.polls} polls so far)` : '';
  return {
    status: 'working',
    statusMessage: `${o.phase ?? o.shownState ?? 'running'}${polls}`,
    pollInterval: POLL_MS.default,
  };
}

/**
 * Running work that waits (the client's reasons: no worker takes its tasks, a key's window, a
 * budget, a step retried): every reason in the message; asked again when the first should end.
 */
export function waitingView(reasons: readonly WaitReason[], now = Date.now()): TaskView {
  const until = Math.min(...reasons.map((r) => (r.until !== undefined ? r.until - now : Infinity)));
  return {
    status: 'working',
    statusMessage: reasons.map((r) => `waiting: ${r.message}`).join('; '),
    pollInterval: Number.isFinite(until) ? clamp(until) : POLL_MS.waiting,
  };
}
