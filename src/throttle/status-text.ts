// The operator's view of a key's throttle as text: one block per key, from the state query (its
// windows, then who asks and what they get); and one request's wait for a permit in a line (a
// call's details, a compact row's heartbeat).
import { budgetWords, type PermitWait } from './permits.js';
import type { ThrottleStatus } from './protocol.js';
import { requesterId, batchRequester } from '../contract/tenant.js';
import type { RequesterView, SchedulerSnapshot } from './scheduler.js';

const iso = (t: number) => new Date(t).toISOString().replace(/\.\d+Z$/, 'Z');
const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

export function formatThrottleStatus(status: ThrottleStatus): string {
  const { snapshot: s, settings } = status;
  const window = (name: string, w: typeof s.minute) =>
    `  ${name.padEnd(7)} ${w.used}/${w.limit} used in the last ${seconds(w.spanMs)}` +
    (w.limit < w.configured ? ` (learned limit; configured ${w.configured})` : '');
  const lines = [
    `key ${status.keyId}`,
    window('minute', s.minute),
    window('hour', s.hour),
    `  waiting ${s.waiting} reservation(s) ahead (horizon ${seconds(settings.horizonMs)}, margin ${settings.marginMs} ms)`,
    s.closedUntil
      ? `  closed  until ${iso(s.closedUntil)} (${seconds(s.closedUntil - s.asOf)} left): ${s.closedReason ?? '429'}`
      : s.easingUntil
        ? `  open    easing back in (half the minute limit) until ${iso(s.easingUntil)}`
        : '  open',
    s.breaker.open
      ? `  credits BREAKER OPEN since ${iso(s.breaker.since ?? s.asOf)}: ${s.breaker.reason ?? 'insufficient_credits'}; submits paused, resume with: pcds throttle resume ${status.keyId}`
      : `  credits ok${s.breaker.resetAt ? ` (breaker reset ${iso(s.breaker.resetAt)} by ${s.breaker.resetBy ?? 'operator'})` : ''}`,
    `  granted submit ${s.counts.submit}, poll ${s.counts.poll}, page ${s.counts.page}, usage ${s.counts.usage}; told to wait ${s.counts.retryLater}; refused ${s.counts.refused}; 429s ${s.counts.rateLimited}`,
  ];
  if (status.scheduler) lines.push(...schedulerLines(status.scheduler));
  if (s.recent429s.length > 0) {
    lines.push('  recent 429s:');
    for (const e of s.recent429s) {
      lines.push(
        `    ${iso(e.at)} Retry-After ${e.retryAfterMs !== undefined ? `${e.retryAfterMs} ms` : 'none'}` +
          (e.learned ? `; learned ${e.learned.window} limit ${e.learned.limit}` : ''),
      );
    }
  }
  return lines.join('\n');
}

const pct = (x: number) => `${Math.round(x * 100)}%`;

/** The scheduler's part of a key's block: the reserve, each requester's share and waits, budgets. */
function schedulerLines(sc: SchedulerSnapshot): string[] {
  const lines = [
    sc.mode === 'fair'
      ? `  reserve ${pct(sc.reserve.share)} for interactive and background work: minute ${sc.reserve.minute.used}/${sc.reserve.minute.kept} used, hour ${sc.reserve.hour.used}/${sc.reserve.hour.kept} used (hour reserve follows last hour's demand, ${sc.reserve.hour.floor}-${sc.reserve.hour.ceiling})`
      : '  scheduler first-come (PCDS_THROTTLE_SCHEDULER): no reserve, no shares',
  ];
  if (sc.requesters.length > 0) {
    lines.push('  requesters (share of the last minute / hour, waiting):');
    for (const r of sc.requesters) {
      const weight = r.weight !== undefined && r.weight !== 1 ? ` weight ${r.weight}` : '';
      const waits =
        r.waiting > 0
          ? `, ${r.waiting} waiting (${r.reason ? WAITING_FOR[r.reason] : 'throttled'}${r.budget ? `: ${budgetWords(r.budget)}` : ''})`
          : '';
      lines.push(
        `    ${r.id} (${r.class}, tenant ${r.tenant}${weight}): ${pct(r.minuteShare)} / ${pct(r.hourShare)} (${r.minute} / ${r.hour})${waits}`,
      );
    }
  }
  const budgeted = sc.tenants.filter(
    (t) => t.requestsPerHour !== undefined || t.creditsPerDay !== undefined || t.weight !== 1,
  );
  if (budgeted.length > 0) {
    lines.push("  tenants (this key's part of each budget):");
    for (const t of budgeted) {
      const parts = [
        ...(t.weight !== 1 ? [`weight ${t.weight}`] : []),
        ...(t.requestsPerHour !== undefined
          ? [
              `${Math.max(0, Math.floor(t.requestsPerHour) - t.hour)} of ${Math.floor(t.requestsPerHour)} requests left this hour`,
            ]
          : []),
        ...(t.creditsPerDay !== undefined
          ? [
              `${Math.max(0, t.creditsPerDay - t.creditsToday)} of ${t.creditsPerDay} credits left today`,
            ]
          : []),
      ];
      lines.push(`    ${t.tenant}: ${parts.join(', ')}`);
    }
  }
  return lines;
}

const WAITING_FOR: Record<PermitWait['reason'], string> = {
  minute_window: 'minute window',
  hour_window: 'hour window',
  closed: 'key closed',
  fair_share: 'fair share',
  budget: 'budget',
};

const WHY: Record<PermitWait['reason'], string> = {
  minute_window: "the key's minute window is full",
  hour_window: "the key's hour window is full",
  closed: 'the key is closed after a 429 (Retry-After)',
  fair_share: "other requesters' fair shares of the key come first",
  budget: "the tenant's budget is spent",
};

/** E.g. "poll waits for a permit on key k1: the key's minute window is full, until 12:00:05Z". */
export function describePermitWait(wait: PermitWait): string {
  const until = new Date(wait.until).toISOString().replace(/\.\d+Z$/, 'Z');
  const why =
    wait.reason === 'budget' && wait.budget
      ? `the tenant's budget of ${budgetWords(wait.budget)} is spent`
      : WHY[wait.reason];
  return `${wait.kind} waits for a permit on key ${wait.keyId}: ${why}, until about ${until}`;
}

/** E.g. "40 requests wait for the batch's fair share (other work shares the key)". */
export function batchWaitWords(me: Pick<RequesterView, 'waiting' | 'reason' | 'budget'>): string {
  const what =
    me.reason === 'fair_share'
      ? "the batch's fair share (other work shares the key)"
      : me.reason === 'budget'
        ? `the batch's tenant's budget${me.budget ? ` of ${budgetWords(me.budget)}` : ''}`
        : me.reason
          ? WAITING_FOR[me.reason]
          : 'a permit';
  return `${me.waiting} ${me.waiting === 1 ? 'request waits' : 'requests wait'} for ${what}`;
}

/**
 * What a batch gets on each of its keys, from their throttles: its share of the last hour and,
 * while its requests wait for a full window, that. E.g. "key k1: 33% of the last hour (312
 * requests); 40 requests wait for minute window".
 */
export function batchShareNotes(
  batchId: string,
  readings: readonly { keyId: string; status?: ThrottleStatus }[],
): string[] {
  const id = requesterId(batchRequester(batchId));
  const notes: string[] = [];
  for (const { keyId, status } of readings) {
    const me = status?.scheduler?.requesters.find((r) => r.id === id);
    if (!me) continue;
    // A wait for its fair share or its tenant's budget is a `waiting:` line of its own
    // (client/batch-waits.ts); a full window's is said here.
    const said = me.reason === 'fair_share' || me.reason === 'budget';
    const waits = me.waiting > 0 && !said ? `; ${batchWaitWords(me)}` : '';
    notes.push(`key ${keyId}: ${pct(me.hourShare)} of the last hour (${me.hour} requests)${waits}`);
  }
  return notes;
}
